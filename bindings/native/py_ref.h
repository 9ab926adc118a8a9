// py_ref.h: the owning handles of a PyObject* (OwnedRef, InterpreterRef).
//
// Both hold one strong reference and are move-only. They are built with
// Steal(p) (p is a new reference the handle takes over, e.g. a C-API result)
// or Borrow(p) (p is borrowed; the handle adds its own reference), so each
// call site shows whose reference it is. A null p gives an empty handle.
//
//   OwnedRef       a scoped reference: the destructor drops it. Use for
//                  references that live within a call made with the GIL held.
//   InterpreterRef a reference kept in a long-lived C++ object: the
//                  destructor never touches Python (it may run at shutdown,
//                  on any thread, with no interpreter current); the owner calls
//                  Reset() with the interpreter current. One still held at
//                  destruction is leaked and logged as an error.
#pragma once

#include <Python.h>

#include <utility>

namespace ge::py {

// Precondition for destruction, reset() and move-assignment onto a non-empty
// handle: the GIL is held with the thread state of the interpreter that owns
// the object current.
class OwnedRef {
 public:
  OwnedRef() = default;
  // Takes over `p`, a new reference (may be null: an empty handle).
  static OwnedRef Steal(PyObject* p) noexcept { return OwnedRef(p); }
  // Adds a reference to `p`, a borrowed reference (may be null).
  static OwnedRef Borrow(PyObject* p) noexcept {
    Py_XINCREF(p);
    return OwnedRef(p);
  }

  ~OwnedRef() { Py_XDECREF(p_); }
  OwnedRef(OwnedRef&& o) noexcept : p_(o.release()) {}
  OwnedRef& operator=(OwnedRef&& o) noexcept {
    if (this != &o) {
      PyObject* old = std::exchange(p_, o.release());
      Py_XDECREF(old);  // last: a finalizer run here never sees a dangling handle
    }
    return *this;
  }
  OwnedRef(const OwnedRef&) = delete;
  OwnedRef& operator=(const OwnedRef&) = delete;

  // Borrowed pointer (may be null), valid while this handle holds it.
  PyObject* get() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  // Hands the reference out (the caller owns it now); the handle is empty.
  [[nodiscard]] PyObject* release() noexcept { return std::exchange(p_, nullptr); }
  // Drops the reference (Py_CLEAR); the handle is empty.
  void reset() noexcept { Py_XDECREF(release()); }

 private:
  explicit OwnedRef(PyObject* p) noexcept : p_(p) {}
  PyObject* p_ = nullptr;
};

// A reference held by a long-lived C++ object (one per interpreter object it
// keeps). Destruction, moves and get() need no GIL; only Borrow() and Reset()
// touch Python and need the owning interpreter current.
class InterpreterRef {
 public:
  InterpreterRef() = default;
  static InterpreterRef Steal(PyObject* p) noexcept { return InterpreterRef(p); }
  // Precondition: the owning interpreter is current.
  static InterpreterRef Borrow(PyObject* p) noexcept {
    Py_XINCREF(p);
    return InterpreterRef(p);
  }

  // Never touches Python: a reference still held is leaked and logged
  // ("host" logger, error). Defined in py_ref.cc.
  ~InterpreterRef();
  InterpreterRef(InterpreterRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  // Swaps: a reference this handle held moves to `o` (and is released or
  // reported with it), so assignment never touches Python either.
  InterpreterRef& operator=(InterpreterRef&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  InterpreterRef(const InterpreterRef&) = delete;
  InterpreterRef& operator=(const InterpreterRef&) = delete;

  // Borrowed pointer (may be null), valid until Reset().
  PyObject* get() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  // Drops the reference; the handle is empty.
  // Precondition: the owning interpreter is current (GIL held).
  void Reset() noexcept { Py_XDECREF(std::exchange(p_, nullptr)); }

 private:
  explicit InterpreterRef(PyObject* p) noexcept : p_(p) {}
  PyObject* p_ = nullptr;
};

}  // namespace ge::py
