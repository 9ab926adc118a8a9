// native_class.cc: what every native class gets: the refused __init__ (RefuseInit) and the frozen class (FreezeClass).
#include <utility>
#include <vector>

#include "errors.h"
#include "views.h"

namespace ge::py {

namespace {

// Properties of the shared classes are replaced by FrozenProperty objects:
// a `property` can be re-initialized from Python (property.__init__ again),
// which would let one plugin change every other plugin's tensors.
struct FrozenPropertyObject {
  PyObject_HEAD
  PyObject* fget;
  PyObject* fset;
  PyObject* doc;
};

PyObject* FrozenGet(PyObject* self, PyObject* obj, PyObject*) {
  auto* p = reinterpret_cast<FrozenPropertyObject*>(self);
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  return PyObject_CallOneArg(p->fget, obj);
}

int FrozenSet(PyObject* self, PyObject* obj, PyObject* value) {
  auto* p = reinterpret_cast<FrozenPropertyObject*>(self);
  if (value == nullptr || p->fset == nullptr || p->fset == Py_None) {
    PyErr_SetString(PyExc_AttributeError, value == nullptr ? "can't delete attribute" : "can't set attribute");
    return -1;
  }
  PyObject* r = PyObject_CallFunctionObjArgs(p->fset, obj, value, nullptr);
  if (r == nullptr) return -1;
  Py_DECREF(r);
  return 0;
}

void FrozenDealloc(PyObject* self) {
  auto* p = reinterpret_cast<FrozenPropertyObject*>(self);
  Py_XDECREF(p->fget);
  Py_XDECREF(p->fset);
  Py_XDECREF(p->doc);
  Py_TYPE(self)->tp_free(self);
}

PyObject* FrozenDoc(PyObject* self, void*) {
  PyObject* d = reinterpret_cast<FrozenPropertyObject*>(self)->doc;
  return Py_NewRef(d ? d : Py_None);
}

PyGetSetDef g_frozen_getset[] = {{"__doc__", FrozenDoc, nullptr, nullptr, nullptr}, {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject g_frozen_property_type = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "_ge_native.frozen_property";
  t.tp_basicsize = sizeof(FrozenPropertyObject);
  t.tp_dealloc = FrozenDealloc;
  t.tp_descr_get = FrozenGet;
  t.tp_descr_set = FrozenSet;
  t.tp_getset = g_frozen_getset;
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION;
  t.tp_doc = "A read-only replacement of property for the classes shared by all interpreters.";
  return t;
}();

}  // namespace

bp::object RefuseInit(bp::tuple args, bp::dict) {
  bp::object self = args[0];
  std::string name = bp::extract<std::string>(self.attr("__class__").attr("__name__"));
  RaiseTypeError(name + " cannot be constructed from Python: it is a borrowed native view handed to callbacks");
}

void FreezeClass(bp::object cls) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  if (PyType_Ready(&g_frozen_property_type) < 0) bp::throw_error_already_set();
  PyObject* dict = type->tp_dict;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  std::vector<std::pair<PyObject*, PyObject*>> replace;
  while (PyDict_Next(dict, &pos, &key, &value)) {
    if (!PyObject_TypeCheck(value, &PyProperty_Type)) continue;
    auto* fp = PyObject_New(FrozenPropertyObject, &g_frozen_property_type);
    if (fp == nullptr) bp::throw_error_already_set();
    fp->fget = PyObject_GetAttrString(value, "fget");
    fp->fset = PyObject_GetAttrString(value, "fset");
    fp->doc = PyObject_GetAttrString(value, "__doc__");
    PyErr_Clear();
    replace.emplace_back(key, reinterpret_cast<PyObject*>(fp));
  }
  for (auto& [k, fp] : replace) {
    PyDict_SetItem(dict, k, fp);
    Py_DECREF(fp);
  }
  // Boost.Python classes are one object shared by every interpreter (the module
  // is single-phase); forbid plugins from changing them (share/docs/host-design.md, "Interpreters").
  type->tp_flags |= Py_TPFLAGS_IMMUTABLETYPE;
  PyType_Modified(type);
}

}  // namespace ge::py
