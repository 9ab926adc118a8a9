// load_contract.cc: see load_contract.h.
#include "load_contract.h"

#include <utility>

namespace bp = boost::python;

namespace ge::py {

namespace {

// A list of str as a vector, or TypeError naming the field.
std::vector<std::string> Strings(const bp::object& list, const char* field) {
  std::vector<std::string> out;
  if (!PyList_Check(list.ptr()) && !PyTuple_Check(list.ptr())) {
    PyErr_Format(PyExc_TypeError, "CollectedImpl.%s must be a list of str, got %s", field, Py_TYPE(list.ptr())->tp_name);
    bp::throw_error_already_set();
  }
  for (Py_ssize_t i = 0, n = bp::len(list); i < n; ++i) {
    bp::extract<std::string> s(list[i]);
    if (!s.check() || !PyUnicode_Check(bp::object(list[i]).ptr())) {
      PyErr_Format(PyExc_TypeError, "CollectedImpl.%s[%zd] must be a str", field, i);
      bp::throw_error_already_set();
    }
    out.push_back(s());
  }
  return out;
}

std::shared_ptr<CollectedImpl> MakeImpl(std::string op_type, std::string descriptor_key, bp::object cls, bp::object ir,
                                        bp::object proto, bool library, bp::object interfaces, bp::object revalidate,
                                        std::string rules, std::string call, bp::object warnings,
                                        std::string newest_refusal) {
  auto impl = std::make_shared<CollectedImpl>();
  impl->op_type = std::move(op_type);
  impl->descriptor_key = std::move(descriptor_key);
  impl->cls = std::move(cls);
  if (!ir.is_none() && !PyDict_Check(ir.ptr())) {
    PyErr_Format(PyExc_TypeError, "CollectedImpl.ir must be a dict or None, got %s", Py_TYPE(ir.ptr())->tp_name);
    bp::throw_error_already_set();
  }
  impl->ir = std::move(ir);
  impl->proto = std::move(proto);
  impl->library = library;
  impl->interfaces = Strings(interfaces, "interfaces");
  if (!PyCallable_Check(revalidate.ptr())) {
    PyErr_SetString(PyExc_TypeError, "CollectedImpl.revalidate must be callable");
    bp::throw_error_already_set();
  }
  impl->revalidate = std::move(revalidate);
  impl->rules = std::move(rules);
  impl->call = std::move(call);
  impl->warnings = Strings(warnings, "warnings");
  impl->newest_refusal = std::move(newest_refusal);
  return impl;
}

std::shared_ptr<CollectedPlugin> MakePlugin(bp::object impls, bp::object protos) {
  auto p = std::make_shared<CollectedPlugin>();
  if (!PyList_Check(impls.ptr())) {
    PyErr_SetString(PyExc_TypeError, "CollectedPlugin.impls must be a list of CollectedImpl");
    bp::throw_error_already_set();
  }
  for (Py_ssize_t i = 0, n = bp::len(impls); i < n; ++i) {
    bp::extract<std::shared_ptr<CollectedImpl>> impl(impls[i]);
    if (!impl.check()) {
      PyErr_Format(PyExc_TypeError, "CollectedPlugin.impls[%zd] must be a CollectedImpl", i);
      bp::throw_error_already_set();
    }
    p->impls.push_back(impl());
  }
  std::vector<std::string> names;
  if (!PyList_Check(protos.ptr())) {
    PyErr_SetString(PyExc_TypeError, "CollectedPlugin.protos must be a list of str");
    bp::throw_error_already_set();
  }
  for (Py_ssize_t i = 0, n = bp::len(protos); i < n; ++i) {
    if (!PyUnicode_Check(bp::object(protos[i]).ptr())) {
      PyErr_Format(PyExc_TypeError, "CollectedPlugin.protos[%zd] must be a str", i);
      bp::throw_error_already_set();
    }
    p->protos.push_back(bp::extract<std::string>(protos[i]));
  }
  return p;
}

std::shared_ptr<AdapterObjects> MakeAdapterObjects(bp::object call_infer_meta, bp::object execute_ctx,
                                                   bp::object compile_vars, bp::object launch_ctx) {
  auto a = std::make_shared<AdapterObjects>();
  a->call_infer_meta = std::move(call_infer_meta);
  a->execute_ctx = std::move(execute_ctx);
  a->compile_vars = std::move(compile_vars);
  a->launch_ctx = std::move(launch_ctx);
  return a;
}

}  // namespace

void RegisterLoadContract() {
  bp::scope().attr("LOAD_CONTRACT_VERSION") = kLoadContractVersion;
  bp::class_<CollectedImpl, std::shared_ptr<CollectedImpl>, boost::noncopyable>(
      "CollectedImpl", "One validated implementation, as ge._entry.collect hands it to the host (internal).", bp::no_init)
      .def("__init__", bp::make_constructor(&MakeImpl, bp::default_call_policies(),
                                            (bp::arg("op_type"), bp::arg("descriptor_key"), bp::arg("cls"), bp::arg("ir"),
                                             bp::arg("proto"), bp::arg("library"), bp::arg("interfaces"),
                                             bp::arg("revalidate"), bp::arg("rules"), bp::arg("call"),
                                             bp::arg("warnings"), bp::arg("newest_refusal"))))
      .def_readonly("op_type", &CollectedImpl::op_type)
      .def_readonly("descriptor_key", &CollectedImpl::descriptor_key)
      .def_readonly("rules", &CollectedImpl::rules)
      .def_readonly("call", &CollectedImpl::call)
      .def_readonly("library", &CollectedImpl::library)
      .def_readonly("newest_refusal", &CollectedImpl::newest_refusal)
      .add_property("cls", +[](const CollectedImpl& i) { return i.cls; })
      .add_property("ir", +[](const CollectedImpl& i) { return i.ir; })
      .add_property("proto", +[](const CollectedImpl& i) { return i.proto; });
  bp::class_<CollectedPlugin, std::shared_ptr<CollectedPlugin>, boost::noncopyable>(
      "CollectedPlugin", "What ge._entry.collect hands the host for one plugin (internal).", bp::no_init)
      .def("__init__", bp::make_constructor(&MakePlugin, bp::default_call_policies(),
                                            (bp::arg("impls"), bp::arg("protos"))));
  bp::class_<AdapterObjects, std::shared_ptr<AdapterObjects>, boost::noncopyable>(
      "AdapterObjects", "The objects every adapter of an interpreter calls (internal).", bp::no_init)
      .def("__init__", bp::make_constructor(&MakeAdapterObjects, bp::default_call_policies(),
                                            (bp::arg("call_infer_meta"), bp::arg("execute_ctx"), bp::arg("compile_vars"),
                                             bp::arg("launch_ctx"))));
}

}  // namespace ge::py
