// cache.cc: see ge/plugin/cache.h and ge/registry/verdicts.h.
#include "ge/plugin/cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

#include <nlohmann/json.hpp>

#include "ge/file.h"
#include "ge/plugin/discovery.h"
#include "ge/registry/verdicts.h"
#include "ge/text.h"

namespace ge::plugin {

using nlohmann::json;

std::optional<Cache> LoadCache(const std::string& path, std::string* why, bool light) {
  auto fail = [&](const std::string& w) -> std::optional<Cache> {
    if (why) *why = w;
    return std::nullopt;
  };
  struct stat lst {};
  if (::stat(path.c_str(), &lst) != 0 && errno == ENOENT) return fail("no cache at " + path);
  std::string read_why;
  const std::optional<std::string> text = ReadBoundedFile(path, kMaxCacheBytes, "registry file", &read_why);
  if (!text) return fail("cache " + read_why);
  json::parser_callback_t drop = [](int depth, json::parse_event_t ev, json& parsed) {
    return !(ev == json::parse_event_t::key && depth > 2 && parsed.is_string() &&
             (parsed.get_ref<const std::string&>() == "prototype" || parsed.get_ref<const std::string&>() == "details"));
  };
  const json j = json::parse(*text, light ? drop : json::parser_callback_t(nullptr), false);
  if (j.is_discarded() || !j.is_object()) return fail("cache " + path + " is unreadable (cut short or corrupted)");
  if (j.value("format", "") != kCacheFormat || !j.contains("version") || !j["version"].is_number_integer()) {
    return fail("cache " + path + " has a foreign format (expected " + kCacheFormat + " v" +
                std::to_string(kCacheVersion) + ")");
  }
  if (const int64_t got = j["version"].get<int64_t>(); got != kCacheVersion) {
    return fail("cache " + path + " is version " + std::to_string(got) + ", this build reads version " +
                std::to_string(kCacheVersion) + " (" + kCacheFormat + ")");
  }
  if (!j.contains("plugins") || !j["plugins"].is_array() || !j.contains("opp_path") || !j["opp_path"].is_array()) {
    return fail("cache " + path + " is malformed");
  }
  if (j.contains("written_unix") && !j["written_unix"].is_number_integer()) {
    return fail("cache " + path + " is malformed: written_unix must be an integer");
  }
  Cache c;
  for (const auto& e : j["opp_path"]) {
    std::optional<std::string> p = e.is_string() ? ParsePathText(e.get_ref<const std::string&>()) : std::nullopt;
    if (!p) return fail("cache " + path + " is malformed: opp_path must hold path strings");
    c.opp_path.push_back(std::move(*p));
  }
  // Every record field by field: one bad record makes the whole cache
  // untrusted (it is rebuilt by a scan), never a crash later.
  std::size_t i = 0;
  for (const auto& rj : j["plugins"]) {
    std::string problem;
    std::optional<PluginRecord> r = FromJson(rj, &problem, /*stamp_required=*/true);
    if (!r) {
      const std::string at = rj.is_object() && rj.contains("path") && rj["path"].is_string()
                                 ? " (" + Abbreviate(rj["path"].get<std::string>()) + ")"
                                 : "";
      return fail("cache " + path + " is malformed: plugins[" + std::to_string(i) + "]" + at + ": " + problem);
    }
    std::string key = r->path;
    c.records.emplace(std::move(key), std::move(*r));
    ++i;
  }
  return c;
}

}  // namespace ge::plugin

namespace ge::registry {

namespace {
bool PathExists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}
}  // namespace

std::string UserCachePath() {
  // XDG: a relative $XDG_CACHE_HOME is invalid and ignored.
  if (const char* e = std::getenv("XDG_CACHE_HOME"); e && *e == '/') return std::string(e) + "/ge-plugin/registry.json";
  if (const char* e = std::getenv("HOME"); e && *e) return std::string(e) + "/.cache/ge-plugin/registry.json";
  return "/tmp/ge-plugin-registry-" + std::to_string(::geteuid()) + "/registry.json";
}

std::string DaemonCachePath() {
  if (const char* e = std::getenv("GE_PLUGIN_REGISTRY_CACHE"); e && *e) return e;
  if (const char* e = std::getenv("CACHE_DIRECTORY"); e && *e) return std::string(e) + "/registry.json";
  if (::geteuid() == 0) return kSystemCachePath;
  return UserCachePath();
}

std::string DefaultCachePath() {
  const char* env = std::getenv("GE_PLUGIN_REGISTRY_CACHE");
  const std::string daemons = DaemonCachePath();
  // A user whose own daemon never wrote a cache reads the system daemon's.
  if (!(env && *env) && daemons == UserCachePath() && !PathExists(daemons) && PathExists(kSystemCachePath)) {
    return kSystemCachePath;
  }
  return daemons;
}

std::function<std::string(const plugin::Candidate&)> CrashVerdicts(const std::string& cache_path, std::string* why_out) {
  std::string why;
  auto cache = plugin::LoadCache(cache_path.empty() ? DefaultCachePath() : cache_path, &why, /*light=*/true);
  if (!cache) {
    if (why_out) *why_out = why;
    return {};
  }
  auto records = std::make_shared<std::map<std::string, plugin::PluginRecord>>(std::move(cache->records));
  return [records](const plugin::Candidate& c) -> std::string {
    auto it = records->find(c.path);
    if (it == records->end()) return {};
    const plugin::PluginRecord& r = it->second;
    if (r.status != plugin::PluginStatus::kCrashed && r.status != plugin::PluginStatus::kHung &&
        r.status != plugin::PluginStatus::kExited) {
      return {};
    }
    if (!r.stamp || !plugin::StillFresh(c, *r.stamp)) return {};  // changed: the mark is gone
    const std::string status(plugin::StatusName(r.status));
    const std::string error = r.error.OneLine();
    return "the plugin registry marks it " + status + (error.empty() ? "" : " (" + error + ")") +
           "; fix the plugin (any change clears the mark) or run without --skip-crashed";
  };
}

}  // namespace ge::registry
