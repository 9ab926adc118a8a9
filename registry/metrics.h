// metrics.h: the registry in the Prometheus text exposition format (version
// 0.0.4), for `ge-plugin-ls --format prometheus` and the daemon's
// `--metrics-textfile` (node-exporter's textfile collector). The metrics and
// their labels: share/docs/registry.md, "Fleet metrics".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ge::registry {

// What the metrics say besides the plugins; unknown figures are left out of
// the text rather than written as 0.
struct MetricsInfo {
  std::optional<double> last_refresh_s;       // wall time of the last refresh (the scan of what changed), seconds
  std::optional<uint64_t> last_refresh_scanned;  // plugins that refresh scanned (0: all were reused)
  std::optional<int64_t> cache_written_unix;  // the cache file's mtime (written atomically: when it was written)
  int64_t now_unix = 0;                       // for ge_plugin_registry_cache_age_seconds
  std::string source;                         // "daemon", "cache" or "scan"
};

// The metrics text for `plugins`: a JSON list of plugin summaries as
// plugin::ToJson(r, false) writes them (ge-plugin-ls --json). Label values
// are escaped as the format asks (backslash, double quote, newline); the
// summaries' strings are valid UTF-8 already. Every status has its
// ge_plugin_registry_plugins series, 0 included, so that alerts need no
// absent(). Pure function; thread-safe.
std::string PrometheusText(const nlohmann::json& plugins, const MetricsInfo& info);

// The cache file's mtime in Unix seconds, nullopt when it cannot be read.
std::optional<int64_t> FileMtimeUnix(const std::string& path);

}  // namespace ge::registry
