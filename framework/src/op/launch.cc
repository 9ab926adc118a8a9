// AnnotatedArgsContext: records a node's task plan.
#include "ge/op/launch.h"

#include <cstdlib>
#include <new>
#include <stdexcept>

namespace ge {

AnnotatedArgsContext::AnnotatedArgsContext(const OpSchema& schema, const std::vector<TensorDesc>& inputs,
                                           InstanceLayout input_layout, const std::vector<TensorDesc>& outputs,
                                           InstanceLayout output_layout, const RuntimeAttrs& attrs, int64_t stream_id)
    : schema_(schema),
      input_layout_(std::move(input_layout)),
      output_layout_(std::move(output_layout)),
      attrs_(attrs),
      stream_id_(stream_id) {
  for (const auto& d : inputs) inputs_.push_back(Tensor::MetaOnly(d));
  for (const auto& d : outputs) outputs_.push_back(Tensor::MetaOnly(d));
}

std::size_t AnnotatedArgsContext::MallocWorkspace(std::size_t size) {
  if (size == 0) throw std::invalid_argument("workspace size must be positive, got 0");
  const std::size_t rounded = ((size + 63) / 64) * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  plan_.workspaces.emplace_back(p, [](void* q) { std::free(q); });
  plan_.workspace_sizes.push_back(size);
  return plan_.workspace_sizes.size() - 1;
}

void AnnotatedArgsContext::AddLaunch(KernelLaunch launch) {
  if (launch.stream_id != stream_id_) {
    throw std::invalid_argument("launch stream_id " + std::to_string(launch.stream_id) +
                                " does not match the context's stream " + std::to_string(stream_id_));
  }
  if (launch.kernel_name.empty()) throw std::invalid_argument("kernel_name must not be empty");
  if (!launch.kernel_bin || launch.kernel_bin->empty()) throw std::invalid_argument("kernel_bin must not be empty");
  if (launch.block_dim == 0) throw std::invalid_argument("block_dim must be positive, got 0");
  if (launch.block_dim > kMaxBlockDim) {
    throw std::invalid_argument("block_dim " + std::to_string(launch.block_dim) + " exceeds the maximum " +
                                std::to_string(kMaxBlockDim));
  }
  if (launch.kernel_name.find('\0') != std::string::npos) {
    throw std::invalid_argument("kernel_name must not contain a NUL character");
  }
  for (const auto& a : launch.args) {
    if (a.kind == KernelArgSlot::Kind::kInput && a.value >= inputs_.size()) {
      throw std::invalid_argument("input instance " + std::to_string(a.value) + " out of range");
    }
    if (a.kind == KernelArgSlot::Kind::kOutput && a.value >= outputs_.size()) {
      throw std::invalid_argument("output instance " + std::to_string(a.value) + " out of range");
    }
    if (a.kind == KernelArgSlot::Kind::kWorkspace && a.value >= plan_.workspace_sizes.size()) {
      throw std::invalid_argument("workspace " + std::to_string(a.value) + " was not allocated");
    }
  }
  plan_.launches.push_back(std::move(launch));
}

}  // namespace ge
