// ge/op/contexts.h: the contexts of infer_meta, eager execution and compile.
//
// A context is built by the engine for one callback and borrowed by the op for
// the duration of that call only: pointers obtained from it are valid until the
// context is destroyed, unless stated otherwise. Contexts are not thread-safe;
// one callback uses one context on one thread. Every context derives from
// gert::ExtendedKernelContext (ge/op/kernel_context.h): attributes, node
// name, instance layout and the error slot.
//
// GE code names these classes gert::EagerOpExecutionContext and
// gert::OpCompileContext (exe_graph/runtime/*.h); they are these classes.
// Methods under "GE's names" have GE's names, signatures and conventions
// (null or a failure code on error, the reason in the error slot); methods
// under "ours" are this project's additions and throw on error as documented.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ge/op/attrs.h"
#include "ge/op/kernel_context.h"
#include "ge/op/op_schema.h"
#include "ge/platform/platform_info.h"
#include "ge/runtime/tensor.h"
#include "graph/ascend_string.h"
#include "graph/error_codes.h"

namespace ge {

// infer_meta (our addition, what Python's infer_meta computes in one call):
// input descriptions in, output descriptions and dynamic output instance
// counts out. An absent optional input has count 0 in the input layout and no
// entry in the flattened list. The output layout is empty until SetOutputs.
class InferMetaContext : public gert::ExtendedKernelContext {
 public:
  InferMetaContext(const OpSchema& schema, std::vector<TensorDesc> inputs, InstanceLayout input_layout,
                   const RuntimeAttrs& attrs);

  std::size_t GetInputNum() const noexcept { return inputs_.size(); }
  // Borrowed, valid for the context's lifetime; null when out of range.
  const TensorDesc* GetInputDesc(std::size_t flat_index) const noexcept;

  // Sets the result: one entry per flattened output instance, with the count of
  // instances per IR output. Throws std::invalid_argument when the layout does
  // not match the IR (required output must have exactly one instance).
  void SetOutputs(std::vector<TensorDesc> outputs, InstanceLayout layout);
  const std::vector<TensorDesc>& Outputs() const noexcept { return outputs_; }
  bool HasOutputs() const noexcept { return outputs_set_; }

 private:
  std::vector<TensorDesc> inputs_;
  std::vector<TensorDesc> outputs_;
  bool outputs_set_ = false;
};

// Eager execution of one node (GE's EagerOpExecutionContext): reads inputs and
// attributes, allocates outputs (or aliases an input) and workspace.
class EagerOpExecutionContext : public gert::ExtendedKernelContext {
 public:
  // `inputs` are borrowed for the context's lifetime; `output_layout` comes
  // from infer_meta or the IR. `stream` is passed through to GetStream().
  EagerOpExecutionContext(const OpSchema& schema, std::vector<Tensor*> inputs, InstanceLayout input_layout,
                          const RuntimeAttrs& attrs, InstanceLayout output_layout, void* stream = nullptr);

  // ---- GE's names ----
  // Input tensor by flattened instance index; null when out of range. The
  // pointer is non-const for this project's Python views; GE code assigns it
  // to `const gert::Tensor*`.
  Tensor* GetInputTensor(std::size_t index) const noexcept;
  // Instance 0 of a required / optional IR input, instance `relative_index`
  // of a dynamic one; null when the IR index or instance does not exist (an
  // absent optional input).
  const Tensor* GetRequiredInputTensor(std::size_t ir_index) const noexcept { return GetDynamicInputTensor(ir_index, 0); }
  const Tensor* GetOptionalInputTensor(std::size_t ir_index) const noexcept { return GetDynamicInputTensor(ir_index, 0); }
  const Tensor* GetDynamicInputTensor(std::size_t ir_index, std::size_t relative_index) const noexcept;
  // Null until the output is allocated or aliased, and when out of range.
  Tensor* GetOutputTensor(std::size_t index) noexcept;
  const Tensor* GetOutputTensor(std::size_t index) const noexcept;
  // Allocates output `index` (owned, zero-filled host memory) with the given
  // shapes, formats and dtype. Returns the output, valid for the context's
  // lifetime, or null (the reason in the error slot) for a bad index, an
  // output already set, a negative dim, an unsized dtype or no memory.
  Tensor* MallocOutputTensor(std::size_t index, const StorageShape& shape, const StorageFormat& format,
                             DataType dtype) noexcept;
  // Makes output `output_index` share input `input_index`'s memory and
  // metadata. Null on a bad index or an output already set (reason in the
  // error slot).
  Tensor* MakeOutputRefInput(std::size_t output_index, std::size_t input_index) noexcept;
  // Scratch memory of `size` bytes (64-byte aligned, zero-filled), valid until
  // the context is destroyed. Null for size 0 or no memory (reason in the
  // error slot).
  void* MallocWorkSpace(std::size_t size) noexcept;
  // The stream the engine runs the node on (null for the CPU backend).
  void* GetStream() const noexcept { return stream_; }

  // ---- ours ----
  std::size_t GetInputNum() const noexcept { return inputs_.size(); }
  std::size_t GetOutputNum() const noexcept { return outputs_.size(); }
  // MallocOutputTensor with ND formats that throws instead: std::out_of_range
  // for a bad index, std::invalid_argument for a negative dim or unsized
  // dtype, std::logic_error when the output was already set, std::bad_alloc.
  Tensor* MallocOutputTensor(std::size_t index, const StorageShape& shape, DataType dtype);
  // Scratch memory with shared ownership of the buffer (the context keeps a
  // reference too; views may keep theirs past the call). Throws
  // std::invalid_argument for size 0, std::bad_alloc.
  std::shared_ptr<void> MallocWorkspaceBuffer(std::size_t size);
  // Sets output `index` to `tensor` (its memory and ownership as they are):
  // how a process-isolated plugin's proxy hands over the outputs its worker
  // made. Throws std::out_of_range for a bad index, std::logic_error when the
  // output was already set.
  Tensor* SetOutputTensor(std::size_t index, Tensor tensor);
  // For the engine after the callback: moves the outputs out (unset ones empty).
  std::vector<std::optional<Tensor>> TakeOutputs();

 private:
  std::vector<Tensor*> inputs_;
  std::vector<std::optional<Tensor>> outputs_;
  std::vector<std::shared_ptr<void>> workspaces_;
  void* stream_;
};

// Compile of one node (GE's OpCompileContext): the node's input and output
// tensors as metadata only (no data; read-only for Python), its attributes,
// the compile options and the target platform. Built by the engine for one
// Compile call and borrowed by the op for that call.
class OpCompileContext : public gert::ExtendedKernelContext {
 public:
  // Loads the target platform; may throw PlatformError (or any std::exception).
  using PlatformLoader = std::function<std::shared_ptr<const PlatformInfos>()>;

  // `options` is borrowed for the context's lifetime.
  OpCompileContext(const OpSchema& schema, const std::vector<TensorDesc>& inputs, InstanceLayout input_layout,
                   const std::vector<TensorDesc>& outputs, InstanceLayout output_layout, const RuntimeAttrs& attrs,
                   const std::map<std::string, std::string>& options, PlatformLoader platform);

  // ---- GE's names ----
  // Metadata-only tensors (GetAddr() is null); null when out of range.
  const Tensor* GetInputTensor(std::size_t index) const noexcept {
    return index < inputs_.size() ? &inputs_[index] : nullptr;
  }
  const Tensor* GetRequiredInputTensor(std::size_t ir_index) const noexcept { return GetDynamicInputTensor(ir_index, 0); }
  const Tensor* GetOptionalInputTensor(std::size_t ir_index) const noexcept { return GetDynamicInputTensor(ir_index, 0); }
  const Tensor* GetDynamicInputTensor(std::size_t ir_index, std::size_t relative_index) const noexcept;
  const Tensor* GetOutputTensor(std::size_t index) const noexcept {
    return index < outputs_.size() ? &outputs_[index] : nullptr;
  }
  const Tensor* GetRequiredOutputTensor(std::size_t ir_index) const noexcept { return GetDynamicOutputTensor(ir_index, 0); }
  const Tensor* GetDynamicOutputTensor(std::size_t ir_index, std::size_t relative_index) const noexcept;
  // The compile option `option_key` into `option`: GRAPH_SUCCESS when set,
  // GRAPH_FAILED (and `option` empty) when not.
  graphStatus GetOption(const AscendString& option_key, AscendString& option) const;

  // ---- ours ----
  std::size_t GetInputNum() const noexcept { return inputs_.size(); }
  std::size_t GetOutputNum() const noexcept { return outputs_.size(); }
  // Mutable access for this project's Python views (which stay read-only).
  Tensor* GetInputTensor(std::size_t index) noexcept { return index < inputs_.size() ? &inputs_[index] : nullptr; }
  Tensor* GetOutputTensor(std::size_t index) noexcept { return index < outputs_.size() ? &outputs_[index] : nullptr; }
  const std::map<std::string, std::string>& Options() const noexcept { return options_; }
  std::optional<std::string> GetOption(const std::string& key) const;
  // The platform, read at most once per context (lazily, on first use). When
  // the read fails, this and every later call throw PlatformError with the
  // same message.
  std::shared_ptr<const PlatformInfos> Platform();

 private:
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  const std::map<std::string, std::string>& options_;
  PlatformLoader loader_;
  std::shared_ptr<const PlatformInfos> platform_;
  std::optional<std::string> platform_error_;
};

}  // namespace ge
