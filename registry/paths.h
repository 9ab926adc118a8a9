// paths.h: what the registry tools agree on besides plugins: the socket
// protocol's version and limits, default locations (XDG; systemd's
// RUNTIME_DIRECTORY / CACHE_DIRECTORY; /run and /var/cache for root), the opp
// path, and how paths and plugin text are shown.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ge/registry/verdicts.h"  // DefaultCachePath

namespace ge::registry {

using nlohmann::json;

constexpr int kProtocolVersion = 1;
constexpr std::size_t kMaxMessageBytes = 64 * 1024;  // per request line

std::string DefaultSocketPath();
// Why `path` cannot name a Unix socket (empty, a NUL byte, or longer than
// sockaddr_un's sun_path allows: 107 bytes on Linux), naming the path, its
// length and the limit; nullopt when it can.
std::optional<std::string> SocketPathProblem(const std::string& path);

// The opp path from --opp-path, else ASCEND_CUSTOM_OPP_PATH, each entry made
// absolute against the current directory (what the cache stores and the
// daemon compares).
std::vector<std::string> OppEntries(const std::string& opp_path_option);
// The entries as a JSON array of PathText spellings (ge/text.h).
json PathsJson(const std::vector<std::string>& entries);

// Plugin-provided text escaped for the terminal (ge::TerminalSafe, ge/text.h).
std::string Printable(const std::string& s);

}  // namespace ge::registry
