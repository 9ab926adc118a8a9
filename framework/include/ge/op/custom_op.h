// ge/op/custom_op.h: BaseCustomOp, the capability interfaces and CustomOpCast.
//
// An op object advertises what it can do with a CustomOpCapability bit mask
// and implements the matching interfaces. Engines ask with CustomOpCast<T>,
// which returns null when the op lacks the capability, even if the C++ class
// happens to inherit the interface (a Python adapter inherits all of them and
// reports only what the plugin's class defines). C++ ops and Python adapters
// are peers: the engine never knows which it has.
//
// Thread-safety: an op object may be called from several threads only if its
// implementation says so; Python adapters serialize on the interpreter lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ge/op/contexts.h"
#include "ge/op/launch.h"
#include "ge/op/op_schema.h"
#include "ge/op/status.h"

namespace ge {

enum class CustomOpCapability : uint32_t {
  kNone = 0,
  kEagerExecute = 1U << 0,   // EagerExecuteOp::Execute   (Python: "eager_execute")
  kCompilable = 1U << 1,     // CompilableOp::Compile     (Python: "compilable")
  kAnnotatedArgs = 1U << 2,  // AnnotatedArgsOp           (Python: "annotated_args")
  kInferMeta = 1U << 3,      // InferMetaOp::InferMeta    (Python: the prototype)
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

class BaseCustomOp {
 public:
  virtual ~BaseCustomOp() = default;
  virtual uint32_t GetCapabilities() const noexcept = 0;
  virtual const OpSchema& GetSchema() const noexcept = 0;
};

class EagerExecuteOp : public virtual BaseCustomOp {
 public:
  static constexpr CustomOpCapability kCapability = CustomOpCapability::kEagerExecute;
  // Runs the op on the context's inputs; must allocate every output. The
  // context is borrowed for the call. Errors are returned, never thrown.
  virtual Status Execute(EagerOpExecutionContext* ctx) = 0;
};

class CompilableOp : public virtual BaseCustomOp {
 public:
  static constexpr CustomOpCapability kCapability = CustomOpCapability::kCompilable;
  // Runs while a graph is compiled: once per node per compilation, never at
  // load or execution. The context is borrowed for the call. Errors are
  // returned, never thrown.
  virtual Status Compile(OpCompileContext* ctx) = 0;
};

class AnnotatedArgsOp : public virtual BaseCustomOp {
 public:
  static constexpr CustomOpCapability kCapability = CustomOpCapability::kAnnotatedArgs;
  // Declares the node's kernel launches into ctx, once per task-plan lifecycle
  // (one graph compilation); the engine caches the plan and later runs never
  // call the op. The context is borrowed for the call. Errors are returned.
  virtual Status DeclareLaunchArgs(AnnotatedArgsContext& ctx) = 0;
};

class InferMetaOp : public virtual BaseCustomOp {
 public:
  static constexpr CustomOpCapability kCapability = CustomOpCapability::kInferMeta;
  // Computes output descriptions from input descriptions and attributes and
  // stores them with ctx->SetOutputs. Errors are returned, never thrown.
  virtual Status InferMeta(InferMetaContext* ctx) = 0;
};

// Returns `op` as T when it has T's capability, else null. Borrowed: valid as
// long as `op` is.
template <typename T>
T* CustomOpCast(BaseCustomOp* op) noexcept {
  if (op == nullptr || !HasCapability(op->GetCapabilities(), T::kCapability)) return nullptr;
  return dynamic_cast<T*>(op);
}
template <typename T>
T* CustomOpCast(const std::shared_ptr<BaseCustomOp>& op) noexcept {
  return CustomOpCast<T>(op.get());
}

}  // namespace ge
