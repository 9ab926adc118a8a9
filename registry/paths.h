// paths.h: what the registry tools agree on besides plugins: the socket
// protocol's version and limits, default locations (XDG; systemd's
// RUNTIME_DIRECTORY / CACHE_DIRECTORY; /run and /var/cache for root), the opp
// path, and how paths and plugin text are shown.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ge/hash.h"
#include "ge/registry/verdicts.h"  // DefaultCachePath

namespace ge::registry {

using nlohmann::json;

constexpr int kProtocolVersion = 1;
constexpr std::size_t kMaxMessageBytes = 64 * 1024;  // per request line

std::string DefaultSocketPath();
// The socket the daemon serves when --socket is not given: as
// DefaultSocketPath, except that a user other than root always gets their own
// (UserSocketPath()), never the system daemon's.
std::string DaemonSocketPath();
// Why `path` cannot name a Unix socket (empty, a NUL byte, or longer than
// sockaddr_un's sun_path allows: 107 bytes on Linux), naming the path, its
// length and the limit; nullopt when it can.
std::optional<std::string> SocketPathProblem(const std::string& path);

// The opp path from --opp-path, else ASCEND_CUSTOM_OPP_PATH, each entry made
// absolute against the current directory (what the cache stores and the
// daemon compares). Throws std::runtime_error naming the entry when a relative
// entry cannot be made absolute (the current directory was removed): a
// relative opp path is never stored.
std::vector<std::string> OppEntries(const std::string& opp_path_option);

// FNV-1a 64 (ge/hash.h): the listing index's checksum and the name of a
// listing's own cache.
using ge::Fnv1a64;

// ---- which cache (share/docs/registry.md, "Which cache") ------------------------------------

// DaemonCachePath (the cache the daemon reads and writes when --cache is not
// given) is declared with DefaultCachePath in ge/registry/verdicts.h.

// The caches a listing (ge-plugin-ls without a daemon) may use for the opp
// path `entries`. `candidates` are read in order (the first holding exactly
// `entries` is used); WriteTo says which one the listing writes back.
struct ListingCaches {
  std::string explicit_cache;  // --cache (read and written as asked)
  std::string default_cache;   // DefaultCachePath(): possibly the daemon's, for another opp path
  bool default_is_users = false;  // named by GE_PLUGIN_REGISTRY_CACHE or the user's own default
  std::string own;             // this user's listing cache of `entries` (UserCacheFolder()/listing-HASH.json)
  std::vector<std::string> candidates;
  // The cache to write after a scan, given the candidate whose records were
  // used ("" none): --cache; else the default cache when it held `entries`
  // and this user may write it, or when it is missing and is the user's own;
  // else `own`. A listing never replaces a cache that holds another opp path
  // (the daemon's, which ge-run --skip-crashed reads).
  std::string WriteTo(const std::string& used) const;
};
ListingCaches ChooseListingCaches(const std::string& cache_option, const std::vector<std::string>& entries);

// The user's folders (XDG Base Directory): $XDG_CACHE_HOME/ge-plugin, else
// ~/.cache/ge-plugin; the folder of UserCachePath().
std::string UserCacheFolder();

// Creates UserCacheFolder() private (0700, EnsureFolder), as the XDG Base
// Directory specification asks (share/docs/registry.md, "Which cache").
bool EnsureUserCacheFolder(std::string* why);

// Creates `folder` and its missing parents, each created with `mode` exactly
// (umask ignored): 0700 for a user's XDG folders, as the XDG Base Directory
// specification asks. Existing folders are left as they are. False with
// `why` (naming the folder) on failure, or when a component is not a folder.
bool EnsureFolder(const std::string& folder, mode_t mode, std::string* why);

// Why `folder`, a per-user folder for the socket (/tmp/ge-plugin-registry-UID),
// must not be used: owned by another user, or open to others (group or
// others have any access), naming the folder, its owner and mode; nullopt
// when it is private to this user (or missing). Another user could otherwise
// put a socket of theirs where this user's clients look.
std::optional<std::string> PrivateFolderProblem(const std::string& folder);
// The per-user socket's path: $XDG_RUNTIME_DIR/ge-plugin-registry.sock, else
// /tmp/ge-plugin-registry-UID/registry.sock.
std::string UserSocketPath();
// The entries as a JSON array of PathText spellings (ge/text.h).
json PathsJson(const std::vector<std::string>& entries);

// Plugin-provided text escaped for the terminal (ge::TerminalSafe, ge/text.h).
std::string Printable(const std::string& s);

}  // namespace ge::registry
