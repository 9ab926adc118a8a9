// metrics.cc: see metrics.h.
#include "metrics.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <sstream>

namespace ge::registry {

namespace {

using nlohmann::json;

// The statuses a registry listing can hold (ge/plugin/record.h, in their
// JSON spelling; the same set `ge-plugin-ls --status` takes). "skipped" is a
// host's verdict (a plugin ge-run left out on purpose), never the registry's.
constexpr std::array<const char*, 8> kStatuses{"ok",      "error", "conflict", "insecure",
                                               "missing", "crashed", "hung",  "exited"};

// A label value: backslash, double quote and line feed escaped (the text
// format's only escapes).
std::string Label(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string Str(const json& p, const char* key) {
  auto it = p.find(key);
  return it != p.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A float the way the format reads it (no locale, enough digits).
std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

void Head(std::ostringstream& out, const char* name, const char* help) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n";
}

}  // namespace

std::string PrometheusText(const json& plugins, const MetricsInfo& info) {
  std::map<std::string, uint64_t> counts;
  for (const char* s : kStatuses) counts[s] = 0;
  if (plugins.is_array()) {
    for (const auto& p : plugins) counts[Str(p, "status")]++;
  }
  std::ostringstream out;
  Head(out, "ge_plugin_registry_plugins", "Plugins on the opp path, by status (share/docs/registry.md, \"Statuses\").");
  for (const auto& [status, n] : counts) {
    out << "ge_plugin_registry_plugins{status=\"" << Label(status) << "\"} " << n << "\n";
  }
  Head(out, "ge_plugin_registry_plugin_info",
       "One series per plugin (value 1): its name, path, kind, version, isolation and status.");
  if (plugins.is_array()) {
    for (const auto& p : plugins) {
      std::string isolation = Str(p, "isolation");
      if (Str(p, "kind") == "op_library") isolation = "native";
      out << "ge_plugin_registry_plugin_info{name=\"" << Label(Str(p, "name")) << "\",path=\"" << Label(Str(p, "path"))
          << "\",kind=\"" << Label(Str(p, "kind")) << "\",version=\"" << Label(Str(p, "version")) << "\",isolation=\""
          << Label(isolation) << "\",status=\"" << Label(Str(p, "status")) << "\"} 1\n";
    }
  }
  Head(out, "ge_plugin_registry_listing_info", "Where this listing came from (value 1): daemon, cache or scan.");
  out << "ge_plugin_registry_listing_info{source=\"" << Label(info.source) << "\"} 1\n";
  if (info.last_refresh_s) {
    Head(out, "ge_plugin_registry_last_refresh_duration_seconds",
         "Wall time of the last refresh: discovery and the scan of every plugin that changed.");
    out << "ge_plugin_registry_last_refresh_duration_seconds " << Number(*info.last_refresh_s) << "\n";
  }
  if (info.last_refresh_scanned) {
    Head(out, "ge_plugin_registry_last_refresh_scanned_plugins",
         "Plugins the last refresh scanned (the others kept their cached verdict).");
    out << "ge_plugin_registry_last_refresh_scanned_plugins " << *info.last_refresh_scanned << "\n";
  }
  if (info.cache_written_unix) {
    Head(out, "ge_plugin_registry_cache_written_timestamp_seconds",
         "When the registry cache was last written (Unix time); time() minus this is its live age.");
    out << "ge_plugin_registry_cache_written_timestamp_seconds " << *info.cache_written_unix << "\n";
    Head(out, "ge_plugin_registry_cache_age_seconds",
         "Age of the registry cache when these metrics were written, seconds.");
    out << "ge_plugin_registry_cache_age_seconds " << std::max<int64_t>(0, info.now_unix - *info.cache_written_unix)
        << "\n";
  }
  return out.str();
}

std::optional<int64_t> FileMtimeUnix(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<int64_t>(st.st_mtim.tv_sec);
}

}  // namespace ge::registry
