// InstanceLayout, InferMetaContext and EagerOpExecutionContext.
#include "ge/op/contexts.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace ge {

InstanceLayout::InstanceLayout(std::vector<std::size_t> counts) : counts_(std::move(counts)) {
  starts_.reserve(counts_.size());
  for (std::size_t c : counts_) {
    starts_.push_back(total_);
    total_ += c;
  }
}

InferMetaContext::InferMetaContext(const OpSchema& schema, std::vector<TensorDesc> inputs, InstanceLayout input_layout,
                                   const RuntimeAttrs& attrs)
    : schema_(schema), inputs_(std::move(inputs)), input_layout_(std::move(input_layout)), attrs_(attrs) {}

const TensorDesc* InferMetaContext::GetInputDesc(std::size_t flat_index) const noexcept {
  return flat_index < inputs_.size() ? &inputs_[flat_index] : nullptr;
}

void InferMetaContext::SetOutputs(std::vector<TensorDesc> outputs, InstanceLayout layout) {
  if (layout.IrNum() != schema_.outputs.size()) {
    throw std::invalid_argument("infer_meta of " + schema_.op_type + " produced " + std::to_string(layout.IrNum()) +
                                " outputs, the IR declares " + std::to_string(schema_.outputs.size()));
  }
  for (std::size_t i = 0; i < layout.IrNum(); ++i) {
    if (schema_.outputs[i].kind == IrOutputKind::kRequired && layout.Count(i) != 1) {
      throw std::invalid_argument("infer_meta of " + schema_.op_type + ": required output '" + schema_.outputs[i].name +
                                  "' must have exactly one instance");
    }
  }
  if (layout.Total() != outputs.size()) {
    throw std::invalid_argument("infer_meta of " + schema_.op_type + ": layout and outputs disagree");
  }
  outputs_ = std::move(outputs);
  output_layout_ = std::move(layout);
  outputs_set_ = true;
}

EagerOpExecutionContext::EagerOpExecutionContext(const OpSchema& schema, std::vector<Tensor*> inputs,
                                                 InstanceLayout input_layout, const RuntimeAttrs& attrs,
                                                 InstanceLayout output_layout, void* stream)
    : schema_(schema),
      inputs_(std::move(inputs)),
      input_layout_(std::move(input_layout)),
      attrs_(attrs),
      output_layout_(std::move(output_layout)),
      outputs_(output_layout_.Total()),
      stream_(stream) {}

Tensor* EagerOpExecutionContext::GetInputTensor(std::size_t index) const noexcept {
  return index < inputs_.size() ? inputs_[index] : nullptr;
}

Tensor* EagerOpExecutionContext::GetOutputTensor(std::size_t index) noexcept {
  if (index >= outputs_.size() || !outputs_[index]) return nullptr;
  return &*outputs_[index];
}

namespace {
void CheckOutputIndex(std::size_t index, std::size_t n, const std::optional<Tensor>& slot) {
  if (index >= n) {
    throw std::out_of_range("output index " + std::to_string(index) + " out of range: the node has " +
                            std::to_string(n) + " output(s)");
  }
  if (slot) throw std::logic_error("output " + std::to_string(index) + " was already allocated");
}
}  // namespace

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

Tensor* EagerOpExecutionContext::MakeOutputRefInput(std::size_t output_index, std::size_t input_index) {
  CheckOutputIndex(output_index, outputs_.size(),
                   output_index < outputs_.size() ? outputs_[output_index] : std::optional<Tensor>{});
  if (input_index >= inputs_.size() || inputs_[input_index] == nullptr) {
    throw std::out_of_range("input index " + std::to_string(input_index) + " out of range: the node has " +
                            std::to_string(inputs_.size()) + " input(s)");
  }
  outputs_[output_index] = *inputs_[input_index];  // shares the buffer (owner or borrowed address)
  return &*outputs_[output_index];
}

void* EagerOpExecutionContext::MallocWorkspace(std::size_t size) { return MallocWorkspaceBuffer(size).get(); }

std::shared_ptr<void> EagerOpExecutionContext::MallocWorkspaceBuffer(std::size_t size) {
  if (size == 0) throw std::invalid_argument("workspace size must be positive, got 0");
  constexpr std::size_t kAlign = 64;
  const std::size_t rounded = ((size + kAlign - 1) / kAlign) * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  workspaces_.emplace_back(p, [](void* q) { std::free(q); });
  return workspaces_.back();
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
    : schema_(schema),
      input_layout_(std::move(input_layout)),
      output_layout_(std::move(output_layout)),
      attrs_(attrs),
      options_(options),
      loader_(std::move(platform)) {
  for (const auto& d : inputs) inputs_.push_back(Tensor::MetaOnly(d));
  for (const auto& d : outputs) outputs_.push_back(Tensor::MetaOnly(d));
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
