// ge/op/custom_op.h: this project's additions to GE's custom op interfaces, and CustomOpCast.
//
// GE's interfaces (BaseCustomOp, EagerExecuteOp, CompilableOp,
// AnnotatedArgsOp, ShapeInferOp, PortableOp) are declared by graph/custom_op.h,
// included here. This header adds what GE code need not implement:
// - CapabilityReportingOp: an op that reports its capabilities as a mask
//   and carries its IR. A Python adapter inherits every interface and reports
//   only what the plugin's class defines; the mask decides for it.
// - InferMetaOp: one call computing output descriptions and the instance
//   counts of dynamic outputs (what Python's infer_meta does).
// - CustomOpCast<T>: the capability query engines use. For an op with
//   CapabilityReportingOp, the mask decides (and then the C++ type); for any
//   other op (a class written for GE), the interfaces it derives from decide.
// C++ ops and Python adapters are peers: the engine never knows which it has.
//
// Thread-safety: an op object may be called from several threads only if its
// implementation says so; Python adapters serialize on the interpreter lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ge/op/contexts.h"
#include "ge/op/infer_contexts.h"
#include "ge/op/launch.h"
#include "ge/op/op_schema.h"
#include "ge/op/status.h"
#include "graph/custom_op.h"

namespace ge {

enum class CustomOpCapability : uint32_t {
  kNone = 0,
  kEagerExecute = 1U << 0,   // EagerExecuteOp::Execute   (Python: "eager_execute")
  kCompilable = 1U << 1,     // CompilableOp::Compile     (Python: "compilable")
  kAnnotatedArgs = 1U << 2,  // AnnotatedArgsOp           (Python: "annotated_args")
  kInferMeta = 1U << 3,      // InferMetaOp, ShapeInferOp, or IMPL_OP infer functions (Python: the prototype)
};

constexpr uint32_t operator|(CustomOpCapability a, CustomOpCapability b) noexcept {
  return static_cast<uint32_t>(a) | static_cast<uint32_t>(b);
}
constexpr uint32_t operator|(uint32_t a, CustomOpCapability b) noexcept { return a | static_cast<uint32_t>(b); }
constexpr bool HasCapability(uint32_t mask, CustomOpCapability c) noexcept {
  return (mask & static_cast<uint32_t>(c)) != 0;
}
// "eager_execute,infer_meta" for reports.
std::string CapabilityString(uint32_t mask);
// The same as names, in that order: {"eager_execute", "infer_meta"}.
std::vector<std::string> CapabilityNames(uint32_t mask);

// An op that reports what it can do (our addition; GE classes need not
// implement it).
class CapabilityReportingOp : virtual public BaseCustomOp {
 public:
  ~CapabilityReportingOp() override = default;
  // The CustomOpCapability bits of the interfaces this object really serves.
  virtual uint32_t GetCapabilities() const noexcept = 0;
  // The op's canonical IR; valid as long as the object.
  virtual const OpSchema& GetSchema() const noexcept = 0;
};

// infer_meta in one call (our addition): output descriptions and dynamic
// output instance counts from input descriptions and attributes, stored with
// ctx->SetOutputs. The engine prefers it over ShapeInferOp when an op has both.
class InferMetaOp : virtual public BaseCustomOp {
 public:
  ~InferMetaOp() override = default;
  virtual graphStatus InferMeta(InferMetaContext* ctx) = 0;
};

// The capability bit each interface stands for; kNone for an interface
// without one (PortableOp), which CustomOpCast answers by type alone.
template <typename T>
struct CustomOpCapabilityOf {
  static constexpr CustomOpCapability value = CustomOpCapability::kNone;
};
template <>
struct CustomOpCapabilityOf<EagerExecuteOp> {
  static constexpr CustomOpCapability value = CustomOpCapability::kEagerExecute;
};
template <>
struct CustomOpCapabilityOf<CompilableOp> {
  static constexpr CustomOpCapability value = CustomOpCapability::kCompilable;
};
template <>
struct CustomOpCapabilityOf<AnnotatedArgsOp> {
  static constexpr CustomOpCapability value = CustomOpCapability::kAnnotatedArgs;
};
template <>
struct CustomOpCapabilityOf<InferMetaOp> {
  static constexpr CustomOpCapability value = CustomOpCapability::kInferMeta;
};
template <>
struct CustomOpCapabilityOf<ShapeInferOp> {
  static constexpr CustomOpCapability value = CustomOpCapability::kInferMeta;
};

// Returns `op` as T when it has T's capability, else null. Borrowed: valid as
// long as `op` is. Never throws.
template <typename T>
T* CustomOpCast(BaseCustomOp* op) noexcept {
  if (op == nullptr) return nullptr;
  constexpr CustomOpCapability bit = CustomOpCapabilityOf<T>::value;
  if constexpr (bit != CustomOpCapability::kNone) {
    if (const auto* reporting = dynamic_cast<const CapabilityReportingOp*>(op)) {
      if (!HasCapability(reporting->GetCapabilities(), bit)) return nullptr;
    }
  }
  return dynamic_cast<T*>(op);
}
template <typename T>
T* CustomOpCast(const std::shared_ptr<BaseCustomOp>& op) noexcept {
  return CustomOpCast<T>(op.get());
}

// The capabilities of `op`: its mask when it reports one, otherwise the bits
// of the interfaces it derives from (ShapeInferOp counts as kInferMeta).
uint32_t OpCapabilities(const BaseCustomOp& op) noexcept;

}  // namespace ge
