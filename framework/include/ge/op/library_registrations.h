// ge/op/library_registrations.h: what C++ op code registered when it was
// loaded: prototypes (REG_OP), their infer functions (IMPL_OP) and custom op
// classes (REG_AUTO_MAPPING_OP).
//
// The registration macros of graph/operator_reg.h, register/op_impl_registry.h
// and graph/custom_op.h run at static-initialization time of the library (or
// executable) that holds them and append here. Whoever loads a library
// (the plugin host, the registry's scanner) takes what it registered right
// after dlopen returns, so every entry is attributed to exactly one library;
// it must therefore serialize its library loads (one dlopen at a time per
// process). All functions are thread-safe and never throw except std::bad_alloc.
// See share/docs/op-packages.md.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/error_codes.h"
#include "ge/op/op_schema.h"

namespace gert {
class InferShapeContext;
class InferDataTypeContext;
}  // namespace gert

namespace ge {

class BaseCustomOp;

// GE's infer function types (register/op_impl_registry.h spells them the same).
using InferShapeKernelFunc = graphStatus (*)(gert::InferShapeContext*);
using InferDataTypeKernelFunc = graphStatus (*)(gert::InferDataTypeContext*);

struct RegisteredPrototype {
  std::string op_type;
  std::shared_ptr<const OpSchema> schema;  // null exactly when `error` is set
  std::string error;  // why the prototype cannot be used here, naming the field ("attribute 'cfg': ...")
};

struct RegisteredInferFuncs {
  std::string op_type;
  InferShapeKernelFunc infer_shape = nullptr;        // null: not given
  InferDataTypeKernelFunc infer_datatype = nullptr;  // null: not given
};

struct RegisteredCustomOp {
  std::string op_type;
  std::function<std::unique_ptr<BaseCustomOp>()> creator;  // never empty
};

struct LibraryRegistrations {
  std::vector<RegisteredPrototype> prototypes;   // in registration order
  std::vector<RegisteredInferFuncs> infer_funcs;
  std::vector<RegisteredCustomOp> custom_ops;
  bool empty() const noexcept { return prototypes.empty() && infer_funcs.empty() && custom_ops.empty(); }
};

// Called by the registration macros; callers outside them need not.
void AddRegisteredPrototype(RegisteredPrototype prototype);
void AddRegisteredInferFuncs(RegisteredInferFuncs funcs);
void AddRegisteredCustomOp(RegisteredCustomOp op);

// Moves out everything registered since the previous call (the first call
// also returns what the executable itself and its linked libraries registered).
LibraryRegistrations TakeRegistrations();

}  // namespace ge
