// ge/host/plugin_host.h: loads Python plugin packages from opp folders and
// registers their ops, as peers of C++ ops, in an OpRegistry.
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

namespace ge::host {

struct DiscoveredPlugin {
  std::string name;  // module name: file stem or directory name
  std::string path;  // canonical path of the .py file or package directory
  bool is_package = false;
};

// Seconds the threads a plugin left running get to finish when its
// sub-interpreter ends, and the main interpreter's at process exit; after that
// they are left running and the interpreter is not finalized (never blocked on).
inline constexpr double kThreadJoinTimeoutS = 0.5;

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
  // single-file plugins: "subinterpreter" (default) or "main". Others throw
  // std::invalid_argument from the constructor.
  std::string default_isolation = "subinterpreter";
  // Log level of every component ("trace" ... "off"); empty keeps the current
  // one (GE_LOG_LEVEL or warn). An unknown name throws std::invalid_argument.
  std::string log_level;
  // Asked before a plugin is imported; a non-empty reason skips it (status
  // "skipped"), e.g. the registry's verdict that it crashes or hangs when
  // loaded. Called on the loading thread, without the interpreter lock.
  std::function<std::string(const DiscoveredPlugin&)> skip_plugin;
};

// What happened to one plugin. status: "ok", "error", "conflict", "missing",
// "skipped" (HostOptions::skip_plugin).
struct PluginReport {
  std::string name;
  std::string path;
  std::string version;
  std::string description;
  std::string isolation;  // "subinterpreter", "main", "process"
  std::string status;
  std::string error;    // one line: what went wrong, naming the file / field
  std::string details;  // e.g. the Python traceback
  std::vector<std::string> op_types;  // registered (status ok)
  std::vector<std::pair<std::string, std::string>> capabilities;  // (op_type, "eager_execute,infer_meta")
};


// Splits a ':'-separated opp path, dropping empty entries.
std::vector<std::string> SplitOppPath(const std::string& value);

// Expands opp path entries into plugins per share/docs/plugin-authors.md (opp folders, first section) (a folder is
// scanned one level deep in name order; each non-underscore .py file and each
// sub-directory with __init__.py is a plugin; the same file reached twice is
// listed once). Entries that do not exist or are not a .py file / folder are
// appended to `problems` with status "missing" / "error".
std::vector<DiscoveredPlugin> DiscoverPlugins(const std::vector<std::string>& entries,
                                              std::vector<PluginReport>& problems);

class PluginHost {
 public:
  // `registry` is borrowed and must outlive the host. Throws
  // std::runtime_error when the Python runtime cannot start (no `ge` package).
  PluginHost(HostOptions options, OpRegistry& registry);
  ~PluginHost();
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // Discovers and loads every plugin of the opp paths (main-interpreter plugins
  // first, then the others, each group in path order). Returns all reports,
  // including discovery problems. Calling it again loads only new plugins.
  const std::vector<PluginReport>& LoadAll();
  // Loads one plugin file or package directory; reports it.
  PluginReport LoadPlugin(const std::string& path);

  const std::vector<PluginReport>& Reports() const noexcept;
  // Python callbacks made through this host's ops so far (all threads).
  uint64_t PythonCalls() const noexcept;
  // Unregisters every op of this host and ends the interpreters (bounded).
  void UnloadAll();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ge::host
