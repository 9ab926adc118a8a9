// ge/crash_report.h: what a process's last words name when a plugin crashes it.
//
// A fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) raised outside
// kernel code (kernel crashes are reported by the CPU backend, see
// ge/engine/cpu_backend.h) ends the process with the signal's default action,
// as before; with the report installed, one line is written first naming what
// the crashing thread was doing, e.g.
//   ge-run: error: fatal signal SIGSEGV while loading plugin 'p' (/opp/p.py)
// followed by the hint the tool gave. Nothing is allocated in the handler
// (write(2) only). Handlers installed before ours (an embedding engine's) are
// called after the report, so they keep working.
//
// With the report installed, a process exit through exit() while a loading
// breadcrumb is active on the exiting thread (a library constructor or a
// plugin's module code calling exit(0), exit(3)) is reported too, by an
// exit handler registered once (on_exit; write(2) then _exit):
//   ge-run: error: op library /opp/lib.so called exit(0) while loading
// The loading breadcrumb's text is "loading <subject>"; the report names the
// subject. The process then ends with exit's code, or 1 when that was 0 (never
// a success). _exit()/_Exit() and quick_exit() skip exit handlers: a library
// calling them in its constructors ends the process unreported.
// A C++ exception escaping a static constructor while loading (the dynamic
// loader cannot pass it on, so std::terminate runs) is reported by the
// terminate handler the report installs, before the abort, naming the
// exception's type and what():
//   ge-run: error: C++ exception std::runtime_error (what(): no config) escaped while loading op library /opp/lib.so
// (the SIGABRT that follows is not reported again); the handler installed
// before ours runs after it.
#pragma once

#include <string>

namespace ge {

// The exception being handled (in a catch block or a terminate handler),
// described: its demangled type, then " (what(): ...)" for a
// std::exception; "" when there is none. Thread-safe; may allocate; throws
// only std::bad_alloc.
std::string DescribeCurrentException();

// Installs the report (idempotent; later calls replace prefix and hint). The
// hint is printed after the report only when the crashing breadcrumb is a
// loading one (what the registry can record and a tool can skip). It also
// gives the calling thread an alternate signal stack if it has none (so that a
// stack overflow on it is reported; restored and freed at the thread's exit).
// `prefix` and `hint` are borrowed and must stay valid for the process's
// life (string literals); `hint` may be null. Thread-safe.
void InstallCrashReport(const char* prefix, const char* hint);

// RAII breadcrumb: while alive, a fatal signal on this thread is reported as
// happening "while <what>". Nests (the innermost wins, the outer one comes
// back). `what` is borrowed: it must outlive the breadcrumb. Bound to the thread
// that made it; cost: two thread-local stores.
class CrashBreadcrumb {
 public:
  enum class Phase { kLoading, kOther };
  explicit CrashBreadcrumb(const char* what, Phase phase = Phase::kOther) noexcept;
  ~CrashBreadcrumb();
  CrashBreadcrumb(const CrashBreadcrumb&) = delete;
  CrashBreadcrumb& operator=(const CrashBreadcrumb&) = delete;

 private:
  const char* previous_;
  bool previous_loading_;
};

}  // namespace ge
