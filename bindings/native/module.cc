// module.cc: the `_ge_native` Boost.Python module.
//
// Built twice from the same sources: linked into the host (registered with
// PyImport_AppendInittab and imported in the main interpreter before any
// sub-interpreter exists), and as an extension module so that the `ge` package
// also imports in a plain python3 for plugin authors' unit tests.
#include <boost/python.hpp>
#include <boost/python/raw_function.hpp>

#include <cstring>

#include "dispatch.h"
#include "errors.h"
#include "load_contract.h"
#include "views.h"

namespace bp = boost::python;

namespace ge::py {
namespace {

// Attribute values in IR order from a dict of Python values; defaults fill the
// missing ones (a missing required one is a TypeError).
RuntimeAttrs AttrsFromDict(const OpSchema& schema, bp::dict attrs) {
  std::vector<AttrValue> values;
  for (const auto& a : schema.attrs) {
    if (!attrs.has_key(a.name)) {
      if (!a.default_value) RaiseTypeError("missing required attr '" + a.name + "'");
      values.push_back(*a.default_value);
    } else {
      values.push_back(AttrFromPython(attrs[a.name], a.type, a.name));
    }
  }
  return RuntimeAttrs(std::move(values));
}

// A Tensor owned by the test harness, built from (bytes-like, shape, dtype).
std::shared_ptr<Tensor> HostTensorFrom(bp::object spec, const std::string& what) {
  if (!PyTuple_Check(spec.ptr()) || bp::len(spec) != 3) {
    RaiseTypeError(what + " must be a (data, shape, data_type) tuple");
  }
  ge::Shape shape = ShapeFromPython(spec[1], what + " shape");
  ge::DataType dt = DataTypeArg(spec[2], what + " data_type", false);
  TensorDesc desc(shape, dt);
  auto t = std::make_shared<Tensor>(Tensor::Allocate(desc));
  Py_buffer buf;
  bp::object data = spec[0];
  if (PyObject_GetBuffer(data.ptr(), &buf, PyBUF_C_CONTIGUOUS) < 0) bp::throw_error_already_set();
  const std::size_t n = static_cast<std::size_t>(buf.len);
  if (n != t->GetSize()) {
    PyBuffer_Release(&buf);
    RaiseValueError(what + " has " + std::to_string(n) + " bytes, its shape and dtype need " +
                    std::to_string(t->GetSize()));
  }
  if (n != 0) std::memcpy(t->GetAddr(), buf.buf, n);
  PyBuffer_Release(&buf);
  return t;
}

// ge.testing back end: runs `method` (a bound execute) as the host would, on
// tensors built from (data, shape, dtype) specs; returns the outputs as
// (bytes, shape, DataType) tuples (None when not allocated). A Python exception
// raised by the callback propagates unchanged. `call`: how execute is called
// ("schema", "schema_any_result" or "context", ge._entry.collect's "call").
bp::object TestingExecute(bp::object method, bp::object ctx_var, bp::object proto_dict, bp::list inputs,
                          bp::dict attrs, const std::string& call) {
  const std::optional<ExecuteCall> form = ParseExecuteCall(call);
  if (!form) RaiseValueError("unknown execute call form '" + call + "'");
  auto schema = SchemaFromDict(proto_dict);
  if (bp::len(inputs) != static_cast<Py_ssize_t>(schema->inputs.size())) {
    RaiseTypeError("expected " + std::to_string(schema->inputs.size()) + " inputs for " + schema->op_type + ", got " +
                   std::to_string(bp::len(inputs)));
  }
  std::vector<std::shared_ptr<Tensor>> owned;
  std::vector<Tensor*> flat;
  std::vector<std::size_t> counts;
  // As in the engine: an input the op does not declare as mutated is read-only.
  const std::vector<bool> mutated = schema->MutatedInputs();
  for (std::size_t k = 0; k < schema->inputs.size(); ++k) {
    bp::object in = inputs[k];
    const std::string what = "input '" + schema->inputs[k].name + "'";
    const std::size_t first = owned.size();
    if (schema->inputs[k].kind == IrInputKind::kDynamic) {
      if (!PyList_Check(in.ptr())) RaiseTypeError(what + " is dynamic: pass a list");
      counts.push_back(static_cast<std::size_t>(bp::len(in)));
      for (Py_ssize_t i = 0; i < bp::len(in); ++i) owned.push_back(HostTensorFrom(in[i], what));
    } else if (in.is_none()) {
      if (schema->inputs[k].kind == IrInputKind::kRequired) RaiseTypeError(what + " is required");
      counts.push_back(0);
    } else {
      counts.push_back(1);
      owned.push_back(HostTensorFrom(in, what));
    }
    if (!mutated[k]) {
      for (std::size_t i = first; i < owned.size(); ++i) *owned[i] = owned[i]->ReadOnlyView();
    }
  }
  for (auto& t : owned) flat.push_back(t.get());
  RuntimeAttrs rt = AttrsFromDict(*schema, attrs);
  std::vector<std::size_t> out_counts;
  for (const auto& o : schema->outputs) out_counts.push_back(o.kind == IrOutputKind::kRequired ? 1 : 0);
  EagerOpExecutionContext ctx(*schema, flat, InstanceLayout(counts), rt, InstanceLayout(out_counts));
  CallSite site{"<testing>", "", schema->op_type, "execute"};
  Status st = InvokeExecute(method.ptr(), ctx_var.ptr(), &ctx, site, /*keep_python_error=*/true, nullptr, *form);
  if (!st.ok()) {
    if (PyErr_Occurred()) bp::throw_error_already_set();
    RaiseTypeError(st.message());
  }
  bp::list outs;
  for (auto& o : ctx.TakeOutputs()) {
    if (!o) {
      outs.append(bp::object());
      continue;
    }
    bp::object data(bp::handle<>(
        PyBytes_FromStringAndSize(static_cast<const char*>(o->GetAddr()), static_cast<Py_ssize_t>(o->GetSize()))));
    bp::list dims;
    for (std::size_t i = 0; i < o->GetStorageShape().GetDimNum(); ++i) dims.append(o->GetStorageShape().GetDim(i));
    outs.append(bp::make_tuple(data, dims, DataTypeEnum(o->GetDataType())));
  }
  return outs;
}

// Flattens TensorDesc / None / list[TensorDesc] entries by IR kind.
template <typename Kind>
void FlattenDescs(bp::list entries, const std::vector<Kind>& ir, bool (*is_dynamic)(const Kind&),
                  bool (*may_be_absent)(const Kind&), const std::string& what, std::vector<TensorDesc>& out,
                  std::vector<std::size_t>& counts) {
  if (bp::len(entries) != static_cast<Py_ssize_t>(ir.size())) {
    RaiseTypeError("expected " + std::to_string(ir.size()) + " " + what + "s, got " + std::to_string(bp::len(entries)));
  }
  for (std::size_t k = 0; k < ir.size(); ++k) {
    bp::object e = entries[k];
    const std::string w = what + " '" + ir[k].name + "'";
    if (is_dynamic(ir[k])) {
      if (!PyList_Check(e.ptr())) RaiseTypeError(w + " is dynamic: pass a list");
      counts.push_back(static_cast<std::size_t>(bp::len(e)));
      for (Py_ssize_t i = 0; i < bp::len(e); ++i) out.push_back(ExtractTensorDesc(e[i], w));
    } else if (e.is_none()) {
      if (!may_be_absent(ir[k])) RaiseTypeError(w + " is required");
      counts.push_back(0);
    } else {
      counts.push_back(1);
      out.push_back(ExtractTensorDesc(e, w));
    }
  }
}

// ge.testing back end for compile: runs `method` (a bound compile) on
// TensorDesc metadata with options and the platform of `soc` (read from
// `platform_dir`), as the engine does. Python exceptions propagate.
void TestingCompile(bp::object method, bp::object revalidate, bp::object ctx_var, bp::object platform_var,
                    bp::object proto_dict, bp::list inputs, bp::list outputs, bp::dict attrs, bp::dict options,
                    const std::string& soc, const std::string& platform_dir) {
  auto schema = SchemaFromDict(proto_dict);
  std::vector<TensorDesc> in, out;
  std::vector<std::size_t> in_counts, out_counts;
  FlattenDescs<IrInput>(
      inputs, schema->inputs, +[](const IrInput& i) { return i.kind == IrInputKind::kDynamic; },
      +[](const IrInput& i) { return i.kind == IrInputKind::kOptional; }, "input", in, in_counts);
  FlattenDescs<IrOutput>(
      outputs, schema->outputs, +[](const IrOutput& o) { return o.kind == IrOutputKind::kDynamic; },
      +[](const IrOutput&) { return false; }, "output", out, out_counts);
  RuntimeAttrs rt = AttrsFromDict(*schema, attrs);
  std::map<std::string, std::string> opts;
  bp::list items = options.items();
  for (Py_ssize_t i = 0; i < bp::len(items); ++i) {
    bp::object k = items[i][0], v = items[i][1];
    if (!PyUnicode_Check(k.ptr()) || !PyUnicode_Check(v.ptr())) RaiseTypeError("compile options must map str to str");
    opts[SafeStr(k.ptr())] = SafeStr(v.ptr());
  }
  OpCompileContext ctx(*schema, in, InstanceLayout(in_counts), out, InstanceLayout(out_counts), rt, opts,
                       [soc, platform_dir]() {
                         return std::make_shared<const PlatformInfos>(PlatformInfos::ForSoc(soc, platform_dir));
                       });
  CallSite site{"<testing>", "", schema->op_type, "compile"};
  Status st = InvokeCompile(method.ptr(), revalidate.ptr(), ctx_var.ptr(), platform_var.ptr(), &ctx, site,
                            /*keep_python_error=*/true);
  if (!st.ok()) {
    if (PyErr_Occurred()) bp::throw_error_already_set();
    if (st.info().exception_type == "TypeError") RaiseTypeError(st.message());
    RaiseRuntimeError(st.message());
  }
}

// ge.testing back end for declare_launch_args: runs `method` on TensorDesc
// metadata and returns the declared plan as plain Python data:
// {"launches": [{"kernel_name", "kernel_bin", "block_dim", "stream_id",
// "args": [(kind, value)]}], "workspaces": [sizes]} with kind one of "input",
// "output", "workspace", "scalar". Python exceptions propagate.
bp::dict TestingDeclare(bp::object method, bp::object ctx_var, bp::object proto_dict, bp::list inputs, bp::list outputs,
                        bp::dict attrs, int64_t stream_id) {
  auto schema = SchemaFromDict(proto_dict);
  std::vector<TensorDesc> in, out;
  std::vector<std::size_t> in_counts, out_counts;
  FlattenDescs<IrInput>(
      inputs, schema->inputs, +[](const IrInput& i) { return i.kind == IrInputKind::kDynamic; },
      +[](const IrInput& i) { return i.kind == IrInputKind::kOptional; }, "input", in, in_counts);
  FlattenDescs<IrOutput>(
      outputs, schema->outputs, +[](const IrOutput& o) { return o.kind == IrOutputKind::kDynamic; },
      +[](const IrOutput&) { return false; }, "output", out, out_counts);
  RuntimeAttrs rt = AttrsFromDict(*schema, attrs);
  AnnotatedArgsContext ctx(*schema, in, InstanceLayout(in_counts), out, InstanceLayout(out_counts), rt, stream_id);
  CallSite site{"<testing>", "", schema->op_type, "declare_launch_args"};
  Status st = InvokeDeclareLaunchArgs(method.ptr(), ctx_var.ptr(), &ctx, site, /*keep_python_error=*/true);
  if (!st.ok()) {
    if (PyErr_Occurred()) bp::throw_error_already_set();
    if (st.info().exception_type == "TypeError") RaiseTypeError(st.message());
    RaiseRuntimeError(st.message());
  }
  static const char* kKinds[] = {"input", "output", "workspace", "scalar"};
  bp::list launches;
  for (const auto& l : ctx.Plan().launches) {
    bp::dict d;
    d["kernel_name"] = l.kernel_name;
    d["kernel_bin"] = bp::object(bp::handle<>(
        PyBytes_FromStringAndSize(l.kernel_bin->data(), static_cast<Py_ssize_t>(l.kernel_bin->size()))));
    d["block_dim"] = l.block_dim;
    d["stream_id"] = l.stream_id;
    bp::list args;
    for (const auto& a : l.args) args.append(bp::make_tuple(kKinds[static_cast<int>(a.kind)], a.value));
    d["args"] = args;
    launches.append(d);
  }
  bp::list ws;
  for (std::size_t s : ctx.Plan().workspace_sizes) ws.append(s);
  bp::dict result;
  result["launches"] = launches;
  result["workspaces"] = ws;
  return result;
}

}  // namespace
}  // namespace ge::py

BOOST_PYTHON_MODULE(_ge_native) {
  using namespace ge::py;
  bp::scope().attr("__doc__") =
      "Native classes of the GE plugin host (views over C++ runtime objects). Use ge.runtime / ge.custom_op.";
  RegisterTensorBuffer();
  RegisterTensorViews();
  RegisterContextViews();
  RegisterLogLine();
  RegisterCompileViews();
  RegisterLaunchViews();
  RegisterLoadContract();
  bp::def("_testing_compile", &TestingCompile,
          "Runs a bound compile on TensorDesc metadata as the engine does (ge.testing back end).");
  bp::def("_testing_declare", &TestingDeclare,
          "Runs a bound declare_launch_args on TensorDesc metadata; returns the plan (ge.testing back end).");
  bp::def("_testing_execute", &TestingExecute,
          "Runs a bound execute on (data, shape, dtype) tensors as the host does (ge.testing back end).");
}
