// interpreter.h: the embedded CPython runtime, its interpreters, and the RAII
// guard through which every piece of host code enters one of them.
//
// Locking policy (read before changing anything here):
//  * Python code of any interpreter runs only while holding the GIL (3.11: one
//    GIL shared by all sub-interpreters), with that interpreter's thread state
//    current. InterpreterGuard is the only way host code gets there.
//  * Never wait for a C++ lock while holding the GIL unless that lock is a leaf
//    lock: one whose holders never wait for the GIL. Interpreter::mu_ and the
//    log sink's mutex are leaf locks. Anything else (the op registry, engine
//    state) must be taken before entering an interpreter, or after leaving it.
//  * PyGILState_* is never used: with sub-interpreters it picks the wrong
//    interpreter or deadlocks. A thread gets one thread state per interpreter
//    it enters (created on first use, destroyed when the interpreter ends).
#pragma once

#include <Python.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ge/host/plugin_host.h"  // kThreadJoinTimeoutS

namespace ge::host {

class Interpreter;

// The process-wide CPython runtime (one per process: CPython cannot be
// re-initialized once Boost.Python classes exist). Initialized on first Get()
// with Debian's /usr/bin/python3 as program name, no signal handlers, no argv
// parsing, the `_ge_native` module built in and imported, with `ge` and
// `ge.custom_op`, in the main interpreter before any sub-interpreter exists.
// Finalized at process exit when every sub-interpreter was ended cleanly.
class PythonRuntime {
 public:
  // `package_dir` holds the `ge` package (and is put first on sys.path of every
  // interpreter). The first call decides; later calls must pass the same dir.
  // Throws std::runtime_error when initialization fails.
  static std::shared_ptr<PythonRuntime> Get(const std::string& package_dir);

  // The runtime if Get() was called before, else null.
  static std::shared_ptr<PythonRuntime> Current();

  const std::shared_ptr<Interpreter>& Main() const noexcept { return main_; }
  const std::string& PackageDir() const noexcept { return package_dir_; }
  // Marks that an interpreter could not be ended (a plugin thread is still
  // running): finalization at exit is then skipped, never forced.
  void MarkUnclean() noexcept { unclean_ = true; }
  bool Unclean() const noexcept { return unclean_; }

  ~PythonRuntime();
  PythonRuntime(const PythonRuntime&) = delete;
  PythonRuntime& operator=(const PythonRuntime&) = delete;

 private:
  explicit PythonRuntime(std::string package_dir);
  std::string package_dir_;
  std::shared_ptr<Interpreter> main_;
  std::atomic<bool> unclean_{false};
};

// One interpreter: the main one or a sub-interpreter of one plugin.
class Interpreter {
 public:
  // Creates a sub-interpreter. Precondition: the calling thread holds no
  // interpreter (no InterpreterGuard alive on it). The new interpreter has the
  // runtime's package dir on sys.path. Throws std::runtime_error on failure.
  static std::shared_ptr<Interpreter> NewSub(const std::shared_ptr<PythonRuntime>& runtime, const std::string& name);

  // This thread's thread state in this interpreter (created on first use).
  // Takes mu_ (a leaf lock); callable with or without the GIL.
  PyThreadState* ThreadState();

  // Ends a sub-interpreter: joins the threads its code started for at most
  // `thread_timeout_s`; if any is still running the interpreter is kept (never
  // aborted, never blocked on) and false is returned. Precondition: no Python
  // object of this interpreter is still referenced from C++, and no guard of it
  // is alive on any thread. No-op (true) for the main interpreter.
  bool End(double thread_timeout_s = kThreadJoinTimeoutS);

  bool is_main() const noexcept { return is_main_; }
  bool ended() const noexcept { return ended_; }
  const std::string& name() const noexcept { return name_; }
  PyInterpreterState* state() const noexcept { return interp_; }
  uint64_t id() const noexcept { return id_; }

  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

 private:
  friend class PythonRuntime;
  Interpreter(std::string name, bool is_main, PyInterpreterState* interp, PyThreadState* first);

  std::string name_;
  bool is_main_;
  PyInterpreterState* interp_;
  uint64_t id_;
  std::shared_ptr<PythonRuntime> runtime_;  // null for the main interpreter (the runtime owns it)
  std::mutex mu_;                           // leaf lock: guards threads_
  std::map<std::thread::id, PyThreadState*> threads_;
  bool ended_ = false;
  bool kept_ = false;  // End() found plugin threads still running: kept until exit, never retried
};

// RAII: makes `interp` current on this thread (acquiring the GIL, or swapping
// thread states when this thread already holds it through an outer guard) and
// restores the previous state on destruction. Bound to the creating thread;
// not copyable or movable. Nesting is allowed, strictly LIFO.
class InterpreterGuard {
 public:
  explicit InterpreterGuard(Interpreter& interp);
  ~InterpreterGuard();
  InterpreterGuard(const InterpreterGuard&) = delete;
  InterpreterGuard& operator=(const InterpreterGuard&) = delete;

  // True when some guard is alive on this thread.
  static bool Active() noexcept;

 private:
  PyThreadState* mine_;
  PyThreadState* previous_ = nullptr;  // non-null when nested
  std::thread::id thread_;
};

// RAII: releases the GIL held by the current guard for C++ work (kernels, I/O),
// re-acquiring the same thread state at scope end.
class GilRelease {
 public:
  GilRelease() : saved_(PyEval_SaveThread()) {}
  ~GilRelease() { PyEval_RestoreThread(saved_); }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* saved_;
};

}  // namespace ge::host
