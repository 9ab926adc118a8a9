// InstanceLayout, the base context, and the infer_meta, eager execution and compile contexts.
#include "ge/op/contexts.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

namespace ge {

InstanceLayout::InstanceLayout(std::vector<std::size_t> counts) {
  auto d = std::make_shared<Data>();
  d->counts = std::move(counts);
  d->infos.reserve(d->counts.size());
  for (std::size_t c : d->counts) {
    if (c > std::numeric_limits<uint32_t>::max() || d->total + c > std::numeric_limits<uint32_t>::max()) {
      throw std::invalid_argument("a node cannot have more than 2^32-1 input or output instances");
    }
    d->infos.emplace_back(static_cast<uint32_t>(d->total), static_cast<uint32_t>(c));
    d->total += c;
  }
  d_ = std::move(d);
}

const InstanceLayout::Data& InstanceLayout::Empty() noexcept {
  static const Data kEmpty;
  return kEmpty;
}

}  // namespace ge

namespace gert {

ExtendedKernelContext::ExtendedKernelContext(const ge::OpSchema& schema, const ge::RuntimeAttrs& attrs,
                                             ge::InstanceLayout input_layout, ge::InstanceLayout output_layout)
    : schema_(schema), attrs_(attrs), input_layout_(std::move(input_layout)), output_layout_(std::move(output_layout)) {}

}  // namespace gert

namespace ge {

namespace {

// 64-byte aligned, zero-filled host memory of at least `size` bytes, freed
// with the last reference. Throws std::invalid_argument for 0, std::bad_alloc.
std::shared_ptr<void> AlignedBuffer(std::size_t size) {
  if (size == 0) throw std::invalid_argument("workspace size must be positive, got 0");
  constexpr std::size_t kAlign = 64;
  if (size > std::numeric_limits<std::size_t>::max() - kAlign) throw std::bad_alloc();
  const std::size_t rounded = ((size + kAlign - 1) / kAlign) * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

void CheckOutputIndex(std::size_t index, std::size_t n, const std::optional<Tensor>& slot) {
  if (index >= n) {
    throw std::out_of_range("output index " + std::to_string(index) + " out of range: the node has " +
                            std::to_string(n) + " output(s)");
  }
  if (slot) throw std::logic_error("output " + std::to_string(index) + " was already allocated");
}

}  // namespace

InferMetaContext::InferMetaContext(const OpSchema& schema, std::vector<TensorDesc> inputs, InstanceLayout input_layout,
                                   const RuntimeAttrs& attrs)
    : ExtendedKernelContext(schema, attrs, std::move(input_layout), InstanceLayout()), inputs_(std::move(inputs)) {}

const TensorDesc* InferMetaContext::GetInputDesc(std::size_t flat_index) const noexcept {
  return flat_index < inputs_.size() ? &inputs_[flat_index] : nullptr;
}

void InferMetaContext::SetOutputs(std::vector<TensorDesc> outputs, InstanceLayout layout) {
  const OpSchema& schema = GetSchema();
  if (layout.IrNum() != schema.outputs.size()) {
    throw std::invalid_argument("infer_meta of " + schema.op_type + " produced " + std::to_string(layout.IrNum()) +
                                " outputs, the IR declares " + std::to_string(schema.outputs.size()));
  }
  for (std::size_t i = 0; i < layout.IrNum(); ++i) {
    if (schema.outputs[i].kind == IrOutputKind::kRequired && layout.Count(i) != 1) {
      throw std::invalid_argument("infer_meta of " + schema.op_type + ": required output '" + schema.outputs[i].name +
                                  "' must have exactly one instance");
    }
  }
  if (layout.Total() != outputs.size()) {
    throw std::invalid_argument("infer_meta of " + schema.op_type + ": layout and outputs disagree");
  }
  outputs_ = std::move(outputs);
  SetOutputLayout(std::move(layout));
  outputs_set_ = true;
}

EagerOpExecutionContext::EagerOpExecutionContext(const OpSchema& schema, std::vector<Tensor*> inputs,
                                                 InstanceLayout input_layout, const RuntimeAttrs& attrs,
                                                 InstanceLayout output_layout, void* stream)
    : ExtendedKernelContext(schema, attrs, std::move(input_layout), std::move(output_layout)),
      inputs_(std::move(inputs)),
      outputs_(OutputLayout().Total()),
      stream_(stream) {}

Tensor* EagerOpExecutionContext::GetInputTensor(std::size_t index) const noexcept {
  return index < inputs_.size() ? inputs_[index] : nullptr;
}

const Tensor* EagerOpExecutionContext::GetDynamicInputTensor(std::size_t ir_index,
                                                             std::size_t relative_index) const noexcept {
  const auto flat = InputLayout().Flat(ir_index, relative_index);
  return flat ? GetInputTensor(*flat) : nullptr;
}

Tensor* EagerOpExecutionContext::GetOutputTensor(std::size_t index) noexcept {
  if (index >= outputs_.size() || !outputs_[index]) return nullptr;
  return &*outputs_[index];
}

const Tensor* EagerOpExecutionContext::GetOutputTensor(std::size_t index) const noexcept {
  if (index >= outputs_.size() || !outputs_[index]) return nullptr;
  return &*outputs_[index];
}

Tensor* EagerOpExecutionContext::MallocOutputTensor(std::size_t index, const StorageShape& shape, DataType dtype) {
  CheckOutputIndex(index, outputs_.size(), index < outputs_.size() ? outputs_[index] : std::optional<Tensor>{});
  for (std::size_t i = 0; i < shape.GetStorageShape().GetDimNum(); ++i) {
    if (shape.GetStorageShape().GetDim(i) < 0) {
      throw std::invalid_argument("output shape " + shape.GetStorageShape().ToString() + " has a negative dim");
    }
  }
  TensorDesc desc;
  desc.shape = shape;
  desc.data_type = dtype;
  outputs_[index] = Tensor::Allocate(desc);
  return &*outputs_[index];
}

Tensor* EagerOpExecutionContext::MallocOutputTensor(std::size_t index, const StorageShape& shape,
                                                    const StorageFormat& format, DataType dtype) noexcept {
  try {
    Tensor* t = MallocOutputTensor(index, shape, dtype);
    t->MutableDesc().format = format;
    return t;
  } catch (const std::bad_alloc&) {
    Fail("MallocOutputTensor(" + std::to_string(index) + "): out of memory for shape " +
         shape.GetStorageShape().ToString());
  } catch (const std::exception& e) {
    Fail("MallocOutputTensor(" + std::to_string(index) + "): " + e.what());
  }
  return nullptr;
}

Tensor* EagerOpExecutionContext::MakeOutputRefInput(std::size_t output_index, std::size_t input_index) noexcept {
  try {
    CheckOutputIndex(output_index, outputs_.size(),
                     output_index < outputs_.size() ? outputs_[output_index] : std::optional<Tensor>{});
    if (input_index >= inputs_.size() || inputs_[input_index] == nullptr) {
      throw std::out_of_range("input index " + std::to_string(input_index) + " out of range: the node has " +
                              std::to_string(inputs_.size()) + " input(s)");
    }
    outputs_[output_index] = *inputs_[input_index];  // shares the buffer (owner or borrowed address)
    return &*outputs_[output_index];
  } catch (const std::exception& e) {
    Fail("MakeOutputRefInput(" + std::to_string(output_index) + ", " + std::to_string(input_index) + "): " + e.what());
  }
  return nullptr;
}

void* EagerOpExecutionContext::MallocWorkSpace(std::size_t size) noexcept {
  try {
    return MallocWorkspaceBuffer(size).get();
  } catch (const std::bad_alloc&) {
    Fail("MallocWorkSpace: cannot allocate " + std::to_string(size) + " bytes");
  } catch (const std::exception& e) {
    Fail(std::string("MallocWorkSpace: ") + e.what());
  }
  return nullptr;
}

std::shared_ptr<void> EagerOpExecutionContext::MallocWorkspaceBuffer(std::size_t size) {
  workspaces_.push_back(AlignedBuffer(size));
  return workspaces_.back();
}

Tensor* EagerOpExecutionContext::SetOutputTensor(std::size_t index, Tensor tensor) {
  CheckOutputIndex(index, outputs_.size(), index < outputs_.size() ? outputs_[index] : std::optional<Tensor>{});
  outputs_[index] = std::move(tensor);
  return &*outputs_[index];
}

std::vector<std::optional<Tensor>> EagerOpExecutionContext::TakeOutputs() {
  std::vector<std::optional<Tensor>> out;
  out.swap(outputs_);
  return out;
}

OpCompileContext::OpCompileContext(const OpSchema& schema, const std::vector<TensorDesc>& inputs,
                                   InstanceLayout input_layout, const std::vector<TensorDesc>& outputs,
                                   InstanceLayout output_layout, const RuntimeAttrs& attrs,
                                   const std::map<std::string, std::string>& options, PlatformLoader platform)
    : ExtendedKernelContext(schema, attrs, std::move(input_layout), std::move(output_layout)),
      options_(options),
      loader_(std::move(platform)) {
  for (const auto& d : inputs) inputs_.push_back(Tensor::MetaOnly(d));
  for (const auto& d : outputs) outputs_.push_back(Tensor::MetaOnly(d));
}

const Tensor* OpCompileContext::GetDynamicInputTensor(std::size_t ir_index, std::size_t relative_index) const noexcept {
  const auto flat = InputLayout().Flat(ir_index, relative_index);
  return flat ? GetInputTensor(*flat) : nullptr;
}

const Tensor* OpCompileContext::GetDynamicOutputTensor(std::size_t ir_index, std::size_t relative_index) const noexcept {
  const auto flat = OutputLayout().Flat(ir_index, relative_index);
  return flat ? GetOutputTensor(*flat) : nullptr;
}

graphStatus OpCompileContext::GetOption(const AscendString& option_key, AscendString& option) const {
  auto it = options_.find(option_key.ToStdString());
  if (it == options_.end()) {
    option = AscendString();
    return GRAPH_FAILED;
  }
  option = AscendString(it->second);
  return GRAPH_SUCCESS;
}

std::optional<std::string> OpCompileContext::GetOption(const std::string& key) const {
  auto it = options_.find(key);
  if (it == options_.end()) return std::nullopt;
  return it->second;
}

std::shared_ptr<const PlatformInfos> OpCompileContext::Platform() {
  if (platform_) return platform_;
  if (platform_error_) throw PlatformError(*platform_error_);
  try {
    if (!loader_) throw PlatformError("no platform was given to the compilation");
    platform_ = loader_();
    if (!platform_) throw PlatformError("the platform loader returned nothing");
  } catch (const std::exception& e) {
    platform_error_ = e.what();
    throw PlatformError(*platform_error_);
  }
  return platform_;
}

}  // namespace ge
