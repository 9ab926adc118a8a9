// ge/op/kernel_context.h: what every op callback context shares: the node, its IR, attributes and instance layout.
//
// gert::ExtendedKernelContext is the base of every context handed to an op
// callback (GE's class of the same name; its method names are GE's). It
// carries the node's IR (ge::OpSchema), its attributes, how the node's
// flattened input and output instances map onto the IR, the node's name, and
// one addition of ours: an error slot through which a callback that returns a
// failing graphStatus can hand the engine the details (a Python exception
// with its traceback, a message naming the field) that a bare code cannot
// carry (share/docs/embedding.md, "Errors from ops").
//
// Ownership: a context borrows the schema and the attributes it is built
// with; both must outlive it. Pointers a context returns are valid until the
// context is destroyed. Not thread-safe: one callback uses one context on one
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ge/op/attrs.h"
#include "ge/op/op_schema.h"
#include "ge/op/status.h"

namespace gert {

// Where the instances of one IR input or output start in the flattened list,
// and how many there are (GE's AnchorInstanceInfo). An absent optional input
// has 0 instances; a dynamic one any number.
class AnchorInstanceInfo {
 public:
  AnchorInstanceInfo() = default;
  AnchorInstanceInfo(uint32_t instance_start, uint32_t instance_num)
      : instance_start_(instance_start), instance_num_(instance_num) {}
  std::size_t GetInstanceNum() const noexcept { return instance_num_; }
  std::size_t GetInstanceStart() const noexcept { return instance_start_; }

 private:
  uint32_t instance_start_ = 0;
  uint32_t instance_num_ = 0;
};

}  // namespace gert

namespace ge {

// How the flattened instances of a node's inputs or outputs map onto the IR:
// instance i of IR entry k is flattened index Start(k) + i.
//
// Immutable once built, so copies share one block of data: the layout of a
// node is built once and every context made for one of its calls copies it
// without allocating (a copy costs one atomic increment). Thread-safe to copy
// and read from any thread.
class InstanceLayout {
 public:
  InstanceLayout() = default;
  // Throws std::invalid_argument when the total does not fit uint32_t.
  explicit InstanceLayout(std::vector<std::size_t> counts);
  std::size_t IrNum() const noexcept { return Counts().size(); }
  // Both throw std::out_of_range for ir_index >= IrNum().
  std::size_t Count(std::size_t ir_index) const { return Counts().at(ir_index); }
  std::size_t Start(std::size_t ir_index) const { return Infos().at(ir_index).GetInstanceStart(); }
  std::size_t Total() const noexcept { return d_ ? d_->total : 0; }
  const std::vector<std::size_t>& Counts() const noexcept { return d_ ? d_->counts : Empty().counts; }
  // GE's view of IR entry `ir_index`; null when out of range. Valid as long as this layout.
  const gert::AnchorInstanceInfo* Info(std::size_t ir_index) const noexcept {
    return ir_index < Infos().size() ? &Infos()[ir_index] : nullptr;
  }
  // The flattened index of instance `relative` of IR entry `ir_index`;
  // nullopt when either is out of range.
  std::optional<std::size_t> Flat(std::size_t ir_index, std::size_t relative) const noexcept {
    if (ir_index >= Counts().size() || relative >= Counts()[ir_index]) return std::nullopt;
    return Infos()[ir_index].GetInstanceStart() + relative;
  }

 private:
  struct Data {
    std::vector<std::size_t> counts;
    std::vector<gert::AnchorInstanceInfo> infos;
    std::size_t total = 0;
  };
  static const Data& Empty() noexcept;  // what a default-constructed layout reads
  const std::vector<gert::AnchorInstanceInfo>& Infos() const noexcept { return d_ ? d_->infos : Empty().infos; }
  std::shared_ptr<const Data> d_;  // null: no IR entries
};

}  // namespace ge

namespace gert {

class ExtendedKernelContext {
 public:
  // `schema` and `attrs` are borrowed for the context's lifetime.
  ExtendedKernelContext(const ge::OpSchema& schema, const ge::RuntimeAttrs& attrs, ge::InstanceLayout input_layout,
                        ge::InstanceLayout output_layout);
  ExtendedKernelContext(const ExtendedKernelContext&) = delete;
  ExtendedKernelContext& operator=(const ExtendedKernelContext&) = delete;

  // ---- GE's names ----
  // The node's attributes in IR order, defaults applied by the engine. Never
  // null here (GE returns null only for a context without a node).
  const ge::RuntimeAttrs* GetAttrs() const noexcept { return &attrs_; }
  // The op_type; NUL-terminated, valid for the context's lifetime.
  const char* GetNodeType() const noexcept { return schema_.op_type.c_str(); }
  // The graph node's name; "" when the caller did not name it (SetNodeName).
  const char* GetNodeName() const noexcept { return node_name_.c_str(); }
  // Flattened instance counts of the node's inputs and outputs.
  std::size_t GetComputeNodeInputNum() const noexcept { return input_layout_.Total(); }
  std::size_t GetComputeNodeOutputNum() const noexcept { return output_layout_.Total(); }
  // Instances of IR input / output `ir_index`; null when out of range.
  const AnchorInstanceInfo* GetIrInputInstanceInfo(std::size_t ir_index) const noexcept {
    return input_layout_.Info(ir_index);
  }
  const AnchorInstanceInfo* GetIrOutputInstanceInfo(std::size_t ir_index) const noexcept {
    return output_layout_.Info(ir_index);
  }

  // ---- ours ----
  const ge::OpSchema& GetSchema() const noexcept { return schema_; }
  const ge::InstanceLayout& InputLayout() const noexcept { return input_layout_; }
  const ge::InstanceLayout& OutputLayout() const noexcept { return output_layout_; }
  void SetNodeName(std::string name) { node_name_ = std::move(name); }

  // The error slot. A callback that fails may store why before it returns its
  // failing graphStatus; the engine reports that Status (message, plugin,
  // file:line, traceback) instead of the bare code. Storing a success Status
  // clears the slot. The contexts' own methods that follow GE's convention of
  // returning null or a failure code (MallocOutputTensor with a format,
  // MakeOutputRefInput, MallocWorkSpace, AddLaunch with AnnotatedKernelArgs,
  // SetOutputDataType) store their reason here too.
  void SetError(ge::Status status) { error_ = std::move(status); }
  bool HasError() const noexcept { return !error_.ok(); }
  const ge::Status& GetError() const noexcept { return error_; }
  // Moves the stored error out and clears the slot (success when empty).
  ge::Status TakeError() {
    ge::Status out = std::move(error_);
    error_ = ge::Status::Ok();
    return out;
  }

 protected:
  ~ExtendedKernelContext() = default;
  void SetOutputLayout(ge::InstanceLayout layout) { output_layout_ = std::move(layout); }
  // Records `message` in the error slot (a context method's own failure).
  void Fail(std::string message) { error_ = ge::Status::Error(std::move(message)); }

 private:
  const ge::OpSchema& schema_;
  const ge::RuntimeAttrs& attrs_;
  ge::InstanceLayout input_layout_;
  ge::InstanceLayout output_layout_;
  std::string node_name_;
  ge::Status error_;
};

}  // namespace gert
