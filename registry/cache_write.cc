// cache_write.cc: see cache_write.h.
#include "cache_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sstream>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "ge/file.h"
#include "ge/plugin/cache.h"
#include "ge/plugin/discovery.h"
#include "ge/text.h"
#include "paths.h"

namespace ge::registry {

using nlohmann::json;
using plugin::PluginRecord;

bool WriteFileDurably(const std::string& path, const std::string& text, std::string* why) {
  const boost::filesystem::path target(path);
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (why) *why = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  std::size_t off = 0;
  bool ok = true;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    off += static_cast<std::size_t>(n);
  }
  if (ok && ::fsync(fd) != 0) ok = false;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (why) *why = "cannot write " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) ::fsync(dfd), ::close(dfd);
  return true;
}

bool SaveCache(const std::string& path, const std::vector<std::string>& entries,
               const std::map<std::string, PluginRecord>& records, std::string* why) {
  json j = {{"format", plugin::kCacheFormat},
            {"version", plugin::kCacheVersion},
            {"opp_path", PathsJson(entries)},
            {"plugins", json::array()}};
  j["written_unix"] = static_cast<int64_t>(::time(nullptr));
  for (const auto& [p, r] : records) j["plugins"].push_back(plugin::ToJson(r, /*with_detail=*/true));
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  const boost::filesystem::path target(path);
  boost::system::error_code ec;
  if (target.has_parent_path() && !boost::filesystem::exists(target.parent_path(), ec)) {
    // Only folders created here get a mode; an existing folder (e.g. /tmp) is
    // never changed.
    boost::filesystem::create_directories(target.parent_path(), ec);
    if (!ec) ::chmod(target.parent_path().c_str(), 0755);
  }
  return WriteFileDurably(path, text, why);
}

namespace {
// Version 3: stamps with ctime and inodes, paths in the PathText spelling.
// The last line is "S\t<FNV-1a 64 of every P line>", so an edited, cut or
// reordered index is never passed through.
constexpr char kListHeader[] = "ge-plugin-list 4";
constexpr int kStampFields = 5;  // mtime_ns, ctime_ns, size, files, inodes

std::string LinesChecksum(const std::vector<std::string>& lines) {
  uint64_t h = 1469598103934665603ULL;
  for (const auto& l : lines) {
    for (unsigned char c : l) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ '\n') * 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string ListIndexPath(const std::string& cache_path) { return cache_path + ".list"; }

// The cache file's identity: the index is only valid beside the cache it was
// written with (a cache cut short or replaced invalidates it).
std::string CacheIdentity(const std::string& cache_path) {
  struct stat st {};
  if (::stat(cache_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};  // no cache file, no index
  return "C\t" + std::to_string(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec) + "\t" +
         std::to_string(static_cast<long long>(st.st_size)) + "\t" + std::to_string(static_cast<long long>(st.st_ino));
}

std::string OppLine(const std::vector<std::string>& entries) {
  return "O\t" + PathsJson(entries).dump(-1, ' ', false, json::error_handler_t::replace);
}

template <typename T>
bool ParseNumber(const std::string& line, std::size_t from, std::size_t to, T& out) {
  const auto [end, ec] = std::from_chars(line.data() + from, line.data() + to, out);
  return ec == std::errc() && end == line.data() + to;
}
}  // namespace

bool SaveListIndex(const std::string& cache_path, const std::vector<std::string>& entries,
                   const std::vector<PluginRecord>& ordered, std::string* why) {
  const std::string identity = CacheIdentity(cache_path);
  if (identity.empty()) return false;  // no cache, no index
  std::ostringstream out;
  out << kListHeader << "\n" << identity << "\n" << OppLine(entries) << "\n";
  std::vector<std::string> plines;
  for (const auto& r : ordered) {
    const std::string path = PathText(r.path);
    if (path.empty() || path.find_first_of("\t\n") != std::string::npos) return false;  // not representable: no index
    const plugin::Stamp st = r.stamp.value_or(plugin::Stamp{});
    plines.push_back("P\t" + path + "\t" + std::to_string(st.mtime_ns) + "\t" + std::to_string(st.ctime_ns) + "\t" +
                     std::to_string(st.size) + "\t" + std::to_string(st.files) + "\t" + std::to_string(st.inodes) +
                     "\t" + plugin::ToJson(r, false).dump(-1, ' ', false, json::error_handler_t::replace));
    out << plines.back() << "\n";
  }
  out << "S\t" << LinesChecksum(plines) << "\n";
  return WriteFileDurably(ListIndexPath(cache_path), out.str(), why);
}

std::optional<std::string> FreshListJson(const std::string& cache_path, const std::vector<std::string>& entries,
                                         bool allow_insecure) {
  // The index is a file like the cache: bounded, regular, and each line checked
  // before its summary is passed through (an edited line makes it stale).
  std::optional<std::string> content =
      ReadBoundedFile(ListIndexPath(cache_path), plugin::kMaxCacheBytes, "registry file", nullptr);
  if (!content) return std::nullopt;
  std::istringstream f(std::move(*content));
  std::string line;
  if (!std::getline(f, line) || line != kListHeader) return std::nullopt;
  if (!std::getline(f, line) || line != CacheIdentity(cache_path) || line.empty()) return std::nullopt;
  if (!std::getline(f, line) || line != OppLine(entries)) return std::nullopt;
  plugin::DiscoverOptions dopts;
  dopts.uid = ::geteuid();
  dopts.check_safety = !allow_insecure;
  const plugin::Discovery found = plugin::Discover(entries, dopts);
  if (!found.problems.empty()) return std::nullopt;
  std::string array = "[";
  std::size_t i = 0;
  std::vector<std::string> plines;
  bool sum_ok = false;
  while (std::getline(f, line)) {
    if (line.compare(0, 2, "S\t") == 0) {
      sum_ok = !f.eof() && f.peek() == EOF && line.substr(2) == LinesChecksum(plines);
      break;
    }
    plines.push_back(line);
    // P \t path \t mtime_ns \t ctime_ns \t size \t files \t inodes \t summary
    constexpr int kTabs = 2 + kStampFields;
    std::size_t pos[kTabs];
    std::size_t from = 0;
    for (int k = 0; k < kTabs; ++k) {
      pos[k] = line.find('\t', from);
      if (pos[k] == std::string::npos) return std::nullopt;
      from = pos[k] + 1;
    }
    if (line.compare(0, pos[0], "P") != 0 || i >= found.plugins.size()) return std::nullopt;
    const plugin::Candidate& c = found.plugins[i++];
    if (line.compare(pos[0] + 1, pos[1] - pos[0] - 1, PathText(c.path)) != 0) return std::nullopt;
    plugin::Stamp old;
    if (!ParseNumber(line, pos[1] + 1, pos[2], old.mtime_ns) || !ParseNumber(line, pos[2] + 1, pos[3], old.ctime_ns) ||
        !ParseNumber(line, pos[3] + 1, pos[4], old.size) || !ParseNumber(line, pos[4] + 1, pos[5], old.files) ||
        !ParseNumber(line, pos[5] + 1, pos[6], old.inodes)) {
      return std::nullopt;
    }
    if (!plugin::ComputeStamp(c, false).SameMeta(old)) return std::nullopt;
    if (!c.insecure.empty()) return std::nullopt;
    // The summary must be what ToJson(r, false) writes for this plugin: an
    // object whose fields have their types and whose path is the line's.
    const std::size_t at = pos[kTabs - 1] + 1;
    const json summary = json::parse(line.begin() + static_cast<long>(at), line.end(), nullptr, false);
    std::string problem;
    const std::optional<PluginRecord> r = summary.is_discarded() ? std::nullopt : plugin::FromJson(summary, &problem);
    if (!r || r->path != c.path || summary.size() != 9) return std::nullopt;  // the summary fields of ToJson(r, false)
    // An "insecure" verdict is stale once the plugin is safe, or insecure
    // plugins are allowed (the listing must scan it).
    if (r->status == plugin::PluginStatus::kInsecure) return std::nullopt;
    if (array.size() > 1) array += ",";
    array.append(line, at, std::string::npos);  // checked above: valid JSON, as written
  }
  if (i != found.plugins.size() || !sum_ok) return std::nullopt;
  return array + "]";
}

}  // namespace ge::registry
