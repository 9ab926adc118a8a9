// gert::InferShapeContext and gert::InferDataTypeContext.
#include "ge/op/infer_contexts.h"

#include <string>

namespace gert {

InferShapeContext::InferShapeContext(const ge::OpSchema& schema, const std::vector<ge::TensorDesc>& inputs,
                                     ge::InstanceLayout input_layout, ge::InstanceLayout output_layout,
                                     const ge::RuntimeAttrs& attrs)
    : ExtendedKernelContext(schema, attrs, std::move(input_layout), std::move(output_layout)),
      output_shapes_(OutputLayout().Total()) {
  inputs_.reserve(inputs.size());
  for (const auto& d : inputs) inputs_.push_back(ge::Tensor::MetaOnly(d));
}

const ge::Tensor* InferShapeContext::GetDynamicInputTensor(std::size_t ir_index, std::size_t relative_index) const noexcept {
  const auto flat = InputLayout().Flat(ir_index, relative_index);
  return flat ? GetInputTensor(*flat) : nullptr;
}

const ge::Shape* InferShapeContext::GetDynamicInputShape(std::size_t ir_index, std::size_t relative_index) const noexcept {
  const auto flat = InputLayout().Flat(ir_index, relative_index);
  return flat ? GetInputShape(*flat) : nullptr;
}

InferDataTypeContext::InferDataTypeContext(const ge::OpSchema& schema, const std::vector<ge::TensorDesc>& inputs,
                                           ge::InstanceLayout input_layout, ge::InstanceLayout output_layout,
                                           const ge::RuntimeAttrs& attrs)
    : ExtendedKernelContext(schema, attrs, std::move(input_layout), std::move(output_layout)),
      outputs_(OutputLayout().Total(), ge::DT_UNDEFINED) {
  inputs_.reserve(inputs.size());
  for (const auto& d : inputs) inputs_.push_back(d.data_type);
}

ge::DataType InferDataTypeContext::GetDynamicInputDataType(std::size_t ir_index, std::size_t relative_index) const noexcept {
  const auto flat = InputLayout().Flat(ir_index, relative_index);
  return flat ? GetInputDataType(*flat) : ge::DT_UNDEFINED;
}

ge::graphStatus InferDataTypeContext::SetOutputDataType(std::size_t index, ge::DataType datatype) noexcept {
  if (index >= outputs_.size()) {
    try {
      Fail("SetOutputDataType(" + std::to_string(index) + "): the node has " + std::to_string(outputs_.size()) +
           " output(s)");
    } catch (...) {  // std::bad_alloc building the message: the code still says it
    }
    return ge::GRAPH_FAILED;
  }
  outputs_[index] = datatype;
  return ge::GRAPH_SUCCESS;
}

}  // namespace gert
