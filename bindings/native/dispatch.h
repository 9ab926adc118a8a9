// dispatch.h: calling schema-bound Python callbacks from C++.
//
// Binds a node's tensors and attributes to the callback's parameters in IR
// order (required -> Tensor, absent optional -> None, dynamic -> list[Tensor];
// attributes as keywords), publishes the context through the interpreter's
// ContextVar, calls, checks the result, and expires every borrowed object.
// Shared by the plugin host and by ge.testing in a plain python3.
//
// Preconditions for every function: the GIL is held with the thread state of
// the interpreter that owns the Python objects involved.
#pragma once

#include <boost/python.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ge/op/contexts.h"
#include "ge/op/launch.h"
#include "ge/op/op_schema.h"
#include "ge/op/status.h"
#include "lease.h"
#include "py_ref.h"

namespace ge::py {

namespace bp = boost::python;

// Builds the canonical IR from the dict of OpProto.to_dict() (ge.custom_op).
// Throws std::invalid_argument naming the bad field.
std::shared_ptr<OpSchema> SchemaFromDict(bp::object proto_dict);
// The reverse, for a C++ prototype (an op library's REG_OP) handed to a
// plugin's interpreter: the same keys (op_type, inputs, outputs, attrs with
// their defaults, mutates as [input name, output index]); a new dict owned by
// the caller, in the current interpreter.
bp::dict SchemaToDict(const OpSchema& schema);

// Python value of an attribute; a VT_TENSOR value becomes a read-only Tensor
// view on `lease`.
bp::object AttrToPython(const AttrValue& value, const LeasePtr& lease);
// The attribute value of `obj` for `type`; raises TypeError naming `name` when
// the Python type does not match exactly (True is not an int, 1 is not a float).
AttrValue AttrFromPython(bp::object obj, AttrType type, const std::string& name);

// Who is being called, for error messages.
struct CallSite {
  std::string plugin;
  std::string file;
  std::string op_type;
  std::string method;  // "execute", "infer_meta", ...
};

// ---- building blocks of the schema-bound calls (shared by every Invoke*) ----

// Flattened instance i of a node's inputs or outputs.
using TensorGetter = std::function<Tensor*(std::size_t)>;

// Sets one positional argument per IR entry into `tuple` from `offset`: a
// Tensor, None (absent optional) or a list of Tensor (dynamic), each a view on
// `lease`. `with_data`: the views keep the tensors' buffers alive (execute);
// otherwise they describe metadata only and are read-only (compile, launch args).
void SetEntryArgs(PyObject* tuple, Py_ssize_t offset, const std::vector<bool>& dynamic, const InstanceLayout& layout,
                  const TensorGetter& get, const LeasePtr& lease, bool with_data);
std::vector<bool> DynamicInputs(const OpSchema& schema);
std::vector<bool> DynamicOutputs(const OpSchema& schema);
// The attributes as keyword arguments (null when the IR has none).
OwnedRef AttrKwargs(const OpSchema& schema, const RuntimeAttrs& attrs, const LeasePtr& lease);
// Calls method(*args, **kwargs) with each (ContextVar, value) bound for the
// duration of the call (reset afterwards, in reverse order, keeping the
// callback's error pending) and checks that it returned None.
Status CallSchemaBound(PyObject* method, PyObject* args, PyObject* kwargs,
                       const std::vector<std::pair<PyObject*, PyObject*>>& bindings, const CallSite& site,
                       bool keep_python_error);
// The Status of a failed call: the pending Python error (converted, or left
// pending with keep_python_error), or a C++ exception.
Status PythonErrorStatus(const CallSite& site, bool keep_python_error);
Status CppErrorStatus(const CallSite& site, const std::exception& e);

// How an implementation's execute is called: what the class is decides it
// (share/docs/plugin-authors.md, "Plugins from earlier GE releases").
enum class ExecuteCall {
  kSchemaBound,           // execute(self, <inputs...>, *, <attrs...>); must return None (the newest GE)
  kSchemaBoundAnyResult,  // the same, its result ignored (a GE 9.2.0-beta.x EagerExecuteOp subclass)
  kContext,               // execute(self, ctx): the context view its one argument, the result ignored
                          // (also 9.2.0-beta.1's execute(self, inputs), adapted in ge.custom_op.base)
};
// "schema", "schema_any_result", "context" (ge._entry.collect's "call"); nullopt otherwise.
std::optional<ExecuteCall> ParseExecuteCall(const std::string& name);

// What the eager execute of one op keeps between its calls, so that a call
// builds nothing it built last time (share/docs/host-design.md, "Borrowed
// objects"):
//  - the keyword names of the attributes (one tuple, for PyObject_Vectorcall),
//    rebuilt only when a call brings a schema with other names or kinds;
//  - the Python value of each int, float, bool, str and DataType attribute,
//    reused while the attribute's value is the same (these Python values are
//    immutable); lists and tensor attributes are built for every call;
//  - the Tensor view of each input instance and the EagerOpExecutionContext
//    view. When a call ends, each view is expired with the call's lease and its
//    tensor buffer is let go. A view nobody else references (reference count 1:
//    the plugin kept it nowhere, no weak reference, no instance attributes) is
//    kept and re-pointed at the next call's tensor; any other is dropped from
//    the frame, stays expired for whoever holds it, and a new view is made.
//  - a contextvars.Context (frame_context.h), made at the first call as a copy
//    of the context current then, with `ctx_var` bound to the context view:
//    execute runs inside it (PyContext_Enter/Exit, nothing allocated per
//    call). Its binding counts as the frame's own reference to the view while
//    no contextvars copy shares the Context's mapping. ContextVars a callback
//    sets in it stay set for the op's later calls.
//
// One frame per op object (PythonOpAdapter), used only with the GIL held in the
// interpreter of its op. A call that finds the frame in use (a second thread
// calling the same op while the first one's callback runs) uses a temporary
// frame instead (with `ctx_var` set and reset in the caller's context).
// Reset() drops every Python object (its interpreter current,
// GIL held); a frame destroyed while still holding some leaks them and logs an
// error (InterpreterRef, py_ref.h).
class ExecuteFrame {
 public:
  // `schema` (may be null): the op's schema, kept alive by the frame; a call
  // with exactly that schema skips comparing names and kinds.
  explicit ExecuteFrame(std::shared_ptr<const OpSchema> schema = nullptr);
  ~ExecuteFrame();
  ExecuteFrame(const ExecuteFrame&) = delete;
  ExecuteFrame& operator=(const ExecuteFrame&) = delete;
  void Reset() noexcept;

  // For tests: how many views of the last call were re-pointed rather than made.
  std::size_t ReusedViews() const noexcept;

  struct State;  // dispatch.cc

 private:
  friend Status InvokeExecute(PyObject*, PyObject*, EagerOpExecutionContext*, const CallSite&, bool, ExecuteFrame*,
                              ExecuteCall);
  std::unique_ptr<State> s_;
};

// execute(self, <inputs...>, *, <attrs...>) through `method` (a bound method),
// with `ctx_var` (ge.custom_op's ContextVar) bound to the context for the call.
// With keep_python_error, a Python exception raised by the callback stays
// pending (for ge.testing, which re-raises it) instead of being converted.
// A non-None result is a TypeError "<method> must return None" either way
// (with `call` kSchemaBound; the other forms ignore the result).
// `frame` (may be null: a temporary one) keeps the call's Python objects for
// the next call of the same op (see ExecuteFrame); the plugin sees the same
// arguments, expiry, read-only rules and errors either way. With `call`
// kContext the one argument is the EagerOpExecutionContext view (bound to
// `ctx_var` too), borrowed like every view: it expires when the call returns.
Status InvokeExecute(PyObject* method, PyObject* ctx_var, EagerOpExecutionContext* ctx, const CallSite& site,
                     bool keep_python_error = false, ExecuteFrame* frame = nullptr,
                     ExecuteCall call = ExecuteCall::kSchemaBound);

// infer_meta: calls `call_infer_meta(proto, inputs, attrs)` (ge.custom_op._proto)
// and stores its result in ctx.
Status InvokeInferMeta(PyObject* call_infer_meta, PyObject* proto, InferMetaContext* ctx, const CallSite& site);

// compile(self, <inputs...>, <outputs...>, *, <attrs...>): `revalidate` (a
// callable, may be null) re-checks the signature against the IR before each
// call; `ctx_var` / `platform_var` publish the OpCompileContext and the separate
// CompilePlatformInfo. Every tensor, view and attribute is read-only.
Status InvokeCompile(PyObject* method, PyObject* revalidate, PyObject* ctx_var, PyObject* platform_var,
                     OpCompileContext* ctx, const CallSite& site, bool keep_python_error = false);

// Registers OpCompileContext and CompilePlatformInfo (module init).
void RegisterCompileViews();

// declare_launch_args(self, <inputs...>, <outputs...>, *, <attrs...>) with
// `ctx_var` bound to the AnnotatedArgsContext; tensors are metadata only and
// read-only. A call that declares no launch is an error.
Status InvokeDeclareLaunchArgs(PyObject* method, PyObject* ctx_var, AnnotatedArgsContext* ctx, const CallSite& site,
                               bool keep_python_error = false);

// Registers AnnotatedArgsContext, AnnotatedKernelArgs and WorkspaceAddr.
void RegisterLaunchViews();

}  // namespace ge::py
