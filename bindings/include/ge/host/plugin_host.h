// ge/host/plugin_host.h: loads Python plugin packages and C++ op libraries
// from opp folders and registers their ops, as peers, in an OpRegistry.
//
// Op libraries (`lib*.so` of an opp root; share/docs/op-packages.md) load
// first, one dlopen at a time (ge/plugin/op_library.h): their prototypes
// (REG_OP) become the canonical IR of Python implementations that have no
// Python prototype, and their custom ops (REG_AUTO_MAPPING_OP) are registered
// with source = the library path. A library stays loaded for the process.
//
// Each plugin runs in its own sub-interpreter (isolation "subinterpreter", the
// default) or in the shared main interpreter (isolation = "main" under
// [tool.ge-plugin] in its pyproject.toml: how a numpy plugin runs). A plugin
// that fails to load (missing path, syntax or import error, an exception in a
// decorator, an invalid callback signature, an op_type already registered)
// registers nothing and is reported with the reason and its file; the others
// load. Python errors never end the process.
//
// Lifetime: the ops a host registers hold the plugin's interpreter alive; the
// host's destructor unregisters them and ends every sub-interpreter whose ops
// are no longer referenced. Thread-safety: Load*/Unload from one thread at a
// time; registered ops may be called from any thread (they serialize on the
// GIL and use one thread state per thread and interpreter).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ge/op/op_registry.h"
#include "ge/plugin/discovery.h"
#include "ge/plugin/record.h"

namespace ge::host {

// Seconds the threads a plugin left running get to finish when its
// sub-interpreter ends, and the main interpreter's at process exit; after that
// they are left running and the interpreter is not finalized (never blocked on).
inline constexpr double kThreadJoinTimeoutS = 0.5;

// The range of HostOptions::call_timeout_s (and ge-run --call-timeout), in
// seconds: below a millisecond no call could finish (even infer_meta crosses
// to the worker and back); past 1e9 s (31 years) the deadline's clock
// arithmetic would overflow.
inline constexpr double kMinCallTimeoutS = 0.001;
inline constexpr double kMaxCallTimeoutS = 1e9;

// Empty when `seconds` is in that range, else the end of an error message:
// "must be from 0.001 to 1e+09 seconds, got 1e+30" (NaN is out of range).
// Pure; thread-safe.
std::string CallTimeoutProblem(double seconds);

struct HostOptions {
  // opp path entries (files or folders), in priority order. When empty and
  // use_env_opp_path is set, ASCEND_CUSTOM_OPP_PATH (':'-separated) is used.
  // Relative entries (and LoadPlugin's path) are resolved against the current
  // directory at the host's construction: a plugin calling os.chdir changes
  // nothing the host reads.
  std::vector<std::string> opp_paths;
  bool use_env_opp_path = true;
  // Folder holding the `ge` Python package. Empty: GE_PLUGIN_PYTHON_DIR, else
  // relative to libge_plugin_host.so (<libdir>/ge-plugin/python when
  // installed, ../python in a build tree), else to the running executable.
  // A non-empty folder without the package makes the constructor throw.
  std::string python_dir;
  // Seconds a sub-interpreter's leftover threads get to finish at unload.
  double thread_join_timeout_s = kThreadJoinTimeoutS;
  // Isolation of package plugins whose pyproject.toml does not set one, and of
  // single-file plugins: "subinterpreter" (default), "main" or "process" (each
  // plugin in a worker process of its own; share/docs/host-design.md,
  // "Process isolation"). Others throw std::invalid_argument from the
  // constructor. Before the first worker process starts, the host raises this
  // process's soft RLIMIT_NOFILE to its hard limit (each worker holds about 7
  // descriptors here; the host uses poll, never select).
  std::string default_isolation = "subinterpreter";
  // Seconds one call of a process-isolated plugin's op may take; past it the
  // worker is killed and the call fails (restarted for the next one). Loading
  // the plugin in a new worker may take this or 60 s, whichever is longer.
  // From kMinCallTimeoutS to kMaxCallTimeoutS, else the constructor throws
  // std::invalid_argument naming both. Calls of in-process plugins (isolation
  // "subinterpreter" or "main") cannot be interrupted: no deadline applies.
  double call_timeout_s = 60.0;
  // Log level of every component ("trace" ... "off"); empty keeps the current
  // one (GE_LOG_LEVEL or warn). An unknown name throws std::invalid_argument.
  std::string log_level;
  // Asked before a plugin is imported; a non-empty reason skips it (status
  // "skipped"), e.g. the registry's verdict that it crashes or hangs when
  // loaded (ge/registry/verdicts.h). Called on the loading thread, without the
  // interpreter lock.
  std::function<std::string(const plugin::Candidate&)> skip_plugin;
  // Load plugins that discovery finds insecure (writable by others, owned by
  // another user, a link leaving its opp folder). Off: they are reported with
  // status "insecure" and the reason the registry gives too.
  bool allow_insecure = false;
  // Load each op library alone first, in a process of its own
  // (`ge-plugin-worker --probe-op-library`, all of a load's libraries at
  // once), and here only when that succeeded: a library's status and reason
  // are what it gets alone, as in the registry, whatever this process loaded
  // before (a symbol another library made global does not count), and a
  // crash, exit() or C++ exception in its static constructors is the
  // library's status ("crashed", "exited"; the exception's type and what()
  // named) instead of the end of this process. Each library file version is
  // probed once per process. About one process start per library (some 10
  // to 30 ms, in parallel). Off: loaded here directly.
  // share/docs/op-packages.md, "One verdict per library".
  bool probe_op_libraries = true;
  // A probe not done within this many seconds (wall) is killed: status
  // "hung". Below the registry's per-plugin scan limit (10 s), so that both
  // tools say the same.
  double op_library_probe_timeout_s = 8.0;
  // Op libraries (absolute paths) whose prototypes Python plugins may bind
  // to, loaded once before the first plugin without a report and without
  // registering their custom ops: how the registry's scanner checks an
  // implementation-only plugin against the libraries of the opp path. A
  // library that fails to load is a warning in the log.
  std::vector<std::string> prototype_libraries;
  // Op libraries (path, one-line error) that failed to load: an
  // implementation-only plugin whose op_type one of them prototypes is told so
  // ("op library X, which prototypes it, failed to load: ...") instead of
  // "actual none". Nothing of them is used.
  std::vector<std::pair<std::string, std::string>> failed_libraries;
};

// What happened to one plugin: the record the registry keeps too
// (ge/plugin/record.h). status: ok, error, conflict, insecure, missing,
// skipped (HostOptions::skip_plugin); error.kind says which step failed.
using PluginReport = plugin::PluginRecord;

class PluginHost {
 public:
  // `registry` is borrowed and must outlive the host. Throws
  // std::runtime_error when the Python runtime cannot start (no `ge` package).
  PluginHost(HostOptions options, OpRegistry& registry);
  ~PluginHost();
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // Discovers (ge/plugin/discovery.h) and loads every plugin of the opp paths
  // (op libraries first, then main-interpreter plugins, then the others, each
  // group in path order). Returns all reports, including discovery problems. Calling it
  // again loads only new plugins.
  const std::vector<PluginReport>& LoadAll();
  // Loads one plugin: a .py file, a package folder or an op library `.so`
  // (ge::plugin::DiscoverOne); reports it.
  PluginReport LoadPlugin(const std::string& path);

  // The isolation the plugin at `path` (as LoadPlugin takes it) would load in,
  // read as LoadPlugin reads it: a package's pyproject.toml, [tool.ge-plugin]
  // isolation, parsed with Python's tomllib by ge._loader.read_metadata
  // (share/docs/plugin-authors.md, "Isolation"). Returns "subinterpreter",
  // "main" or "process"; HostOptions::default_isolation for a single file or
  // a package that sets none; "native" for an op library. Runs no plugin code
  // and loads nothing (ge-plugin-scan orders its loads with it). Throws
  // std::invalid_argument with the message LoadPlugin would report (naming
  // the file, and the line of invalid TOML) when `path` is not one plugin or
  // its pyproject.toml is unreadable, not TOML or has a bad value. Same
  // thread rules as LoadPlugin.
  std::string DeclaredIsolation(const std::string& path);

  const std::vector<PluginReport>& Reports() const noexcept;
  // Python callbacks made through this host's ops so far (all threads).
  uint64_t PythonCalls() const noexcept;
  // Unregisters every op of this host and ends the interpreters (bounded).
  void UnloadAll();

  struct Impl;

 private:
  friend struct WorkerAccess;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ge::host
