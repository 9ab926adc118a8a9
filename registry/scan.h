// scan.h: the out-of-process scan, parent side. Plugins are imported by
// ge-plugin-scan children (scan_child.cc), never in the registry's own
// process; a child that crashes, hangs or exits marks only the plugin it was
// loading. Protocol (internal, both ends built together): the parent writes
// the plugin paths NUL-terminated on the child's stdin (a path may hold any
// byte but NUL); the child answers on stdout, per plugin, a line
// {"begin": PATH} before loading it and the plugin's record
// (ge::plugin::ToJson) after, paths in the PathText spelling (ge/text.h).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ge/plugin/record.h"

namespace ge::registry {

// Seconds a plugin may take to load when scanned (ge-plugin-ls --timeout,
// ge-plugin-registryd --timeout); past it the child is killed and the plugin
// marked "hung".
inline constexpr double kDefaultScanTimeoutS = 10.0;
// The largest --timeout the tools take (one day): a larger one would overflow
// the scan's clock arithmetic.
inline constexpr double kMaxScanTimeoutS = 86400.0;

struct ScanOptions {
  std::string scanner;                      // ge-plugin-scan executable; empty: DefaultScanner()
  double timeout_s = kDefaultScanTimeoutS;  // per plugin
  int jobs = 2;                             // scanner children in parallel
  std::size_t batch = 1000;                 // plugins per child (a child unloads each plugin after scanning it)
  std::string log_level;                    // passed to the children
  bool quiet_children = false;              // children's stderr to /dev/null
  bool allow_insecure = false;              // passed to the children (--allow-insecure)
  // Op libraries whose prototypes the scanned plugins may bind to (each
  // passed as --prototype-library; ge::host::HostOptions::prototype_libraries).
  std::vector<std::string> prototype_libraries;
  // Op libraries that failed (path, one-line error), passed as
  // --failed-library PATH ERROR (ge::host::HostOptions::failed_libraries).
  std::vector<std::pair<std::string, std::string>> failed_libraries;
  std::function<void(std::size_t done, std::size_t total)> progress;
  // Called with each plugin's final record as soon as it is known (index
  // into the scanned paths), on the scanning thread; results appear as each
  // plugin finishes, not when the slowest one does.
  std::function<void(std::size_t index, const plugin::PluginRecord& record)> on_record;
  // Called at least every kScanTickMs while a scan runs, on the scanning thread.
  std::function<void()> tick;
  // A plugin loading longer than this (seconds; default: a quarter of
  // timeout_s, at most 1 s) no longer holds up the plugins queued behind it
  // in its scanner: they are handed to a new scanner child, up to `jobs`.
  double slow_after_s = -1;
};
inline constexpr int kScanTickMs = 100;

// Scans `paths` (plugin paths as discovery gives them) out of process;
// returns one record per path, in the same order. A child that crashes, hangs
// or exits marks only the plugin being scanned ("crashed" with the signal,
// "hung", "exited" with the code); a malformed answer is an "error" naming
// the field. Blocks until every path has a record.
std::vector<plugin::PluginRecord> ScanPlugins(const std::vector<std::string>& paths, const ScanOptions& opts);

// Whether an op library's record says it registers its prototypes (status
// ok), as the engine's host would: then Python plugins scanned later may bind
// to them. Crashed, hung, exited, insecure, skipped, conflicting and failing
// libraries do not.
bool ServesPrototypes(const plugin::PluginRecord& r);

// Scans the plugins of an opp path in the order op packages need
// (share/docs/op-packages.md): the op libraries among `paths` first, each on
// its own; then again those whose custom ops lack a prototype, with every
// library that loaded (these and `other_libraries`, records not rescanned)
// as prototype libraries; then the Python plugins, with the libraries that
// ServesPrototypes as prototype libraries. `is_library[i]` says whether paths[i] is an op
// library. Returns one record per path, in order (as ScanPlugins).
std::vector<plugin::PluginRecord> ScanOppPath(const std::vector<std::string>& paths, const std::vector<bool>& is_library,
                                              const std::vector<plugin::PluginRecord>& other_libraries,
                                              const ScanOptions& opts);

// $GE_PLUGIN_SCAN, else the installed scanner (libexec/ge-plugin/ge-plugin-scan
// relative to the running executable's folder), else ge-plugin-scan next to
// the running executable (the build tree).
std::string DefaultScanner();

}  // namespace ge::registry
