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
#include "views.h"

namespace bp = boost::python;

namespace ge::py {
namespace {

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
// raised by the callback propagates unchanged.
bp::object TestingExecute(bp::object method, bp::object ctx_var, bp::object proto_dict, bp::list inputs,
                          bp::dict attrs) {
  auto schema = SchemaFromDict(proto_dict);
  if (bp::len(inputs) != static_cast<Py_ssize_t>(schema->inputs.size())) {
    RaiseTypeError("expected " + std::to_string(schema->inputs.size()) + " inputs for " + schema->op_type + ", got " +
                   std::to_string(bp::len(inputs)));
  }
  std::vector<std::shared_ptr<Tensor>> owned;
  std::vector<Tensor*> flat;
  std::vector<std::size_t> counts;
  for (std::size_t k = 0; k < schema->inputs.size(); ++k) {
    bp::object in = inputs[k];
    const std::string what = "input '" + schema->inputs[k].name + "'";
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
  }
  for (auto& t : owned) flat.push_back(t.get());
  std::vector<AttrValue> values;
  for (const auto& a : schema->attrs) {
    bp::object v = attrs.get(a.name);
    if (v.is_none() && !attrs.has_key(a.name)) {
      if (!a.default_value) RaiseTypeError("missing required attr '" + a.name + "'");
      values.push_back(*a.default_value);
    } else {
      values.push_back(AttrFromPython(v, a.type, a.name));
    }
  }
  RuntimeAttrs rt(std::move(values));
  std::vector<std::size_t> out_counts;
  for (const auto& o : schema->outputs) out_counts.push_back(o.kind == IrOutputKind::kRequired ? 1 : 0);
  EagerOpExecutionContext ctx(*schema, flat, InstanceLayout(counts), rt, InstanceLayout(out_counts));
  CallSite site{"<testing>", "", schema->op_type, "execute"};
  Status st = InvokeExecute(method.ptr(), ctx_var.ptr(), &ctx, site, /*keep_python_error=*/true);
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

}  // namespace
}  // namespace ge::py

BOOST_PYTHON_MODULE(_ge_native) {
  using namespace ge::py;
  bp::scope().attr("__doc__") =
      "Native classes of the GE plugin host (views over C++ runtime objects). Use ge.runtime / ge.custom_op.";
  RegisterViews();
  bp::def("_testing_execute", &TestingExecute,
          "Runs a bound execute on (data, shape, dtype) tensors as the host does (ge.testing back end).");
}
