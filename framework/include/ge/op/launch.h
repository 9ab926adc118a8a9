// ge/op/launch.h: annotated launch args: what declare_launch_args declares,
// the task plan the engine caches, and the context that records it.
//
// A task plan is a list of kernel launches; each launch names a kernel in a
// binary (for the CPU backend: an ELF shared object exporting
//   void kernel(uint32_t block_idx, uint32_t block_dim, const uint64_t* args)
// ), a block_dim, a stream, and argument slots that the engine fills at every
// run: input / output instance addresses, workspace addresses, scalars.
// Declared once per task-plan lifecycle (one graph compilation); later runs
// only patch addresses. Value types; the context is borrowed for one call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ge/op/contexts.h"

namespace ge {

// The largest block_dim a launch may declare (blocks run on the host's cores;
// more only queue).
inline constexpr uint32_t kMaxBlockDim = 65536;

struct KernelArgSlot {
  enum class Kind { kInput, kOutput, kWorkspace, kScalar };
  Kind kind = Kind::kScalar;
  uint64_t value = 0;  // flattened instance index, workspace index, or the scalar
};

struct KernelLaunch {
  std::string kernel_name;
  std::shared_ptr<const std::string> kernel_bin;  // the binary's bytes (shared, immutable)
  uint32_t block_dim = 1;
  int64_t stream_id = 0;
  std::vector<KernelArgSlot> args;
};

struct TaskPlan {
  std::vector<KernelLaunch> launches;  // run in order
  std::vector<std::size_t> workspace_sizes;  // bytes, by workspace index
  // The workspaces themselves (64-byte aligned host memory, by workspace
  // index), allocated when declared so that their addresses are known to
  // declare_launch_args (GE's WorkspaceAddr.addr); every run of the plan reuses
  // them. A plan therefore runs one launch sequence at a time.
  std::vector<std::shared_ptr<void>> workspaces;
};

// declare_launch_args of one node: metadata-only input and output tensors,
// attributes, the stream, and the plan being declared.
class AnnotatedArgsContext {
 public:
  AnnotatedArgsContext(const OpSchema& schema, const std::vector<TensorDesc>& inputs, InstanceLayout input_layout,
                       const std::vector<TensorDesc>& outputs, InstanceLayout output_layout, const RuntimeAttrs& attrs,
                       int64_t stream_id = 0);

  const OpSchema& GetSchema() const noexcept { return schema_; }
  const RuntimeAttrs& GetAttrs() const noexcept { return attrs_; }
  const InstanceLayout& InputLayout() const noexcept { return input_layout_; }
  const InstanceLayout& OutputLayout() const noexcept { return output_layout_; }
  std::size_t GetInputNum() const noexcept { return inputs_.size(); }
  std::size_t GetOutputNum() const noexcept { return outputs_.size(); }
  Tensor* GetInputTensor(std::size_t i) noexcept { return i < inputs_.size() ? &inputs_[i] : nullptr; }
  Tensor* GetOutputTensor(std::size_t i) noexcept { return i < outputs_.size() ? &outputs_[i] : nullptr; }
  int64_t GetStreamId() const noexcept { return stream_id_; }

  // Allocates a workspace of `size` bytes used by every run of the plan;
  // returns its index (its address: WorkspaceAddress(index)). Throws
  // std::invalid_argument for size 0, std::bad_alloc when memory runs out.
  std::size_t MallocWorkspace(std::size_t size);
  // Host address of workspace `index` (owned by the plan); null when out of range.
  void* WorkspaceAddress(std::size_t index) const noexcept {
    return index < plan_.workspaces.size() ? plan_.workspaces[index].get() : nullptr;
  }
  std::size_t WorkspaceCount() const noexcept { return plan_.workspace_sizes.size(); }
  // Appends a launch. Throws std::invalid_argument when its stream is not
  // this context's, its name or binary is empty, block_dim is 0, or a slot
  // refers to a missing input / output / workspace.
  void AddLaunch(KernelLaunch launch);

  const TaskPlan& Plan() const noexcept { return plan_; }
  TaskPlan TakePlan() { return std::move(plan_); }

 private:
  const OpSchema& schema_;
  std::vector<Tensor> inputs_;
  InstanceLayout input_layout_;
  std::vector<Tensor> outputs_;
  InstanceLayout output_layout_;
  const RuntimeAttrs& attrs_;
  int64_t stream_id_;
  TaskPlan plan_;
};

}  // namespace ge
