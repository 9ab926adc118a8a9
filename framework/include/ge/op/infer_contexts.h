// ge/op/infer_contexts.h: gert::InferShapeContext and gert::InferDataTypeContext, GE's two-step output inference.
//
// An op that implements GE's ShapeInferOp, or whose IMPL_OP registration
// carries InferShape / InferDataType functions, gets its output shapes from
// InferShape and its output dtypes from InferDataType; the engine runs the two
// in that order and joins the results into output descriptions (formats ND).
// The output layout comes from the IR (one instance per required output).
// Both contexts are built by the engine for one call and borrowed by the
// callee for that call; pointers they return are valid until the context is
// destroyed. Not thread-safe. Method names and results are GE's
// (exe_graph/runtime/infer_shape_context.h, infer_datatype_context.h).
#pragma once

#include <cstddef>
#include <vector>

#include "ge/op/kernel_context.h"
#include "ge/runtime/tensor.h"
#include "graph/error_codes.h"

namespace gert {

class InferShapeContext : public ExtendedKernelContext {
 public:
  // Input descriptions by flattened instance (metadata only: no data); every
  // output shape starts empty (rank 0) for the callee to fill.
  InferShapeContext(const ge::OpSchema& schema, const std::vector<ge::TensorDesc>& inputs,
                    ge::InstanceLayout input_layout, ge::InstanceLayout output_layout, const ge::RuntimeAttrs& attrs);

  // The origin shape of flattened input `index`; null when out of range.
  const ge::Shape* GetInputShape(std::size_t index) const noexcept {
    return index < inputs_.size() ? &inputs_[index].GetOriginShape() : nullptr;
  }
  // The input as a metadata-only tensor (GetAddr() is null); null when out of range.
  const ge::Tensor* GetInputTensor(std::size_t index) const noexcept {
    return index < inputs_.size() ? &inputs_[index] : nullptr;
  }
  // Instance 0 of a required / optional IR input, instance `relative_index`
  // of a dynamic one; null when absent.
  const ge::Tensor* GetRequiredInputTensor(std::size_t ir_index) const noexcept { return GetDynamicInputTensor(ir_index, 0); }
  const ge::Tensor* GetOptionalInputTensor(std::size_t ir_index) const noexcept { return GetDynamicInputTensor(ir_index, 0); }
  const ge::Tensor* GetDynamicInputTensor(std::size_t ir_index, std::size_t relative_index) const noexcept;
  const ge::Shape* GetRequiredInputShape(std::size_t ir_index) const noexcept { return GetDynamicInputShape(ir_index, 0); }
  const ge::Shape* GetOptionalInputShape(std::size_t ir_index) const noexcept { return GetDynamicInputShape(ir_index, 0); }
  const ge::Shape* GetDynamicInputShape(std::size_t ir_index, std::size_t relative_index) const noexcept;
  // The shape of flattened output `index`, for the callee to set; null when out of range.
  ge::Shape* GetOutputShape(std::size_t index) noexcept {
    return index < output_shapes_.size() ? &output_shapes_[index] : nullptr;
  }

  // Ours: the output shapes after the call, by flattened output instance.
  const std::vector<ge::Shape>& OutputShapes() const noexcept { return output_shapes_; }

 private:
  std::vector<ge::Tensor> inputs_;
  std::vector<ge::Shape> output_shapes_;
};

class InferDataTypeContext : public ExtendedKernelContext {
 public:
  // Input dtypes by flattened instance; every output dtype starts DT_UNDEFINED.
  InferDataTypeContext(const ge::OpSchema& schema, const std::vector<ge::TensorDesc>& inputs,
                       ge::InstanceLayout input_layout, ge::InstanceLayout output_layout, const ge::RuntimeAttrs& attrs);

  // DT_UNDEFINED when out of range or absent.
  ge::DataType GetInputDataType(std::size_t index) const noexcept {
    return index < inputs_.size() ? inputs_[index] : ge::DT_UNDEFINED;
  }
  ge::DataType GetRequiredInputDataType(std::size_t ir_index) const noexcept { return GetDynamicInputDataType(ir_index, 0); }
  ge::DataType GetOptionalInputDataType(std::size_t ir_index) const noexcept { return GetDynamicInputDataType(ir_index, 0); }
  ge::DataType GetDynamicInputDataType(std::size_t ir_index, std::size_t relative_index) const noexcept;
  ge::DataType GetOutputDataType(std::size_t index) const noexcept {
    return index < outputs_.size() ? outputs_[index] : ge::DT_UNDEFINED;
  }
  // Sets the dtype of flattened output `index`. GRAPH_FAILED (reason in the
  // error slot) when out of range.
  ge::graphStatus SetOutputDataType(std::size_t index, ge::DataType datatype) noexcept;

  // Ours: the output dtypes after the call, by flattened output instance.
  const std::vector<ge::DataType>& OutputDataTypes() const noexcept { return outputs_; }

 private:
  std::vector<ge::DataType> inputs_;
  std::vector<ge::DataType> outputs_;
};

}  // namespace gert
