// frame_context.h: the contextvars.Context an execute frame keeps and enters around each call.
//
// Binding ge.custom_op's execute ContextVar with PyContextVar_Set/Reset costs a
// token and two HAMT objects per call. An ExecuteFrame (dispatch.h) instead
// keeps one Context per op: a copy of the context current when the frame is
// first used (PyContext_CopyCurrent), with the ContextVar set in it to the
// frame's reusable context view. A call enters it (PyContext_Enter), calls, and
// exits (PyContext_Exit): nothing is allocated. See share/docs/host-design.md,
// "Borrowed objects", and share/docs/plugin-authors.md, get_execute_ctx.
//
// Preconditions for every function: the GIL is held with the thread state of
// the interpreter that owns the Context. Not thread-safe beyond that (one frame
// is used by one call at a time; ExecuteFrame's busy flag).
#pragma once

#include <Python.h>

#include "py_ref.h"

namespace ge::py {

class FrameContext {
 public:
  // Enters the frame's Context (made on first use) with `var` bound to `view`
  // in it (set again only when the Context does not already bind `view`).
  // False, with no Python error pending and nothing entered, when the Context
  // cannot be used (not made, already entered, or CPython's layout is not the
  // one checked below): the caller binds `var` its own way (set/reset).
  // A Python error raised by the set itself is left pending and true is not
  // returned: `*failed` is set instead (the caller reports the error).
  bool Enter(PyObject* var, PyObject* view, bool* failed);
  // Leaves the Context entered by Enter, records what it now binds `var` to,
  // and keeps a pending error (the callback's) pending, untouched.
  void Exit(PyObject* var);
  // True when the Context binds `view` and nothing but the Context reaches
  // the mapping that holds it (no contextvars copy, nor a copy's derivative,
  // shares any part of it): `view`'s reference from there is the Context's
  // alone. Valid between calls (the Context is unreachable then).
  bool HoldsOnly(PyObject* view) const;
  // Drops the Context (the next Enter makes a new one).
  void Reset() noexcept;

 private:
  InterpreterRef context_;
  // What the Context bound `var` to after the last call; compared by address
  // only, never dereferenced (while the Context binds it, it is alive).
  PyObject* bound_view_ = nullptr;
  PyObject* bound_var_ = nullptr;
  bool unusable_ = false;  // the layout check failed: never tried again
};

}  // namespace ge::py
