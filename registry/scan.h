// scan.h: the out-of-process scan, parent side. Plugins are imported by
// scanner children, one plugin per child, never in the registry's own
// process; a child that crashes, hangs or exits marks only its plugin. The
// children are forked from the scan's zygote (`ge-plugin-scan --zygote`,
// ge/host/zygote.h: CPython and `ge` initialized once), role "scan" with the
// plugin's path after "--" in its args and the write end of a pipe as its
// channel; without a zygote (it cannot start, or died twice) each is a
// posix_spawn'ed ge-plugin-scan given the path NUL-terminated on its stdin (a
// path may hold any byte but NUL). Either answers, on the channel or stdout,
// a line {"begin": PATH} before loading the plugin and its record
// (ge::plugin::ToJson) after, paths in the PathText spelling (ge/text.h).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
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

// The zygote the scans of one process fork their scanner children from,
// started on first use (the scanner's `--zygote`, its stderr given per child)
// and kept between scans; when it dies it is restarted once, after that (or
// when it cannot start) the scans spawn each scanner child with posix_spawn
// (a log line says so). $GE_PLUGIN_SCAN_ZYGOTE=0 spawns from the start.
// Shared by copies of ScanOptions; one scan at a time uses it (a mutex held
// for the whole ScanPlugins call).
class ScanZygote {
 public:
  ScanZygote();
  ~ScanZygote();
  ScanZygote(const ScanZygote&) = delete;
  ScanZygote& operator=(const ScanZygote&) = delete;
  // The running zygote's pid, -1 when none.
  int pid() const;

  // scan.cc's: the client, its restarts, the fallback. Guarded by mu.
  struct State;
  mutable std::mutex mu;
  std::unique_ptr<State> state;
};

struct ScanOptions {
  std::string scanner;                      // ge-plugin-scan executable; empty: DefaultScanner()
  double timeout_s = kDefaultScanTimeoutS;  // per plugin
  int jobs = 2;                             // scanner children in parallel
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
  // scanner child ends (its records are final once its exit is reported),
  // not when the slowest plugin does.
  std::function<void(std::size_t index, const plugin::PluginRecord& record)> on_record;
  // Called at least every kScanTickMs while a scan runs, on the scanning thread.
  std::function<void()> tick;
  // The zygote to fork the scanner children from; null: one started for this
  // scan (ScanOppPath: one for all its passes) and ended with it.
  std::shared_ptr<ScanZygote> zygote;
};
inline constexpr int kScanTickMs = 100;

// Scans `paths` (plugin paths as discovery gives them) out of process, in
// scanner children forked from the zygote, up to `jobs` at a time; a child
// scans up to 16 sub-interpreter plugins in sequence (sent one after each
// record), a plugin of another isolation alone (share/docs/registry.md,
// "Processes: the zygote"); returns
// one record per path, in the same order. A child that crashes, hangs or
// exits marks only the plugin it was loading ("crashed" with the signal,
// "hung", "exited" with the code; the rest of its batch goes to a fresh
// child); a plugin that kills or stops the zygote is found by scanning the
// suspects alone; a malformed answer is an "error" naming the field. Blocks
// until every path has a record.
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
