// registry_common.h: what the registry daemon, ge-plugin-ls and the scanner
// share: discovery of opp folders, file stamps, the safety check, the
// out-of-process scan (parent side), conflict resolution, the cache, the
// socket protocol constants and default locations. No Python here: the tools
// that only read (ge-plugin-ls) stay light.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ge/registry/verdicts.h"

namespace ge::registry {

using nlohmann::json;

constexpr int kProtocolVersion = 1;
constexpr int kCacheVersion = 1;
constexpr const char* kCacheFormat = "ge-plugin-registry-cache";
constexpr std::size_t kMaxMessageBytes = 64 * 1024;  // per request line

bool IsDirectory(const std::string& path);

// Extracts "error_file"/"error_line" from a host error message ("(at F:L)",
// 'File "F", line L' in a traceback, or "F:L: ...") into `out`.
void ErrorLocation(const std::string& error, const std::string& details, const std::string& path, json& out);

// ---- discovery (share/docs/plugin-authors.md, opp folders) ----------------------------------------------------------
struct Found {
  std::string name;  // module name (file stem or directory name)
  std::string path;  // canonical path of the .py file or package directory
  std::string root;  // canonical opp folder it was found in (the file's folder for a file entry)
  bool is_package = false;
  bool escapes = false;  // resolves outside its opp folder (a symlink)
};
// Problems (missing entries, ...) are appended as records with status "error".
std::vector<Found> Discover(const std::vector<std::string>& entries, std::vector<json>& problems);
std::vector<std::string> SplitPath(const std::string& value);

// ---- stamps: (mtime, size, file count, content hash) of a plugin's files -------------------
struct Stamp {
  int64_t mtime_ns = 0;
  uint64_t size = 0;
  uint64_t files = 0;
  std::string hash;  // empty: not computed
  bool SameMeta(const Stamp& o) const { return mtime_ns == o.mtime_ns && size == o.size && files == o.files; }
  json ToJson() const;
  static Stamp FromJson(const json& j);
};
// __pycache__ and *.pyc are ignored (the host's imports write them).
Stamp ComputeStamp(const std::string& path, bool is_package, bool with_hash);

// ---- safety --------------------------------------------------------------------------------
// Empty when fine; else why the plugin is refused ("insecure"): a file or
// folder writable by others, owned by another non-root user, or a path that
// resolves outside its opp folder. `uid` is the scanning user.
std::string InsecureReason(const Found& f, uid_t uid);

// ---- the out-of-process scan (parent side) ---------------------------------------------------
struct ScanOptions {
  std::string scanner;       // ge-plugin-scan executable; empty: next to this executable
  double timeout_s = 10.0;   // per plugin
  int jobs = 2;              // scanner children in parallel
  std::size_t batch = 1000;  // plugins per child (a child unloads each plugin after scanning it)
  std::string log_level;     // passed to the children
  bool quiet_children = false;  // children's stderr to /dev/null
  std::function<void(std::size_t done, std::size_t total)> progress;
};
// Scans `paths` out of process; returns one record per path (same order).
// A child that crashes, hangs or exits marks only the plugin being scanned
// ("crashed" with the signal, "hung", "exited" with the code).
std::vector<json> ScanPlugins(const std::vector<std::string>& paths, const ScanOptions& opts);
std::string DefaultScanner();

// ---- the registry state: records by path, refreshed incrementally ------------------------------
struct RefreshOptions {
  bool allow_insecure = false;
  bool no_scan = false;  // only find out what would be scanned (stats.scanned)
  ScanOptions scan;
};
struct RefreshStats {
  std::size_t discovered = 0, scanned = 0, reused = 0, removed = 0;
};
// `records` (by path) is updated in place for the plugins of `entries`:
// unchanged plugins (same stamp) keep their record; changed, new or forced ones
// are rescanned; vanished ones are dropped. Returns the records in path order
// (discovery problems included).
std::vector<json> Refresh(const std::vector<std::string>& entries, std::map<std::string, json>& records,
                          const RefreshOptions& opts, RefreshStats* stats = nullptr, bool force = false,
                          const std::vector<std::string>& force_paths = {});
// Applies "first in path order wins" over records in path order: a plugin
// whose op_type an earlier ok plugin defines becomes "conflict" naming both.
std::vector<json> ResolveConflicts(std::vector<json> ordered);
// The summary entry of a record (what `list` and ge-plugin-ls --json give).
json Summary(const json& record);

// ---- records ----------------------------------------------------------------------------------
// Why `record` is not a well-formed plugin record (a field missing or of the
// wrong JSON type, an unknown status, a malformed stamp or op), naming the
// field; nullopt when it is. Every record read from a file or a scanner child
// goes through this before any field is used.
std::optional<std::string> RecordProblem(const json& record, bool stamp_required);

// ---- cache ----------------------------------------------------------------------------------
// The most a cache (and its listing index) may be: 1000 plugins take about
// 5 MiB. Larger files, and anything that is not a regular file, are refused
// (and rebuilt) without being read.
inline constexpr std::size_t kMaxCacheBytes = 64u << 20;
// Loads a cache; nullopt (with `why`) when missing, unreadable, cut short,
// corrupted or of another format/version.
// `light` skips the heavy per-op detail (prototypes, tracebacks): enough for
// listing, not for writing the cache back.
std::optional<json> LoadCache(const std::string& path, std::string* why, bool light = false);
// Writes atomically: temp file in the same folder, fsync, rename, fsync dir.
bool SaveCache(const std::string& path, const std::vector<std::string>& entries,
               const std::map<std::string, json>& records, std::string* why);
std::map<std::string, json> CacheRecords(json cache);

// ---- the listing index (<cache>.list) ------------------------------------------------------
// A line-oriented companion of the cache for the warm `ge-plugin-ls` path: the
// opp path, then per plugin its path, stamp, mode/owner and its summary as one
// JSON line. Reading it parses no JSON at all. Written atomically after each
// refresh (by ge-plugin-ls and by the daemon); never trusted when stale.
bool SaveListIndex(const std::string& cache_path, const std::vector<std::string>& entries,
                   const std::vector<json>& ordered, std::string* why);
// The `plugins` JSON array text when the index is fresh for `entries`: the
// same plugins are discovered, each with the same stamp, and none is insecure
// (unless allow_insecure) or a discovery problem. nullopt otherwise.
std::optional<std::string> FreshListJson(const std::string& cache_path, const std::vector<std::string>& entries,
                                         bool allow_insecure);

// CrashVerdicts and DefaultCachePath: ge/registry/verdicts.h.

// ---- defaults (XDG; systemd's RUNTIME_DIRECTORY / CACHE_DIRECTORY; /run, /var/cache for root) --
std::string DefaultSocketPath();
// Why `path` cannot name a Unix socket (empty, a NUL byte, or longer than
// sockaddr_un's sun_path allows: 107 bytes on Linux), naming the path, its
// length and the limit; nullopt when it can.
std::optional<std::string> SocketPathProblem(const std::string& path);
// opp path from --opp-path, else ASCEND_CUSTOM_OPP_PATH.
std::vector<std::string> OppEntries(const std::string& opp_path_option);

// Plugin-provided text escaped for the terminal (ge::TerminalSafe, ge/text.h).
std::string Printable(const std::string& s);

}  // namespace ge::registry
