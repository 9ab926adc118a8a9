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
#include <random>
#include <sstream>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "ge/file.h"
#include "ge/plugin/cache.h"
#include "ge/plugin/discovery.h"
#include "ge/text.h"
#include "listing_json.h"
#include "paths.h"

namespace ge::registry {

using nlohmann::json;
using plugin::PluginRecord;

bool WriteFileDurably(const std::string& path, const std::string& text, std::string* why) {
  const boost::filesystem::path target(path);
  // The temporary file gets a name nobody can predict and is created with
  // O_EXCL | O_NOFOLLOW: a file or symlink planted in the folder under that
  // name is never opened, so the write cannot be redirected to another file
  // (whoever may write the folder, e.g. a metrics textfile folder, could
  // otherwise make a root daemon overwrite any file). The mode is 0644 less
  // the umask, as an ordinary create.
  std::random_device rd;
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, ".tmp-%08x%08x", rd(), rd());
    tmp = path + suffix;
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
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
// Version 6: per plugin a P line (path in the PathText spelling, stamp with
// ctime and inodes), then one J line holding the `plugins` array as printed
// (checked in one pass, written with one write). The last line is
// "S\t<IndexChecksum of the P lines and the J line>", so an edited, cut or
// reordered index is never passed through. (Version 5 had the same lines with
// a byte-wise FNV-1a 64 checksum: 2.2M of a warm listing's 21M instructions.)
constexpr char kListHeader[] = "ge-plugin-list 7";
constexpr int kStampFields = 5;  // mtime_ns, ctime_ns, size, files, inodes

// The index's checksum over `bytes` (the P lines and the J line, each with
// its newline, as they follow each other in the file): FNV-1a 64's basis and
// prime over 8-byte little-endian words instead of bytes (the last one padded
// with zero bytes), each step followed by h ^= h >> 29 so that high bytes
// reach the low bits, then the same step over the length. Each step is a
// bijection of h, so any one changed word changes the result. A check
// against damage, not a signature (the J line is checked on its own).
// share/docs/registry.md, "The listing index"; test_untrusted_files.py has a
// Python copy.
std::string IndexChecksum(std::string_view bytes) {
  constexpr uint64_t kBasis = 14695981039346656037ULL, kPrime = 1099511628211ULL;
  uint64_t h = kBasis;
  auto step = [&h](uint64_t w) {
    h = (h ^ w) * kPrime;
    h ^= h >> 29;
  };
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);  // the words are little-endian whatever the machine
#endif
    step(w);
  }
  if (i < n) {
    uint64_t w = 0;
    for (std::size_t k = 0; i + k < n; ++k) w |= uint64_t{b[i + k]} << (8 * k);
    step(w);
  }
  step(static_cast<uint64_t>(n));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
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
bool ParseNumber(std::string_view line, std::size_t from, std::size_t to, T& out) {
  const auto [end, ec] = std::from_chars(line.data() + from, line.data() + to, out);
  return ec == std::errc() && end == line.data() + to;
}
}  // namespace

bool SaveListIndex(const std::string& cache_path, const std::vector<std::string>& entries,
                   const std::vector<PluginRecord>& ordered, std::string* why) {
  const std::string identity = CacheIdentity(cache_path);
  if (identity.empty()) return false;  // no cache, no index
  // The P lines and the J line, each with its newline: what the checksum covers.
  std::string body;
  std::string array = "J\t[";
  for (const auto& r : ordered) {
    const std::string path = PathText(r.path);
    if (path.empty() || path.find_first_of("\t\n") != std::string::npos) return false;  // not representable: no index
    // A failure of the scan itself is retried by the next listing
    // (refresh.cc): the index, which would pass it through, is not written.
    if (r.status == plugin::PluginStatus::kError && r.error.kind == plugin::ErrorKind::kScan) {
      if (why) *why = "no listing index: " + path + " failed to be scanned (retried next time)";
      return false;
    }
    const plugin::Stamp st = r.stamp.value_or(plugin::Stamp{});
    body += "P\t" + path + "\t" + std::to_string(st.mtime_ns) + "\t" + std::to_string(st.ctime_ns) + "\t" +
            std::to_string(st.size) + "\t" + std::to_string(st.files) + "\t" + std::to_string(st.inodes) + "\n";
    if (array.size() > 3) array += ',';
    array += plugin::ToJson(r, false).dump(-1, ' ', false, json::error_handler_t::replace);
  }
  body += array;
  body += "]\n";
  std::ostringstream out;
  out << kListHeader << "\n" << identity << "\n" << OppLine(entries) << "\n" << body << "S\t" << IndexChecksum(body) << "\n";
  return WriteFileDurably(ListIndexPath(cache_path), out.str(), why);
}

void FreshListing::WriteArray(std::ostream& out) const {
  out.write(text.data() + array_offset, static_cast<std::streamsize>(array_size));
}

std::optional<FreshListing> FreshListJson(const std::string& cache_path, const std::vector<std::string>& entries,
                                          bool allow_insecure) {
  // The index is a file like the cache: bounded, regular, and each line checked
  // before its summary is passed through (an edited line makes it stale).
  // Lines are views into the one buffer read; nothing is copied.
  std::optional<std::string> content =
      ReadBoundedFile(ListIndexPath(cache_path), plugin::kMaxCacheBytes, "registry file", nullptr);
  if (!content) return std::nullopt;
  const std::string_view text(*content);
  std::size_t next = 0;
  auto getline = [&](std::string_view& line) {
    if (next >= text.size()) return false;
    const std::size_t nl = text.find('\n', next);
    if (nl == std::string_view::npos) return false;  // every line ends with a newline, the last one too
    line = text.substr(next, nl - next);
    next = nl + 1;
    return true;
  };
  std::string_view line;
  if (!getline(line) || line != kListHeader) return std::nullopt;
  const std::string identity = CacheIdentity(cache_path);
  if (!getline(line) || identity.empty() || line != identity) return std::nullopt;
  if (!getline(line) || line != OppLine(entries)) return std::nullopt;
  plugin::DiscoverOptions dopts;
  dopts.uid = ::geteuid();
  dopts.check_safety = !allow_insecure;
  const plugin::Discovery found = plugin::Discover(entries, dopts);
  if (!found.problems.empty()) return std::nullopt;
  // The plugins as discovered (views of `found`), each checked against its P
  // line and its summary.
  std::vector<ListedPlugin> listed;
  listed.reserve(found.plugins.size());
  std::string_view array;
  const std::size_t body_begin = next;  // the checksum's bytes: the P lines and the J line
  while (getline(line) && line.substr(0, 2) == "P\t") {
    // P \t path \t mtime_ns \t ctime_ns \t size \t files \t inodes
    constexpr int kTabs = 1 + kStampFields;
    std::size_t pos[kTabs + 1];
    std::size_t from = 0;
    for (int k = 0; k < kTabs; ++k) {
      pos[k] = line.find('\t', from);
      if (pos[k] == std::string_view::npos) return std::nullopt;
      from = pos[k] + 1;
    }
    pos[kTabs] = line.size();
    const std::size_t i = listed.size();
    if (i >= found.plugins.size()) return std::nullopt;
    const plugin::Candidate& c = found.plugins[i];
    listed.push_back({c.name, c.path});
    if (!SpelledAs(line.substr(pos[0] + 1, pos[1] - pos[0] - 1), c.path, /*path=*/true)) return std::nullopt;
    plugin::Stamp old;
    if (!ParseNumber(line, pos[1] + 1, pos[2], old.mtime_ns) || !ParseNumber(line, pos[2] + 1, pos[3], old.ctime_ns) ||
        !ParseNumber(line, pos[3] + 1, pos[4], old.size) || !ParseNumber(line, pos[4] + 1, pos[5], old.files) ||
        !ParseNumber(line, pos[5] + 1, pos[6], old.inodes)) {
      return std::nullopt;
    }
    if (!c.insecure.empty()) return std::nullopt;
    // The stamp from discovery's own lstat where it suffices (one stat per plugin, not two).
    if (!plugin::DiscoveredStamp(c).SameMeta(old)) return std::nullopt;
  }
  // Every plugin discovered has its P line; then the J line, then the checksum, last.
  if (listed.size() != found.plugins.size() || line.substr(0, 2) != "J\t") return std::nullopt;
  array = line.substr(2);
  const std::string_view body = text.substr(body_begin, next - body_begin);
  if (!getline(line) || line.substr(0, 2) != "S\t" || next != text.size() || line.substr(2) != IndexChecksum(body)) {
    return std::nullopt;
  }
  // The summaries must be what ToJson(r, false) writes for these plugins, in
  // their order: objects whose fields have their types, the k-th naming the
  // k-th plugin's path and name as discovery found them (an "insecure"
  // verdict is stale once the plugin is safe, or insecure plugins are
  // allowed: the listing must scan it). Checked in one pass (no JSON tree),
  // then passed through as written.
  if (!IsListedArray(array, listed)) return std::nullopt;
  FreshListing fresh;
  fresh.array_offset = static_cast<std::size_t>(array.data() - text.data());
  fresh.array_size = array.size();
  fresh.text = std::move(*content);
  return fresh;
}

}  // namespace ge::registry
