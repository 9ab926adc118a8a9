// ge/op/op_registry.h: the thread-safe registry of op creators.
//
// C++ ops and Python adapters register the same way: an op_type, its canonical
// IR, a creator and the source (a plugin file, or "builtin"). The first
// registration of an op_type wins; a second is refused with a conflict Status
// naming both sources. All methods may be called from any thread; creators are
// called without the registry lock held.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ge/op/custom_op.h"
#include "ge/op/library_registrations.h"
#include "ge/op/status.h"

namespace ge {

using OpCreator = std::function<std::shared_ptr<BaseCustomOp>()>;

struct OpRegistration {
  std::string op_type;
  std::shared_ptr<const OpSchema> schema;  // required
  OpCreator creator;                       // required
  std::string source;                      // plugin file, or "builtin"
  std::string plugin;                      // plugin name, "" for C++ ops
  // CustomOpCapability bits. Register adds kInferMeta when infer_shape is set.
  uint32_t capabilities = 0;
  // GE's IMPL_OP infer functions for the op_type, when its library registered
  // them; the engine runs them when the op object has neither InferMetaOp
  // nor ShapeInferOp. Shapes need infer_shape; infer_datatype fills dtypes.
  InferShapeKernelFunc infer_shape = nullptr;
  InferDataTypeKernelFunc infer_datatype = nullptr;
};

class OpRegistry {
 public:
  OpRegistry() = default;
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  // Errors: missing schema or creator, schema op_type different from op_type,
  // or the op_type already registered ("op_type 'X' from B conflicts with A").
  Status Register(OpRegistration reg);
  // Removes every registration whose source equals `source`; returns how many.
  std::size_t UnregisterSource(const std::string& source);
  bool Unregister(const std::string& op_type);

  // Copy of the registration, or nullopt.
  std::optional<OpRegistration> Find(const std::string& op_type) const;
  // Calls the creator (outside the lock). Null when absent or the creator fails.
  std::shared_ptr<BaseCustomOp> Create(const std::string& op_type) const;
  // The same; on null, `*error` (when given) says why: "C++ exception: <what()>",
  // "the creator returned no op" or "op_type 'X' is not registered".
  std::shared_ptr<BaseCustomOp> Create(const std::string& op_type, std::string* error) const;
  std::vector<std::string> ListOpTypes() const;  // sorted
  std::size_t Size() const;

  // Why an op_type that is not registered is known anyway: a plugin that
  // implements it was not loaded (an error, a conflict; `overrides`), or a
  // plugin registered a prototype for it (register_op) and no
  // implementation. `why` names that plugin and its file; the engine adds it
  // to its "unknown op_type" error. A note with `overrides` replaces one
  // without; otherwise the first note of an op_type stays. Notes are not
  // registrations: Find, Create and ListOpTypes never see them, and
  // UnregisterSource(`source`) removes them with the source's ops.
  void NoteUnimplemented(const std::string& op_type, std::string why, const std::string& source,
                         bool overrides = false);
  // The note of `op_type`, or "" when it has none.
  std::string UnimplementedNote(const std::string& op_type) const;

 private:
  struct Note {
    std::string why;
    std::string source;
    bool overrides = false;
  };
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, OpRegistration> ops_;
  std::unordered_map<std::string, Note> unimplemented_;
};

// Registers the C++ ops shipped with the framework ("ReluCpp"); see builtin_ops.cc.
Status RegisterBuiltinOps(OpRegistry& registry);

}  // namespace ge
