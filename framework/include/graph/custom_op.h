// graph/custom_op.h: GE's custom op interfaces, their creator registry hook and REG_AUTO_MAPPING_OP.
//
// Source-compatible with GE's public header of the same path: a C++ custom op
// written for GE (deriving from EagerExecuteOp, CompilableOp, AnnotatedArgsOp,
// ShapeInferOp, returning graphStatus, taking gert:: contexts and registered
// with REG_AUTO_MAPPING_OP) compiles unchanged against it and runs in this
// project's engine. An op object says what it can do by the interfaces it
// derives from; engines ask with ge::CustomOpCast (ge/op/custom_op.h, which
// also declares this project's additions). share/docs/embedding.md, "C++ ops".
//
// Callbacks: each receives a context borrowed for the call (pointers it
// returns are valid until the callback returns) and returns GRAPH_SUCCESS or
// a failure code. A callback may store details of a failure in the
// context's error slot (SetError, our addition); one that returns a failure
// without details is reported by op_type, node, call and code. An exception
// escaping a callback is caught by the engine and reported with what().
// Thread-safety: one op object is called from one engine thread at a time
// unless its class says otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "exe_graph/runtime/annotated_args_context.h"
#include "exe_graph/runtime/eager_op_execution_context.h"
#include "exe_graph/runtime/infer_datatype_context.h"
#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/op_compile_context.h"
#include "graph/ascend_string.h"
#include "graph/error_codes.h"

namespace ge {

// The root of every op object; the interfaces derive from it virtually, so
// one object implements any combination of them.
class BaseCustomOp {
 public:
  virtual ~BaseCustomOp() = default;
};

// Saves and restores an op's compiled state (GE's offline models); the bytes
// are the op's own format. This engine never calls it.
class PortableOp : virtual public BaseCustomOp {
 public:
  ~PortableOp() override = default;
  virtual graphStatus Serialize(std::vector<uint8_t>& buffer) = 0;
  virtual graphStatus Deserialize(const std::vector<uint8_t>& buffer) = 0;
};

// Compile: once per node per graph compilation, after shape inference,
// before any execution (share/docs/compile.md).
class CompilableOp : virtual public BaseCustomOp {
 public:
  ~CompilableOp() override = default;
  virtual graphStatus Compile(gert::OpCompileContext* ctx) = 0;
};

// Eager execution: runs the node on its input tensors; must allocate (or
// alias) every output.
class EagerExecuteOp : virtual public BaseCustomOp {
 public:
  ~EagerExecuteOp() override = default;
  virtual graphStatus Execute(gert::EagerOpExecutionContext* ctx) = 0;
};

// Annotated launch args: declares the node's kernel launches once per graph
// compilation; the engine caches the plan and replays it without calling the
// op again (share/docs/launch-args.md).
class AnnotatedArgsOp : virtual public BaseCustomOp {
 public:
  ~AnnotatedArgsOp() override = default;
  virtual graphStatus DeclareLaunchArgs(gert::AnnotatedArgsContext& ctx) = 0;
};

// Output inference in GE's two steps: InferShape fills the output shapes,
// then InferDataType the output dtypes. Outputs are laid out by the IR (one
// instance per required output).
class ShapeInferOp : virtual public BaseCustomOp {
 public:
  ~ShapeInferOp() override = default;
  virtual graphStatus InferShape(gert::InferShapeContext* ctx) = 0;
  virtual graphStatus InferDataType(gert::InferDataTypeContext* ctx) = 0;
};

// Makes a new op object (owned by the caller).
using BaseOpCreator = std::function<std::unique_ptr<BaseCustomOp>()>;
// The same as a plain function returning an object the caller deletes.
using CustomOpCreateFunc = ge::BaseCustomOp* (*)();

// Registers a creator for `operator_type` in ge::AddRegisteredCustomOp
// (ge/op/library_registrations.h), from where the loader of the library
// takes it. Runs at static initialization; never throws except
// std::bad_alloc. An empty or null creator is registered as one that makes no
// op, so the loader reports "creating the op failed" for that op_type.
class CustomOpCreatorRegister {
 public:
  CustomOpCreatorRegister(const AscendString& operator_type, const BaseOpCreator& op_creator);
  CustomOpCreatorRegister(const AscendString& operator_type, const CustomOpCreateFunc op_creator);
  ~CustomOpCreatorRegister() = default;
};

}  // namespace ge

// REG_AUTO_MAPPING_OP(Class): registers Class, default-constructed, as the
// custom op of the op_type spelled like the class name (as GE does).
#define GE_CUSTOM_OP_JOIN_(a, b) a##b
#define GE_CUSTOM_OP_JOIN(a, b) GE_CUSTOM_OP_JOIN_(a, b)
#define REG_AUTO_MAPPING_OP(custom_op_class) REG_AUTO_MAPPING_OP_UNIQ(__COUNTER__, custom_op_class)
#define REG_AUTO_MAPPING_OP_UNIQ(ctr, custom_op_class)                                                  \
  static ge::BaseCustomOp* GE_CUSTOM_OP_JOIN(ge_custom_op_create_, ctr)() { return new custom_op_class(); } \
  static const ge::CustomOpCreatorRegister GE_CUSTOM_OP_JOIN(ge_custom_op_register_, ctr)(               \
      #custom_op_class, GE_CUSTOM_OP_JOIN(ge_custom_op_create_, ctr))
