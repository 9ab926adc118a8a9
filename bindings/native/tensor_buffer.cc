// tensor_buffer.cc: the zero-copy buffer exporter behind Tensor.data and malloc_workspace_buffer.
#include <memory>
#include <string>
#include <vector>

#include "errors.h"
#include "views.h"

namespace ge::py {

namespace {

// The buffer exporter behind Tensor.data: a tiny type implementing the
// buffer protocol (a memoryview over it is zero-copy). It keeps the tensor's
// buffer owner alive, so a view kept past the callback never reads freed memory;
// the memoryview itself is released when the callback's lease expires.
struct TensorBufferObject {
  PyObject_HEAD
  void* buf;
  Py_ssize_t len;
  Py_ssize_t itemsize;
  int readonly;
  int ndim;
  char format[4];
  Py_ssize_t shape[ge::kMaxDimNum + 1];
  Py_ssize_t strides[ge::kMaxDimNum + 1];
  std::shared_ptr<void>* keep;
};

int TensorBufferGet(PyObject* self, Py_buffer* view, int flags) {
  auto* o = reinterpret_cast<TensorBufferObject*>(self);
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && o->readonly) {
    PyErr_SetString(PyExc_BufferError, "tensor data is read-only");
    return -1;
  }
  view->obj = Py_NewRef(self);
  view->buf = o->buf;
  view->len = o->len;
  view->readonly = o->readonly;
  view->itemsize = o->itemsize;
  view->format = (flags & PyBUF_FORMAT) ? o->format : nullptr;
  view->ndim = o->ndim;
  view->shape = (flags & PyBUF_ND) ? o->shape : nullptr;
  view->strides = ((flags & PyBUF_STRIDES) == PyBUF_STRIDES) ? o->strides : nullptr;
  view->suboffsets = nullptr;
  view->internal = nullptr;
  return 0;
}

void TensorBufferDealloc(PyObject* self) {
  auto* o = reinterpret_cast<TensorBufferObject*>(self);
  PyTypeObject* type = Py_TYPE(self);
  delete o->keep;
  type->tp_free(self);
  Py_DECREF(type);  // an instance of a heap type holds a reference to it
}

PyType_Slot g_tensor_buffer_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(TensorBufferDealloc)},
    {Py_bf_getbuffer, reinterpret_cast<void*>(TensorBufferGet)},
    {Py_tp_doc, const_cast<char*>("Buffer exporter behind Tensor.data (internal).")},
    {0, nullptr},
};

PyType_Spec g_tensor_buffer_spec = {
    "_ge_native._TensorBuffer", static_cast<int>(sizeof(TensorBufferObject)), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION, g_tensor_buffer_slots,
};

// The exporter type: a heap type (PyType_FromSpec) made once at module init in
// the main interpreter and kept for the process; one type for every
// interpreter. Per-interpreter types would need per-interpreter module state,
// which the single-phase, Boost.Python-built _ge_native does not have, and a
// lookup on every Tensor.data; the type holds no Python state of its own (no
// dict entries a plugin could change: it is immutable), so sharing it is what
// the shared Boost.Python classes already do (share/docs/host-design.md, "Interpreters").
PyTypeObject* g_tensor_buffer_type = nullptr;

}  // namespace

void RegisterTensorBuffer() {
  if (g_tensor_buffer_type != nullptr) return;
  PyObject* t = PyType_FromSpec(&g_tensor_buffer_spec);
  if (t == nullptr) bp::throw_error_already_set();
  g_tensor_buffer_type = reinterpret_cast<PyTypeObject*>(t);  // one reference, never dropped
}

// A memoryview over `buf` (C-contiguous `shape` of `itemsize`-byte `fmt`
// elements) through a TensorBufferObject that keeps `keep` alive: views derived
// from it (casts, slices) can never reach freed memory. The memoryview itself
// is registered with `lease` and released when the callback ends.
bp::object MakeBufferView(void* buf, std::size_t len, bool readonly, char fmt, Py_ssize_t itemsize,
                          const std::vector<Py_ssize_t>& shape, std::shared_ptr<void> keep, const LeasePtr& lease) {
  auto* o = PyObject_New(TensorBufferObject, g_tensor_buffer_type);
  if (o == nullptr) bp::throw_error_already_set();
  o->keep = new std::shared_ptr<void>(std::move(keep));
  o->buf = buf;
  o->len = static_cast<Py_ssize_t>(len);
  o->readonly = readonly ? 1 : 0;
  o->format[0] = fmt;
  o->format[1] = '\0';
  o->itemsize = itemsize;
  o->ndim = static_cast<int>(shape.size());
  Py_ssize_t stride = itemsize;
  for (int i = o->ndim - 1; i >= 0; --i) {
    o->shape[i] = shape[static_cast<std::size_t>(i)];
    o->strides[i] = stride;
    stride *= o->shape[i];
  }
  if (stride != o->len) {
    Py_DECREF(o);
    RaiseRuntimeError("buffer of " + std::to_string(len) + " bytes does not match its shape");
  }
  PyObject* mv = PyMemoryView_FromObject(reinterpret_cast<PyObject*>(o));
  Py_DECREF(o);
  if (mv == nullptr) bp::throw_error_already_set();
  if (lease != Lease::Owned()) lease->AdoptMemoryView(mv);
  return bp::object(bp::handle<>(mv));
}

}  // namespace ge::py
