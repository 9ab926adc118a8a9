// paths.cc: see paths.h.
#include "paths.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <boost/filesystem.hpp>

#include "ge/plugin/discovery.h"
#include "ge/text.h"

namespace ge::registry {

// The system daemon's socket (share/systemd/ge-plugin-registryd.socket.in).
constexpr char kSystemSocket[] = "/run/ge-plugin-registry/registry.sock";

namespace {
bool PathExists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}
}  // namespace

std::string UserSocketPath() {
  // XDG: a relative $XDG_RUNTIME_DIR is invalid and ignored.
  if (const char* e = std::getenv("XDG_RUNTIME_DIR"); e && *e == '/') return std::string(e) + "/ge-plugin-registry.sock";
  return "/tmp/ge-plugin-registry-" + std::to_string(::geteuid()) + "/registry.sock";
}

// Explicit (environment) > systemd's directories (the daemon under systemd) >
// root: the system places > a user's own daemon when present > the system
// daemon when present > the user's place.
std::string DefaultSocketPath() {
  if (const char* e = std::getenv("GE_PLUGIN_REGISTRY_SOCKET"); e && *e) return e;
  if (const char* e = std::getenv("RUNTIME_DIRECTORY"); e && *e) return std::string(e) + "/registry.sock";
  if (::geteuid() == 0) return kSystemSocket;
  const std::string user = UserSocketPath();
  if (!PathExists(user) && PathExists(kSystemSocket)) return kSystemSocket;
  return user;
}

std::string DaemonSocketPath() {
  if (const char* e = std::getenv("GE_PLUGIN_REGISTRY_SOCKET"); e && *e) return e;
  if (const char* e = std::getenv("RUNTIME_DIRECTORY"); e && *e) return std::string(e) + "/registry.sock";
  if (::geteuid() == 0) return kSystemSocket;
  return UserSocketPath();
}

std::optional<std::string> SocketPathProblem(const std::string& path) {
  constexpr std::size_t kMax = sizeof(sockaddr_un::sun_path) - 1;  // room for the terminating NUL
  if (path.empty()) return std::string("the socket path is empty");
  if (path.find('\0') != std::string::npos) return "socket path " + Printable(Abbreviate(path)) + " contains a NUL byte";
  if (path.size() > kMax) {
    return "socket path " + Printable(Abbreviate(path)) + " is " + std::to_string(path.size()) +
           " bytes long; a Unix socket path may be at most " + std::to_string(kMax) +
           " bytes (choose a shorter --socket, GE_PLUGIN_REGISTRY_SOCKET or RUNTIME_DIRECTORY)";
  }
  return std::nullopt;
}

std::vector<std::string> OppEntries(const std::string& opt) {
  std::vector<std::string> entries;
  if (!opt.empty()) {
    entries = plugin::SplitOppPath(opt);
  } else if (const char* e = std::getenv("ASCEND_CUSTOM_OPP_PATH")) {
    entries = plugin::SplitOppPath(e);
  }
  boost::system::error_code ec;
  const boost::filesystem::path cwd = boost::filesystem::current_path(ec);
  for (auto& e : entries) {
    if (e[0] != '/' && (ec || cwd.empty())) {
      throw std::runtime_error("opp path entry '" + Printable(PathText(e)) +
                               "' is relative and the current directory is unknown (" +
                               (ec ? ec.message() : std::string("empty")) + "); give an absolute path");
    }
    // An absolute entry needs no current directory (it may be gone).
    e = (e[0] == '/' ? boost::filesystem::path(e) : boost::filesystem::absolute(e, cwd)).lexically_normal().string();
    // Boost spells a trailing slash "dir/." after normalization.
    if (e.size() > 2 && e.compare(e.size() - 2, 2, "/.") == 0) e.resize(e.size() - 2);
  }
  return entries;
}

json PathsJson(const std::vector<std::string>& entries) {
  json a = json::array();
  for (const auto& e : entries) a.push_back(PathText(e));
  return a;
}

std::string Printable(const std::string& s) { return TerminalSafe(s); }

// ---- which cache ----------------------------------------------------------------------------

namespace {
std::string Parent(const std::string& p) {
  const boost::filesystem::path bp(p);
  return bp.has_parent_path() ? bp.parent_path().string() : ".";
}
}  // namespace

std::string UserCacheFolder() { return Parent(UserCachePath()); }

ListingCaches ChooseListingCaches(const std::string& cache_option, const std::vector<std::string>& entries) {
  ListingCaches c;
  if (!cache_option.empty()) {
    c.explicit_cache = cache_option;
    c.candidates = {cache_option};
    return c;
  }
  c.default_cache = DefaultCachePath();
  const char* env = std::getenv("GE_PLUGIN_REGISTRY_CACHE");
  c.default_is_users = (env && *env) || c.default_cache == UserCachePath();
  // Keyed by the opp path as the cache stores it: one listing cache per opp path.
  c.own = UserCacheFolder() + "/listing-" + Fnv1a64().Add(PathsJson(entries).dump()).Hex() + ".json";
  c.candidates = {c.default_cache};
  if (c.own != c.default_cache) c.candidates.push_back(c.own);
  return c;
}

std::string ListingCaches::WriteTo(const std::string& used) const {
  if (!explicit_cache.empty()) return explicit_cache;
  // Writing means a temporary file and a rename in the cache's folder.
  if (!used.empty() && used == default_cache && ::access(Parent(default_cache).c_str(), W_OK) == 0) {
    return default_cache;
  }
  struct stat st {};
  if (used.empty() && default_is_users && ::lstat(default_cache.c_str(), &st) != 0 && errno == ENOENT) {
    return default_cache;
  }
  return own;
}

bool EnsureFolder(const std::string& folder, mode_t mode, std::string* why) {
  const boost::filesystem::path target = boost::filesystem::path(folder).lexically_normal();
  boost::filesystem::path sofar;
  for (const auto& part : target) {
    sofar /= part;
    if (part == "." || part == "/" || part.empty()) continue;
    struct stat st {};
    if (::stat(sofar.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        if (why) *why = "cannot create " + Printable(folder) + ": " + Printable(sofar.string()) + " is not a folder";
        return false;
      }
      continue;
    }
    if (::mkdir(sofar.c_str(), mode) != 0) {
      if (errno == EEXIST) continue;  // made meanwhile (another process)
      if (why) *why = "cannot create " + Printable(sofar.string()) + ": " + std::strerror(errno);
      return false;
    }
    ::chmod(sofar.c_str(), mode);  // the mode asked for, whatever the umask
  }
  return true;
}

bool EnsureUserCacheFolder(std::string* why) { return EnsureFolder(UserCacheFolder(), 0700, why); }

std::optional<std::string> PrivateFolderProblem(const std::string& folder) {
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0) return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if (!S_ISDIR(st.st_mode)) return Printable(folder) + " is not a folder (a symbolic link or a file)";
  if (st.st_uid != ::geteuid()) {
    return Printable(folder) + " belongs to uid " + std::to_string(st.st_uid) + ", not to uid " +
           std::to_string(::geteuid()) + "; remove it or choose another --socket";
  }
  if ((st.st_mode & 077) != 0) {
    return Printable(folder) + " has mode " + mode + ", open to other users (expected 0700); chmod 700 it";
  }
  return std::nullopt;
}

}  // namespace ge::registry
