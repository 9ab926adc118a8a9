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
  PyTypeObject* type = Py_TYPE(self);
  Py_XDECREF(p->fget);
  Py_XDECREF(p->fset);
  Py_XDECREF(p->doc);
  type->tp_free(self);
  Py_DECREF(type);  // an instance of a heap type holds a reference to it
}

PyObject* FrozenDoc(PyObject* self, void*) {
  PyObject* d = reinterpret_cast<FrozenPropertyObject*>(self)->doc;
  return Py_NewRef(d ? d : Py_None);
}

PyGetSetDef g_frozen_getset[] = {{"__doc__", FrozenDoc, nullptr, nullptr, nullptr}, {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot g_frozen_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(FrozenDealloc)},
    {Py_tp_descr_get, reinterpret_cast<void*>(FrozenGet)},
    {Py_tp_descr_set, reinterpret_cast<void*>(FrozenSet)},
    {Py_tp_getset, g_frozen_getset},
    {Py_tp_doc, const_cast<char*>("A read-only replacement of property for the classes shared by all interpreters.")},
    {0, nullptr},
};

PyType_Spec g_frozen_spec = {
    "_ge_native.frozen_property", static_cast<int>(sizeof(FrozenPropertyObject)), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION, g_frozen_slots,
};

// The frozen_property type: a heap type (PyType_FromSpec), made once, in the
// interpreter that initializes _ge_native (the main one), and kept for the
// process. One type for every interpreter, like the Boost.Python classes it
// serves: its instances sit in those shared classes' dicts (share/docs/host-design.md,
// "Interpreters").
PyTypeObject* FrozenPropertyType() {
  static PyTypeObject* type = [] {
    PyObject* t = PyType_FromSpec(&g_frozen_spec);
    if (t == nullptr) bp::throw_error_already_set();
    return reinterpret_cast<PyTypeObject*>(t);  // one reference, never dropped
  }();
  return type;
}

}  // namespace

bp::object RefuseInit(bp::tuple args, bp::dict) {
  bp::object self = args[0];
  std::string name = bp::extract<std::string>(self.attr("__class__").attr("__name__"));
  RaiseTypeError(name + " cannot be constructed from Python: it is a borrowed native view handed to callbacks");
}

void FreezeClass(bp::object cls) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  PyTypeObject* frozen_type = FrozenPropertyType();
  PyObject* dict = type->tp_dict;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  std::vector<std::pair<PyObject*, PyObject*>> replace;
  while (PyDict_Next(dict, &pos, &key, &value)) {
    if (!PyObject_TypeCheck(value, &PyProperty_Type)) continue;
    auto* fp = PyObject_New(FrozenPropertyObject, frozen_type);
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
