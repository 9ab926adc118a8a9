// interpreter.cc: runtime initialization, sub-interpreters, thread states, guards.
#include "interpreter.h"

#include <csignal>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include "ge/crash_report.h"
#include "ge/log_spdlog.h"
#include "ge/text.h"

extern "C" PyObject* PyInit__ge_native();

namespace ge::host {

namespace {

std::atomic<uint64_t> g_next_id{1};
std::atomic<int> g_live_subs{0};

// The thread-locals below are read on every InterpreterGuard (each Python
// callback). In a shared library the default (global/local-dynamic) TLS model
// reaches them through __tls_get_addr; the initial-exec model is a plain
// offset from the thread pointer. They are small (tens of bytes), so the
// static TLS block glibc reserves for libraries loaded with dlopen (the
// _ge_native module, plugin loaders) holds them (the dispatch target in
// share/docs/host-design.md, "Targets").
#define GE_HOST_TLS __attribute__((tls_model("initial-exec")))
thread_local int t_guard_depth GE_HOST_TLS = 0;

// Per-thread cache of (interpreter id -> thread state); ids are never reused, so
// an entry of an ended interpreter is never looked up again.
struct TsCacheEntry {
  uint64_t id;
  PyThreadState* ts;
};
// The main thread's thread_local destructors run before atexit handlers
// (glibc's exit()), and FinalizeAtExit still looks its thread state up: once
// the cache is destroyed, lookups bypass it (t_ts_cache_gone).
thread_local bool t_ts_cache_gone GE_HOST_TLS = false;
struct TsCache {
  std::vector<TsCacheEntry> entries;
  ~TsCache() { t_ts_cache_gone = true; }
};
thread_local TsCache t_ts_cache GE_HOST_TLS;

std::mutex g_runtime_mu;  // guards g_runtime; never held with the GIL
std::shared_ptr<PythonRuntime> g_runtime;

std::string FetchError(const char* what) {
  std::string msg = what;
  if (PyErr_Occurred()) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    PyObject* s = v ? PyObject_Str(v) : nullptr;
    const char* text = s ? PyUnicode_AsUTF8(s) : nullptr;
    msg += std::string(": ") + (t ? reinterpret_cast<PyTypeObject*>(t)->tp_name : "") + ": " + (text ? text : "?");
    PyErr_Clear();
    Py_XDECREF(s);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
  }
  return msg;
}

bool PrependSysPath(const std::string& dir) {
  PyObject* path = PySys_GetObject("path");  // borrowed
  if (path == nullptr || !PyList_Check(path)) return false;
  PyObject* entry = PyUnicode_FromString(dir.c_str());
  if (entry == nullptr) return false;
  const int rc = PyList_Insert(path, 0, entry);
  Py_DECREF(entry);
  return rc == 0;
}

// In the current interpreter: runs its atexit handlers on a thread of their
// own, then joins the threads its plugins started (daemon ones too when
// `daemon`), for at most `timeout_s` each; returns what is still running, as
// "'name' (plugin 'p'), ..." ("" when nothing). A blocking atexit handler is
// listed as 'ge-atexit'. Precondition: the GIL is held.
std::string FinishPluginThreads(double timeout_s, bool daemon) {
  std::string still_running;
  PyObject* mods = PyImport_GetModuleDict();                                  // borrowed
  PyObject* ldr = mods ? PyDict_GetItemString(mods, "ge._entry") : nullptr;  // borrowed
  if (ldr == nullptr) return still_running;
  PyObject* done = PyObject_CallMethod(ldr, "run_atexit_handlers", "d", timeout_s);
  // Its runner is a daemon thread: join_threads lists it only when `daemon`.
  if (done == Py_False && !daemon) still_running = "'ge-atexit' (an atexit handler)";
  Py_XDECREF(done);
  PyErr_Clear();
  PyObject* r = PyObject_CallMethod(ldr, "join_threads", "di", timeout_s, daemon ? 1 : 0);
  if (r != nullptr && PyList_Check(r)) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(r); ++i) {
      const char* s = PyUnicode_AsUTF8(PyList_GET_ITEM(r, i));
      still_running += (still_running.empty() ? "" : ", ") + std::string(s ? s : "?");
    }
  }
  Py_XDECREF(r);
  PyErr_Clear();
  // What its plugins printed without a final newline (their handlers' too).
  PyObject* flushed = PyObject_CallMethod(ldr, "flush_streams", nullptr);
  Py_XDECREF(flushed);
  PyErr_Clear();
  return still_running;
}

void FinalizeAtExit() {
  std::shared_ptr<PythonRuntime> rt;
  {
    std::lock_guard<std::mutex> lock(g_runtime_mu);
    rt = g_runtime;
  }
  if (!rt) return;
  auto log = Logger("host");
  if (rt->Unclean() || g_live_subs.load() != 0) {
    // A sub-interpreter is still alive (a plugin thread kept running, or an
    // embedder leaked a host): finalizing could abort or hang; let the process
    // exit without it.
    log->warn("Python is not finalized at exit: {} sub-interpreter(s) still alive", g_live_subs.load());
    return;
  }
  if (InterpreterGuard::Active()) return;
  PyEval_RestoreThread(rt->Main()->ThreadState());
  // Py_FinalizeEx waits for every non-daemon thread without a limit: a thread a
  // main-isolation plugin started would hang the exit. They get the bounded
  // time sub-interpreters get; if one is still running, Python is not finalized.
  const std::string still_running = FinishPluginThreads(kThreadJoinTimeoutS, /*daemon=*/false);
  if (!still_running.empty()) {
    PyEval_SaveThread();
    log->warn("Python is not finalized at exit: thread(s) started in the main interpreter are still running after "
              "{} s: {}",
              kThreadJoinTimeoutS, still_running);
    return;
  }
  CrashBreadcrumb crumb("finalizing Python at exit (plugins' atexit handlers, __del__ methods, module clean-up)");
  if (Py_FinalizeEx() < 0) log->warn("Py_FinalizeEx reported an error while flushing buffered data");
}

}  // namespace

// ---- PythonRuntime --------------------------------------------------------------------

std::shared_ptr<PythonRuntime> PythonRuntime::Get(const std::string& package_dir) {
  std::lock_guard<std::mutex> lock(g_runtime_mu);
  if (g_runtime) {
    if (g_runtime->PackageDir() != package_dir) {
      Logger("host")->warn("Python runtime already uses the ge package at {}; ignoring {}", g_runtime->PackageDir(),
                           package_dir);
    }
    return g_runtime;
  }
  g_runtime.reset(new PythonRuntime(package_dir));
  std::atexit(&FinalizeAtExit);
  return g_runtime;
}

std::shared_ptr<PythonRuntime> PythonRuntime::Current() {
  std::lock_guard<std::mutex> lock(g_runtime_mu);
  return g_runtime;
}

PythonRuntime::PythonRuntime(std::string package_dir) : package_dir_(std::move(package_dir)) {
  if (Py_IsInitialized()) {
    throw std::runtime_error("Python is already initialized in this process by someone else; the plugin host must "
                             "initialize it (it builds in _ge_native before initialization)");
  }
  if (PyImport_AppendInittab("_ge_native", &PyInit__ge_native) < 0) {
    throw std::runtime_error("PyImport_AppendInittab(_ge_native) failed");
  }
  // The engine's SIGINT disposition, as it is before Python starts: importing
  // `signal` in the main interpreter installs Python's own SIGINT handler
  // when it finds the default (KeyboardInterrupt in plugin code); it is put
  // back below, so Ctrl-C does to the process what the engine says.
  struct sigaction engine_sigint {};
  const bool have_sigint = ::sigaction(SIGINT, nullptr, &engine_sigint) == 0;
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.parse_argv = 0;
  config.install_signal_handlers = 0;  // the engine owns SIGINT etc.
  config.use_environment = 0;          // PYTHONPATH / PYTHONHOME of the caller must not change the host
  config.user_site_directory = 0;
  config.safe_path = 1;
  config.buffered_stdio = 0;
  // `site` runs once, in the main interpreter (below); sub-interpreters copy
  // the resulting sys.path instead of re-running it (it costs ~6 ms and
  // imports sitecustomize in every plugin otherwise).
  config.site_import = 0;
  PyStatus st = PyConfig_SetString(&config, &config.program_name, L"/usr/bin/python3");
  if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st)) {
    throw std::runtime_error(std::string("Python initialization failed: ") + (st.err_msg ? st.err_msg : "unknown") +
                             (st.func ? std::string(" (in ") + st.func + ")" : ""));
  }
  // Main interpreter: the package on sys.path, the native module and the
  // package imported before any sub-interpreter exists (share/docs/host-design.md, "Interpreters").
  std::string error;
  PyObject* site = PyImport_ImportModule("site");
  PyObject* site_done = site ? PyObject_CallMethod(site, "main", nullptr) : nullptr;  // no_site is set: run it once here
  if (site_done == nullptr) error = FetchError("cannot run site.main()");
  Py_XDECREF(site_done);
  Py_XDECREF(site);
  if (error.empty() && !PrependSysPath(package_dir_)) error = FetchError("cannot extend sys.path");
  for (const char* mod : {"signal", "_ge_native", "ge", "ge.graph", "ge.runtime", "ge.custom_op", "ge._entry"}) {
    if (!error.empty()) break;
    PyObject* m = PyImport_ImportModule(mod);
    if (m == nullptr) error = FetchError((std::string("cannot import ") + mod + " from " + package_dir_).c_str());
    Py_XDECREF(m);
  }
  if (have_sigint) ::sigaction(SIGINT, &engine_sigint, nullptr);  // `signal` is imported by now: it stays so
  PyThreadState* main_ts = PyEval_SaveThread();
  main_ = std::shared_ptr<Interpreter>(new Interpreter("main", true, main_ts->interp, main_ts));
  if (!error.empty()) throw std::runtime_error(error);
  Logger("host")->debug("Python {} initialized; ge package at {}", Py_GetVersion(), package_dir_);
}

PythonRuntime::~PythonRuntime() = default;

// ---- Interpreter ------------------------------------------------------------------------

Interpreter::Interpreter(std::string name, bool is_main, PyInterpreterState* interp, PyThreadState* first)
    : name_(std::move(name)), is_main_(is_main), interp_(interp), id_(g_next_id.fetch_add(1)) {
  threads_[std::this_thread::get_id()] = first;
}

Interpreter::~Interpreter() {
  if (!is_main_ && !ended_) End();
}

std::shared_ptr<Interpreter> Interpreter::NewSub(const std::shared_ptr<PythonRuntime>& runtime, const std::string& name) {
  if (InterpreterGuard::Active()) {
    throw std::logic_error("Interpreter::NewSub called while this thread is inside an interpreter");
  }
  Interpreter& main = *runtime->Main();
  PyThreadState* main_ts = main.ThreadState();
  PyEval_RestoreThread(main_ts);
  // The main interpreter's sys.path (after `site`), as plain strings.
  std::vector<std::string> main_path;
  if (PyObject* mp = PySys_GetObject("path"); mp != nullptr && PyList_Check(mp)) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(mp); ++i) {
      const char* s = PyUnicode_Check(PyList_GET_ITEM(mp, i)) ? PyUnicode_AsUTF8(PyList_GET_ITEM(mp, i)) : nullptr;
      if (s != nullptr) main_path.emplace_back(s);
    }
    PyErr_Clear();
  }
  PyThreadState* sub = Py_NewInterpreter();
  if (sub == nullptr) {
    PyThreadState_Swap(main_ts);
    PyEval_SaveThread();
    throw std::runtime_error("cannot create a sub-interpreter for plugin '" + name + "'");
  }
  std::string error;
  if (PyObject* sp = PySys_GetObject("path"); sp != nullptr && PyList_Check(sp)) {
    PyObject* fresh = PyList_New(0);
    for (const auto& p : main_path) {
      PyObject* u = PyUnicode_FromString(p.c_str());
      if (u != nullptr) PyList_Append(fresh, u);
      Py_XDECREF(u);
    }
    if (fresh == nullptr || PySys_SetObject("path", fresh) < 0) error = FetchError("cannot set sys.path");
    Py_XDECREF(fresh);
  } else {
    error = "sub-interpreter has no sys.path";
  }
  std::shared_ptr<Interpreter> in(new Interpreter(name, false, sub->interp, sub));
  in->runtime_ = runtime;
  g_live_subs.fetch_add(1);
  PyThreadState_Swap(main_ts);
  PyEval_SaveThread();
  if (!error.empty()) {
    in->End();
    throw std::runtime_error(error);
  }
  return in;
}

PyThreadState* Interpreter::ThreadState() {
  if (!t_ts_cache_gone) {
    for (const auto& e : t_ts_cache.entries) {
      if (e.id == id_) return e.ts;
    }
  }
  PyThreadState* ts = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = threads_.find(std::this_thread::get_id());
    if (it != threads_.end()) {
      ts = it->second;
    } else {
      ts = PyThreadState_New(interp_);  // needs no GIL
      if (ts == nullptr) throw std::runtime_error("cannot create a thread state for interpreter '" + name_ + "'");
      threads_[std::this_thread::get_id()] = ts;
    }
  }
  if (!t_ts_cache_gone) t_ts_cache.entries.push_back({id_, ts});
  return ts;
}

bool Interpreter::End(double thread_timeout_s) {
  if (is_main_ || ended_) return true;
  if (kept_) return false;
  if (InterpreterGuard::Active()) {
    throw std::logic_error("Interpreter::End('" + name_ + "') called while this thread is inside an interpreter");
  }
  auto log = Logger("host");
  PyThreadState* mine = ThreadState();
  PyEval_RestoreThread(mine);
  // 1. Its atexit handlers, on a thread of their own, then the threads the
  // plugin started: together a bounded time to finish.
  const std::string still_running = FinishPluginThreads(thread_timeout_s, /*daemon=*/true);
  // 2. Any thread state we did not create belongs to a thread still running.
  std::set<PyThreadState*> ours;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& kv : threads_) ours.insert(kv.second);
  }
  int foreign = 0;
  for (PyThreadState* ts = PyInterpreterState_ThreadHead(interp_); ts != nullptr; ts = PyThreadState_Next(ts)) {
    if (!ours.count(ts)) ++foreign;
  }
  if (foreign > 0) {
    kept_ = true;
    PyEval_SaveThread();
    if (runtime_) runtime_->MarkUnclean();
    log->warn("plugin '{}' left {} thread(s) running{}{}; its sub-interpreter is kept until the process exits", name_,
              foreign, still_running.empty() ? "" : ": ", still_running);
    return false;
  }
  // 3. Drop the thread states we created for other threads, then end.
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& kv : threads_) {
      if (kv.second != mine) {
        PyThreadState_Clear(kv.second);
        PyThreadState_Delete(kv.second);
      }
    }
    threads_.clear();
  }
  {
    const std::string what = "ending the sub-interpreter of plugin '" + TerminalSafe(name_) + "' (its atexit handlers)";
    CrashBreadcrumb crumb(what.c_str());
    Py_EndInterpreter(mine);  // leaves no current thread state, GIL still held
  }
  ended_ = true;
  g_live_subs.fetch_sub(1);
  PyThreadState* main_ts = runtime_->Main()->ThreadState();
  PyThreadState_Swap(main_ts);
  PyEval_SaveThread();
  log->debug("sub-interpreter of plugin '{}' ended", name_);
  return true;
}

// ---- InterpreterGuard ---------------------------------------------------------------------

InterpreterGuard::InterpreterGuard(Interpreter& interp) : thread_(std::this_thread::get_id()) {
  if (interp.ended()) throw std::logic_error("interpreter '" + interp.name() + "' has already ended");
  mine_ = interp.ThreadState();
  if (t_guard_depth > 0) {
    previous_ = PyThreadState_Swap(mine_);
  } else {
    PyEval_RestoreThread(mine_);
  }
  ++t_guard_depth;
}

InterpreterGuard::~InterpreterGuard() {
  if (std::this_thread::get_id() != thread_) {
    Logger("host")->critical("InterpreterGuard destroyed on another thread than the one that made it");
  }
  --t_guard_depth;
  if (previous_ != nullptr) {
    PyThreadState_Swap(previous_);
  } else {
    PyEval_SaveThread();
  }
}

bool InterpreterGuard::Active() noexcept { return t_guard_depth > 0; }

}  // namespace ge::host
