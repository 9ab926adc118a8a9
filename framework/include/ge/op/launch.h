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
//
// GE code declares launches with gert::AnnotatedKernelLaunchInfo and
// gert::AnnotatedKernelArgs (GE's names, declared here) and calls
// gert::AnnotatedArgsContext::AddLaunch, which is this file's
// ge::AnnotatedArgsContext (exe_graph/runtime/annotated_args_context.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ge/op/contexts.h"
#include "ge/op/kernel_context.h"
#include "graph/error_codes.h"

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

}  // namespace ge

namespace gert {

// An argument slot holding the address of flattened input instance `index`
// (GE's InputAddr). `addr` is informational here: the engine patches the
// run's address into the slot at every run.
struct InputAddr {
  uint32_t index;
  const void* addr;
};
// The same for flattened output instance `index`.
struct OutputAddr {
  uint32_t index;
  const void* addr;
};
// The same for workspace `index`, as AnnotatedArgsContext::MallocWorkSpace returned it.
struct WorkspaceAddr {
  uint32_t index;
  const void* addr;
};

// One kernel launch (GE's AnnotatedKernelLaunchInfo). The pointers are
// borrowed for the AddLaunch call, which copies what they point to.
struct AnnotatedKernelLaunchInfo {
  const char* kernel_name = nullptr;  // NUL-terminated entry point name
  const void* kernel_bin = nullptr;   // the kernel binary (for the CPU backend an ELF shared object)
  size_t kernel_bin_size = 0U;        // bytes
  uint32_t block_dim = 0U;            // 1 .. ge::kMaxBlockDim
  uint32_t stream_id = 0U;            // must be the context's GetStreamId()
};

// The argument slots of one launch, in order (GE's AnnotatedKernelArgs): each
// slot is one 64-bit word holding an address or a scalar. A value type; not
// thread-safe for concurrent mutation.
class AnnotatedKernelArgs {
 public:
  AnnotatedKernelArgs() = default;
  // Appends every argument in order (each must be accepted by AppendArg).
  template <typename Arg, typename... Args,
            typename = std::enable_if_t<!std::is_same<std::decay_t<Arg>, AnnotatedKernelArgs>::value>>
  explicit AnnotatedKernelArgs(Arg&& arg, Args&&... args) {
    AppendArg(std::forward<Arg>(arg));
    (AppendArg(std::forward<Args>(args)), ...);
  }

  // Each appends one slot and returns GRAPH_SUCCESS; slot indices are checked
  // by AnnotatedArgsContext::AddLaunch. Throws std::bad_alloc only.
  ge::graphStatus AppendArg(const InputAddr& addr);
  ge::graphStatus AppendArg(const OutputAddr& addr);
  ge::graphStatus AppendArg(const WorkspaceAddr& addr);
  ge::graphStatus AppendArg(uint64_t value);

  // Ours: the slots appended so far.
  const std::vector<ge::KernelArgSlot>& Slots() const noexcept { return slots_; }

 private:
  std::vector<ge::KernelArgSlot> slots_;
};

}  // namespace gert

namespace ge {

// declare_launch_args of one node (GE's AnnotatedArgsContext): metadata-only
// input and output tensors, attributes, the stream, and the plan being
// declared. Methods under "GE's names" follow GE (a failure code or an
// invalid result, the reason in the error slot); "ours" throw as documented.
class AnnotatedArgsContext : public gert::ExtendedKernelContext {
 public:
  AnnotatedArgsContext(const OpSchema& schema, const std::vector<TensorDesc>& inputs, InstanceLayout input_layout,
                       const std::vector<TensorDesc>& outputs, InstanceLayout output_layout, const RuntimeAttrs& attrs,
                       uint32_t stream_id = 0);

  // ---- GE's names ----
  // Metadata-only tensors (GetAddr() is null); null when out of range.
  const Tensor* GetInputTensor(std::size_t i) const noexcept { return i < inputs_.size() ? &inputs_[i] : nullptr; }
  const Tensor* GetOutputTensor(std::size_t i) const noexcept { return i < outputs_.size() ? &outputs_[i] : nullptr; }
  const Tensor* GetRequiredInputTensor(std::size_t ir_index) const noexcept { return GetDynamicInputTensor(ir_index, 0); }
  const Tensor* GetOptionalInputTensor(std::size_t ir_index) const noexcept { return GetDynamicInputTensor(ir_index, 0); }
  const Tensor* GetDynamicInputTensor(std::size_t ir_index, std::size_t relative_index) const noexcept;
  const Tensor* GetRequiredOutputTensor(std::size_t ir_index) const noexcept { return GetDynamicOutputTensor(ir_index, 0); }
  const Tensor* GetDynamicOutputTensor(std::size_t ir_index, std::size_t relative_index) const noexcept;
  uint32_t GetStreamId() const noexcept { return stream_id_; }
  // Allocates a workspace of `size` bytes (64-byte aligned host memory, owned
  // by the plan) used by every run of the plan; returns its index and
  // address. For size 0 or no memory: {UINT32_MAX, nullptr} and the reason in
  // the error slot.
  gert::WorkspaceAddr MallocWorkSpace(std::size_t size) noexcept;
  // Appends a launch (copying the kernel name and binary). GRAPH_PARAM_INVALID
  // (the reason in the error slot) when the stream is not this context's, the
  // name or binary is empty, block_dim is 0 or above kMaxBlockDim, or a slot
  // refers to a missing input / output / workspace; GRAPH_FAILED when memory
  // runs out.
  graphStatus AddLaunch(const gert::AnnotatedKernelLaunchInfo& launch_info, gert::AnnotatedKernelArgs&& args) noexcept;

  // ---- ours ----
  std::size_t GetInputNum() const noexcept { return inputs_.size(); }
  std::size_t GetOutputNum() const noexcept { return outputs_.size(); }
  // Mutable access for this project's Python views (which stay read-only).
  Tensor* GetInputTensor(std::size_t i) noexcept { return i < inputs_.size() ? &inputs_[i] : nullptr; }
  Tensor* GetOutputTensor(std::size_t i) noexcept { return i < outputs_.size() ? &outputs_[i] : nullptr; }
  // Host address of workspace `index` (owned by the plan); null when out of range.
  void* WorkspaceAddress(std::size_t index) const noexcept {
    return index < plan_.workspaces.size() ? plan_.workspaces[index].get() : nullptr;
  }
  std::size_t WorkspaceCount() const noexcept { return plan_.workspace_sizes.size(); }
  // AddLaunch that throws instead: std::invalid_argument for the cases above.
  void AddLaunch(KernelLaunch launch);

  const TaskPlan& Plan() const noexcept { return plan_; }
  TaskPlan TakePlan() { return std::move(plan_); }

 private:
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  uint32_t stream_id_;
  TaskPlan plan_;
};

}  // namespace ge
