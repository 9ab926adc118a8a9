// frame_context.cc: the per-frame contextvars.Context of execute (frame_context.h).
#include "frame_context.h"

#include <cstring>

namespace ge::py {

namespace {

// CPython does not expose whether a Context's mapping (a HAMT) is shared with
// copies, which decides whether a view it binds may be re-pointed at the next
// call. These mirror CPython's own layouts (Include/internal/pycore_context.h
// and pycore_hamt.h, Python/hamt.c; the same from 3.7 to 3.13); they are
// checked at run time (type names and sizes) before any use, and a mismatch
// turns the frame Context off (the set/reset path is used instead).
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 && !defined(Py_GIL_DISABLED)
#define GE_FRAME_CONTEXT 1
struct ContextLayout {
  PyObject_HEAD
  PyObject* prev;
  PyObject* vars;  // the HAMT
  PyObject* weakreflist;
  int entered;
};
struct HamtLayout {
  PyObject_HEAD
  PyObject* root;
  PyObject* weakreflist;
  Py_ssize_t count;
};
struct BitmapNodeLayout {
  PyObject_VAR_HEAD
  uint32_t bitmap;
  PyObject* array[1];  // Py_SIZE entries: key, value pairs; a null key: value is a sub-node
};
struct ArrayNodeLayout {
  PyObject_HEAD
  PyObject* array[32];  // sub-nodes, may be null
  Py_ssize_t count;
};
#else
#define GE_FRAME_CONTEXT 0
#endif

#if GE_FRAME_CONTEXT
bool IsType(PyObject* o, const char* name) { return std::strcmp(Py_TYPE(o)->tp_name, name) == 0; }

// True when `node` and every node under it have one reference: no other
// mapping (a copy's, after a set in it) shares them.
bool NodeExclusive(PyObject* node, int depth) {
  if (node == nullptr || Py_REFCNT(node) != 1 || depth > 8) return false;
  if (IsType(node, "hamt_bitmap_node")) {
    auto* b = reinterpret_cast<BitmapNodeLayout*>(node);
    for (Py_ssize_t i = 0; i + 1 < Py_SIZE(node); i += 2) {
      if (b->array[i] == nullptr && !NodeExclusive(b->array[i + 1], depth + 1)) return false;
    }
    return true;
  }
  if (IsType(node, "hamt_array_node")) {
    auto* a = reinterpret_cast<ArrayNodeLayout*>(node);
    for (PyObject* sub : a->array) {
      if (sub != nullptr && !NodeExclusive(sub, depth + 1)) return false;
    }
    return true;
  }
  return IsType(node, "hamt_collision_node");  // keys and values only
}

PyObject* VarsOf(PyObject* context) { return reinterpret_cast<ContextLayout*>(context)->vars; }

// The layout above is CPython's: checked once per Context made.
bool LayoutMatches(PyObject* context) {
  if (!PyContext_CheckExact(context) || Py_TYPE(context)->tp_basicsize != static_cast<Py_ssize_t>(sizeof(ContextLayout))) {
    return false;
  }
  auto* c = reinterpret_cast<ContextLayout*>(context);
  if (c->prev != nullptr || c->entered != 0 || c->vars == nullptr) return false;
  PyObject* hamt = c->vars;
  if (!IsType(hamt, "hamt") || Py_TYPE(hamt)->tp_basicsize != static_cast<Py_ssize_t>(sizeof(HamtLayout))) return false;
  PyObject* root = reinterpret_cast<HamtLayout*>(hamt)->root;
  return root != nullptr && (IsType(root, "hamt_bitmap_node") || IsType(root, "hamt_array_node"));
}
#endif

}  // namespace

bool FrameContext::Enter(PyObject* var, PyObject* view, bool* failed) {
  *failed = false;
#if GE_FRAME_CONTEXT
  if (unusable_) return false;
  if (!context_) {
    PyObject* made = PyContext_CopyCurrent();
    if (made == nullptr) {
      PyErr_Clear();
      return false;
    }
    context_ = InterpreterRef::Steal(made);
    bound_view_ = bound_var_ = nullptr;
    if (!LayoutMatches(made)) {
      context_.Reset();
      unusable_ = true;
      return false;
    }
  }
  if (PyContext_Enter(context_.get()) < 0) {  // already entered (cannot happen while the frame is not busy)
    PyErr_Clear();
    return false;
  }
  if (bound_view_ != view || bound_var_ != var) {
    // The view was replaced (a plugin kept the old one) or never bound: set it
    // in the frame's Context and keep it set (no reset; the token is dropped).
    PyObject* token = PyContextVar_Set(var, view);
    if (token == nullptr) {
      PyObject *t = nullptr, *v = nullptr, *tb = nullptr;
      PyErr_Fetch(&t, &v, &tb);
      if (PyContext_Exit(context_.get()) < 0) PyErr_Clear();
      PyErr_Restore(t, v, tb);
      bound_view_ = bound_var_ = nullptr;
      *failed = true;
      return false;
    }
    Py_DECREF(token);
    bound_view_ = view;
    bound_var_ = var;
  }
  return true;
#else
  (void)var;
  (void)view;
  return false;
#endif
}

void FrameContext::Exit(PyObject* var) {
  PyObject *t = nullptr, *v = nullptr, *tb = nullptr;
  const bool pending = PyErr_Occurred() != nullptr;
  if (pending) PyErr_Fetch(&t, &v, &tb);
  // What the Context binds now (the callback may have set the variable itself).
  PyObject* value = nullptr;
  if (PyContextVar_Get(var, nullptr, &value) < 0) {
    PyErr_Clear();
    value = nullptr;
  }
  bound_view_ = value;  // compared by address only
  bound_var_ = value != nullptr ? var : nullptr;
  Py_XDECREF(value);
  if (PyContext_Exit(context_.get()) < 0) {
    // The thread state references another Context (a C extension switched it
    // without switching back): do not use this one again.
    PyErr_Clear();
    context_.Reset();
    bound_view_ = bound_var_ = nullptr;
  }
  if (pending) PyErr_Restore(t, v, tb);
}

bool FrameContext::HoldsOnly(PyObject* view) const {
#if GE_FRAME_CONTEXT
  if (!context_ || bound_view_ != view || view == nullptr) return false;
  PyObject* hamt = VarsOf(context_.get());
  return Py_REFCNT(hamt) == 1 && NodeExclusive(reinterpret_cast<HamtLayout*>(hamt)->root, 0);
#else
  (void)view;
  return false;
#endif
}

void FrameContext::Reset() noexcept {
  context_.Reset();
  bound_view_ = bound_var_ = nullptr;
  unusable_ = false;
}

}  // namespace ge::py
