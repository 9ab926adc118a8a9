// paths.cc: see paths.h.
#include "paths.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>

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
std::string UserSocketPath() {
  if (const char* e = std::getenv("XDG_RUNTIME_DIR"); e && *e) return std::string(e) + "/ge-plugin-registry.sock";
  return "/tmp/ge-plugin-registry-" + std::to_string(::geteuid()) + "/registry.sock";
}
}  // namespace

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
    e = boost::filesystem::absolute(e, cwd).lexically_normal().string();
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

}  // namespace ge::registry
