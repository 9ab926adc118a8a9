// ge/op/contexts.h: the contexts handed to operator callbacks.
//
// A context is built by the engine for one callback and borrowed by the op for
// the duration of that call only: pointers obtained from it are valid until the
// callback returns, unless stated otherwise. Contexts are not thread-safe; one
// callback uses one context on one thread.
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
#include "ge/op/op_schema.h"
#include "ge/platform/platform_info.h"
#include "ge/runtime/tensor.h"

namespace ge {

// How the flattened instances of a node's inputs or outputs map onto the IR:
// instance i of IR entry k is flattened index Start(k) + i.
class InstanceLayout {
 public:
  InstanceLayout() = default;
  explicit InstanceLayout(std::vector<std::size_t> counts);
  std::size_t IrNum() const noexcept { return counts_.size(); }
  std::size_t Count(std::size_t ir_index) const { return counts_.at(ir_index); }
  std::size_t Start(std::size_t ir_index) const { return starts_.at(ir_index); }
  std::size_t Total() const noexcept { return total_; }
  const std::vector<std::size_t>& Counts() const noexcept { return counts_; }

 private:
  std::vector<std::size_t> counts_;
  std::vector<std::size_t> starts_;
  std::size_t total_ = 0;
};

// infer_meta: input descriptions in, output descriptions out. An absent optional
// input has count 0 in the input layout and no entry in the flattened list.
class InferMetaContext {
 public:
  InferMetaContext(const OpSchema& schema, std::vector<TensorDesc> inputs, InstanceLayout input_layout,
                   const RuntimeAttrs& attrs);

  const OpSchema& GetSchema() const noexcept { return schema_; }
  const RuntimeAttrs& GetAttrs() const noexcept { return attrs_; }
  const InstanceLayout& InputLayout() const noexcept { return input_layout_; }
  std::size_t GetInputNum() const noexcept { return inputs_.size(); }
  // Borrowed, valid for the context's lifetime; null when out of range.
  const TensorDesc* GetInputDesc(std::size_t flat_index) const noexcept;

  // Sets the result: one entry per flattened output instance, with the count of
  // instances per IR output. Throws std::invalid_argument when the layout does
  // not match the IR (required output must have exactly one instance).
  void SetOutputs(std::vector<TensorDesc> outputs, InstanceLayout layout);
  const std::vector<TensorDesc>& Outputs() const noexcept { return outputs_; }
  const InstanceLayout& OutputLayout() const noexcept { return output_layout_; }
  bool HasOutputs() const noexcept { return outputs_set_; }

 private:
  const OpSchema& schema_;
  std::vector<TensorDesc> inputs_;
  InstanceLayout input_layout_;
  const RuntimeAttrs& attrs_;
  std::vector<TensorDesc> outputs_;
  InstanceLayout output_layout_;
  bool outputs_set_ = false;
};

// Eager execution of one node (GE's EagerOpExecutionContext): reads inputs and
// attributes, allocates outputs (or aliases an input) and workspace.
class EagerOpExecutionContext {
 public:
  // `inputs` are borrowed for the context's lifetime. `expected_outputs`, when
  // given, are the descriptions infer_meta produced (used by the engine to check
  // what execute allocated); the output layout comes from them or the IR.
  EagerOpExecutionContext(const OpSchema& schema, std::vector<Tensor*> inputs, InstanceLayout input_layout,
                          const RuntimeAttrs& attrs, InstanceLayout output_layout, void* stream = nullptr);

  const OpSchema& GetSchema() const noexcept { return schema_; }
  const RuntimeAttrs& GetAttrs() const noexcept { return attrs_; }
  const InstanceLayout& InputLayout() const noexcept { return input_layout_; }
  const InstanceLayout& OutputLayout() const noexcept { return output_layout_; }

  std::size_t GetInputNum() const noexcept { return inputs_.size(); }
  // Borrowed input tensor (flattened instance index); null when out of range.
  Tensor* GetInputTensor(std::size_t index) const noexcept;

  std::size_t GetOutputNum() const noexcept { return outputs_.size(); }
  // Null until the output is allocated or aliased.
  Tensor* GetOutputTensor(std::size_t index) noexcept;

  // Allocates output `index` (owned, zero-filled host memory). Returns the
  // output, valid for the context's lifetime. Throws std::out_of_range for a bad
  // index, std::invalid_argument for a negative dim or unsized dtype, and
  // std::logic_error when the output was already set.
  Tensor* MallocOutputTensor(std::size_t index, const StorageShape& shape, DataType dtype);
  // Makes output `output_index` share input `input_index`'s memory and metadata.
  // Same errors as MallocOutputTensor.
  Tensor* MakeOutputRefInput(std::size_t output_index, std::size_t input_index);
  // Scratch memory of `size` bytes (64-byte aligned), valid until the context
  // is destroyed. Throws std::invalid_argument for size 0.
  void* MallocWorkspace(std::size_t size);
  // Same, returning shared ownership of the buffer (the context keeps a
  // reference too; views may keep theirs past the call).
  std::shared_ptr<void> MallocWorkspaceBuffer(std::size_t size);
  void* GetStream() const noexcept { return stream_; }

  // For the engine after the callback: moves the outputs out (unset ones empty).
  std::vector<std::optional<Tensor>> TakeOutputs();

 private:
  const OpSchema& schema_;
  std::vector<Tensor*> inputs_;
  InstanceLayout input_layout_;
  const RuntimeAttrs& attrs_;
  InstanceLayout output_layout_;
  std::vector<std::optional<Tensor>> outputs_;
  std::vector<std::shared_ptr<void>> workspaces_;
  void* stream_;
};

// Compile of one node (GE's OpCompileContext): the node's input and output
// tensors as metadata only (no data; read-only for Python), its attributes,
// the compile options and the target platform. Built by the engine for one
// Compile call and borrowed by the op for that call.
class OpCompileContext {
 public:
  // Loads the target platform; may throw PlatformError (or any std::exception).
  using PlatformLoader = std::function<std::shared_ptr<const PlatformInfos>()>;

  OpCompileContext(const OpSchema& schema, const std::vector<TensorDesc>& inputs, InstanceLayout input_layout,
                   const std::vector<TensorDesc>& outputs, InstanceLayout output_layout, const RuntimeAttrs& attrs,
                   const std::map<std::string, std::string>& options, PlatformLoader platform);

  const OpSchema& GetSchema() const noexcept { return schema_; }
  const RuntimeAttrs& GetAttrs() const noexcept { return attrs_; }
  const InstanceLayout& InputLayout() const noexcept { return input_layout_; }
  const InstanceLayout& OutputLayout() const noexcept { return output_layout_; }
  std::size_t GetInputNum() const noexcept { return inputs_.size(); }
  std::size_t GetOutputNum() const noexcept { return outputs_.size(); }
  // Metadata-only tensors (no data), valid for the context's lifetime; null
  // when out of range.
  Tensor* GetInputTensor(std::size_t index) noexcept { return index < inputs_.size() ? &inputs_[index] : nullptr; }
  Tensor* GetOutputTensor(std::size_t index) noexcept { return index < outputs_.size() ? &outputs_[index] : nullptr; }

  const std::map<std::string, std::string>& Options() const noexcept { return options_; }
  std::optional<std::string> GetOption(const std::string& key) const;

  // The platform, read at most once per context (lazily, on first use). When
  // the read fails, this and every later call throw PlatformError with the
  // same message.
  std::shared_ptr<const PlatformInfos> Platform();

 private:
  const OpSchema& schema_;
  std::vector<Tensor> inputs_;
  InstanceLayout input_layout_;
  std::vector<Tensor> outputs_;
  InstanceLayout output_layout_;
  const RuntimeAttrs& attrs_;
  const std::map<std::string, std::string>& options_;
  PlatformLoader loader_;
  std::shared_ptr<const PlatformInfos> platform_;
  std::optional<std::string> platform_error_;
};

}  // namespace ge
