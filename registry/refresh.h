// refresh.h: the registry's state, refreshed incrementally: which plugins the
// opp path holds (ge/plugin/discovery.h), which records are still fresh
// (their stamp), which must be scanned again (scan.h), and "first in path
// order wins" over op_types.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ge/plugin/record.h"
#include "scan.h"

namespace ge::registry {

// The registry while a refresh scans: `ordered` as Refresh would return it
// with what is known so far (plugins scanned in this refresh have their new
// record; those still `pending` keep their previous record, or are left out
// when they have none), and the paths still being scanned, in path order.
using PartialResults =
    std::function<void(const std::vector<plugin::PluginRecord>& ordered, const std::vector<std::string>& pending)>;

struct RefreshOptions {
  bool allow_insecure = false;
  bool no_scan = false;  // only find out what would be scanned (stats.scanned)
  ScanOptions scan;
  // When set, called on the refreshing thread once the plugins to scan are
  // known (before any is scanned), then as plugins finish: at most every
  // kScanTickMs, and not for the final result (Refresh's return value).
  PartialResults partial;
};
struct RefreshStats {
  std::size_t discovered = 0, scanned = 0, reused = 0, removed = 0;
};

// `records` (by plugin path) is updated in place for the plugins of
// `entries`: unchanged plugins (ge::plugin::StillFresh) keep their record
// (a touched one gets its new stamp); changed, new or forced ones are
// rescanned; insecure ones get an "insecure" record without being scanned;
// vanished ones are dropped. Returns the records in path order, discovery
// problems (missing entries, dangling links, name conflicts) after them,
// with ResolveConflicts applied.
std::vector<plugin::PluginRecord> Refresh(const std::vector<std::string>& entries,
                                          std::map<std::string, plugin::PluginRecord>& records,
                                          const RefreshOptions& opts, RefreshStats* stats = nullptr,
                                          bool force = false, const std::vector<std::string>& force_paths = {});

// Applies "first in path order wins" over records in path order: the one
// resolver, ge::plugin::Resolve (ge/plugin/resolve.h), which the engine's
// host and ge-plugin-ls --check share.
std::vector<plugin::PluginRecord> ResolveConflicts(std::vector<plugin::PluginRecord> ordered);

}  // namespace ge::registry
