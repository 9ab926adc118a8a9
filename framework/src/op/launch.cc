// AnnotatedKernelArgs and AnnotatedArgsContext: record a node's task plan.
#include "ge/op/launch.h"

#include <cstdlib>
#include <limits>
#include <new>
#include <stdexcept>

namespace gert {

ge::graphStatus AnnotatedKernelArgs::AppendArg(const InputAddr& addr) {
  slots_.push_back({ge::KernelArgSlot::Kind::kInput, addr.index});
  return ge::GRAPH_SUCCESS;
}

ge::graphStatus AnnotatedKernelArgs::AppendArg(const OutputAddr& addr) {
  slots_.push_back({ge::KernelArgSlot::Kind::kOutput, addr.index});
  return ge::GRAPH_SUCCESS;
}

ge::graphStatus AnnotatedKernelArgs::AppendArg(const WorkspaceAddr& addr) {
  slots_.push_back({ge::KernelArgSlot::Kind::kWorkspace, addr.index});
  return ge::GRAPH_SUCCESS;
}

ge::graphStatus AnnotatedKernelArgs::AppendArg(uint64_t value) {
  slots_.push_back({ge::KernelArgSlot::Kind::kScalar, value});
  return ge::GRAPH_SUCCESS;
}

}  // namespace gert

namespace ge {

AnnotatedArgsContext::AnnotatedArgsContext(const OpSchema& schema, const std::vector<TensorDesc>& inputs,
                                           InstanceLayout input_layout, const std::vector<TensorDesc>& outputs,
                                           InstanceLayout output_layout, const RuntimeAttrs& attrs, uint32_t stream_id)
    : ExtendedKernelContext(schema, attrs, std::move(input_layout), std::move(output_layout)), stream_id_(stream_id) {
  for (const auto& d : inputs) inputs_.push_back(Tensor::MetaOnly(d));
  for (const auto& d : outputs) outputs_.push_back(Tensor::MetaOnly(d));
}

const Tensor* AnnotatedArgsContext::GetDynamicInputTensor(std::size_t ir_index, std::size_t relative_index) const noexcept {
  const auto flat = InputLayout().Flat(ir_index, relative_index);
  return flat ? GetInputTensor(*flat) : nullptr;
}

const Tensor* AnnotatedArgsContext::GetDynamicOutputTensor(std::size_t ir_index,
                                                           std::size_t relative_index) const noexcept {
  const auto flat = OutputLayout().Flat(ir_index, relative_index);
  return flat ? GetOutputTensor(*flat) : nullptr;
}

gert::WorkspaceAddr AnnotatedArgsContext::MallocWorkSpace(std::size_t size) noexcept {
  constexpr gert::WorkspaceAddr kInvalid{std::numeric_limits<uint32_t>::max(), nullptr};
  if (size == 0) {
    Fail("MallocWorkSpace: workspace size must be positive, got 0");
    return kInvalid;
  }
  if (plan_.workspaces.size() >= std::numeric_limits<uint32_t>::max()) {
    Fail("MallocWorkSpace: too many workspaces");
    return kInvalid;
  }
  try {
    const std::size_t rounded = ((size + 63) / 64) * 64;
    if (rounded < size) throw std::bad_alloc();
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) throw std::bad_alloc();
    std::shared_ptr<void> buffer(p, [](void* q) { std::free(q); });  // frees p if this throws
    plan_.workspaces.push_back(std::move(buffer));
    try {
      plan_.workspace_sizes.push_back(size);
    } catch (...) {
      plan_.workspaces.pop_back();
      throw;
    }
  } catch (const std::bad_alloc&) {
    Fail("MallocWorkSpace: cannot allocate " + std::to_string(size) + " bytes");
    return kInvalid;
  }
  const auto index = static_cast<uint32_t>(plan_.workspace_sizes.size() - 1);
  return gert::WorkspaceAddr{index, plan_.workspaces.back().get()};
}

graphStatus AnnotatedArgsContext::AddLaunch(const gert::AnnotatedKernelLaunchInfo& launch_info,
                                            gert::AnnotatedKernelArgs&& args) noexcept {
  try {
    KernelLaunch launch;
    if (launch_info.kernel_name != nullptr) launch.kernel_name = launch_info.kernel_name;
    if (launch_info.kernel_bin != nullptr && launch_info.kernel_bin_size > 0) {
      launch.kernel_bin = std::make_shared<const std::string>(static_cast<const char*>(launch_info.kernel_bin),
                                                              launch_info.kernel_bin_size);
    }
    launch.block_dim = launch_info.block_dim;
    launch.stream_id = launch_info.stream_id;
    launch.args = args.Slots();
    AddLaunch(std::move(launch));
    return GRAPH_SUCCESS;
  } catch (const std::invalid_argument& e) {
    Fail(std::string("AddLaunch: ") + e.what());
    return GRAPH_PARAM_INVALID;
  } catch (const std::exception& e) {
    Fail(std::string("AddLaunch: ") + e.what());
    return GRAPH_FAILED;
  }
}

void AnnotatedArgsContext::AddLaunch(KernelLaunch launch) {
  if (launch.stream_id != static_cast<int64_t>(stream_id_)) {
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
