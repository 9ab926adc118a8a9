// ge/plugin/cache.h: the registry cache, read side (format, validation, crash
// verdicts). Written by the registry (registry/cache_write.h); read by the
// registry, by ge-plugin-ls and by engines consulting crash verdicts
// (ge/registry/verdicts.h). No Python.
//
// The cache is a stamped copy, never the truth: a plugin's files are. Format:
// one JSON object {"format": "ge-plugin-registry-cache", "version": kCacheVersion,
// "opp_path": [...], "written_unix": N, "plugins": [record...]} with each
// record as ge::plugin::ToJson writes it (paths in the PathText spelling).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ge/plugin/record.h"

namespace ge::plugin {

inline constexpr const char* kCacheFormat = "ge-plugin-registry-cache";
// 2: stamps carry ctime_ns and inodes, records error_kind. 4: a Python
// plugin's records carry the prototypes it does not implement and
// error_op_type (older caches are rescanned, not misread as having none).
// 5: ops carry their release rules, records their unprototyped ops. 6:
// warnings and error notes are typed diagnostics ("diagnostics",
// "error_notes"), the error's bare message is "error_message". 7: error
// kinds are a closed set (an unknown one is refused), an op_type conflict
// carries its "conflict_rule". 8: an op library's prototypes and ops are the
// ones its own code registered (not a dependency's), and its status is the
// one it gets loaded alone (share/docs/op-packages.md): older records may say
// otherwise with a fresh stamp, so they are not reused.
inline constexpr int kCacheVersion = 8;
// The most a cache (and its listing index) may be: 1000 plugins take about
// 5 MiB. Larger files, and anything that is not a regular file, are refused
// (and rebuilt) without being read.
inline constexpr std::size_t kMaxCacheBytes = 64u << 20;

struct Cache {
  std::vector<std::string> opp_path;             // as written (absolute entries)
  std::map<std::string, PluginRecord> records;  // by plugin path (bytes)
};

// Loads and validates a cache: nullopt (with `why`) when missing, not a
// regular file, too large, cut short, corrupted, of another format or
// version, or holding one malformed record (naming it and its field): a cache
// is trusted whole or not at all. `light` skips prototypes and tracebacks
// (enough to list, not to write the cache back).
std::optional<Cache> LoadCache(const std::string& path, std::string* why, bool light = false);

}  // namespace ge::plugin
