// library_probe.h: an op library loaded alone, in a process of its own, before
// the host loads it: the one verdict the engine and the registry give it.
//
// A library loaded into a process that already holds other libraries can
// resolve a symbol another one made global (RTLD_GLOBAL), and a crash, an
// exit() or an escaping C++ exception in its static constructors ends that
// process. The host therefore first has each op library loaded by
// `ge-plugin-worker --probe-op-library PATH` (a fresh process that has loaded
// no op library; RunLibraryProbe below) and loads it itself only when the
// probe did: the registry's scanner runs the same host, so both tools give a
// library the status and reason it gets alone (share/docs/op-packages.md,
// "One verdict per library").
//
// Internal to the host. Thread-safety: ProbeOpLibraries may be called from any
// thread (the probes are its own children, reaped before it returns); it
// never holds the interpreter lock and takes no lock of the host.
#pragma once

#include <string>
#include <vector>

namespace ge::host {

struct LibraryVerdict {
  enum class Outcome {
    kLoaded,      // dlopen alone succeeded
    kRefused,     // dlopen alone failed: `message` is LoadOpLibrary's error
    kCrashed,     // a fatal signal (`signal`), or std::terminate (`exception` set, signal SIGABRT)
    kExited,      // it called exit(`exit_code`) while loading
    kHung,        // not done within the time limit (`timeout_s`; killed)
    kNotProbed,   // no probe could run (`message` says why): the caller loads it unprobed
  };
  Outcome outcome = Outcome::kNotProbed;
  std::string message;    // one line naming the library (every outcome but kLoaded)
  std::string exception;  // kCrashed by std::terminate: "TYPE (what(): ...)"
  int signal = 0;
  int exit_code = 0;
  double timeout_s = 0;
};

// Loads each of `paths` (absolute, the files as dlopen is to open them) in
// its own probe process, all at once, and waits for each up to `timeout_s`
// seconds (wall). `worker` is the ge-plugin-worker executable. The probes'
// own output (the library's constructors printing) is discarded. One verdict
// per path, in order. Throws only std::bad_alloc.
std::vector<LibraryVerdict> ProbeOpLibraries(const std::vector<std::string>& paths, const std::string& worker,
                                             double timeout_s);

// The probe's side: loads `path` with ge::plugin::LoadOpLibrary and writes one
// JSON line on `result_fd` ({"loaded": true} or {"error": TEXT}), or, when a
// C++ exception escapes a static constructor, {"exception": "TYPE (what(): ...)"}
// before the abort. Returns the process's exit code (0).
int RunLibraryProbe(const std::string& path, int result_fd);

}  // namespace ge::host
