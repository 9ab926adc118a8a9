// ge/plugin/discovery.h: what a plugin is. The one discovery that the engine's
// host, the registry's scanner, ge-plugin-ls and its --check all use, so that
// they never disagree about a plugin's name, path, safety or freshness.
//
// The rules (share/docs/plugin-authors.md, "Opp folders"; share/docs/registry.md):
// - an opp path entry that is a folder is scanned one level deep, in byte order
//   of the entry names; each non-underscore `*.py` file and each sub-folder with
//   `__init__.py` is a plugin; an entry that is a `.py` file is one plugin;
// - a plugin's name is its directory entry's name (the stem for a file), also
//   when the entry is a symbolic link: `d.py -> _impl_d.py` is plugin `d`;
// - the same file reached twice (a link to a sibling plugin, one folder listed
//   twice) is one plugin, the first in path order;
// - plugin names are unique over the whole opp path: a later plugin of a name
//   already taken is a "conflict" naming both paths (first in path order wins),
//   whatever the isolation of either;
// - a name that is not a Python identifier is an "error"; a dangling link named
//   like a plugin is "missing" with its target;
// - the safety verdict ("insecure": writable by others, owned by another user,
//   or resolving outside its opp folder) is part of the candidate; the engine
//   refuses what the registry lists as insecure, with the same reason;
// - an opp path entry that is an opp root (it holds op_graph/lib/linux/<arch>/
//   or, the older layout, op_proto/lib/linux/<arch>/ for this machine's arch)
//   contributes each `lib*.so` of those folders as an op library candidate
//   (share/docs/op-packages.md), before the folder's own Python plugins; op
//   libraries are exempt from the Python name rules (their name is the file
//   name, and two opp roots may ship libraries of the same name).
// No Python here. Paths are bytes (POSIX): nothing is decoded.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ge/plugin/record.h"

namespace ge::plugin {

// Helper modules of single-file plugins: `_name.py` files and `_name/`
// packages beside them in their folder. A single-file plugin may import them
// (found after the standard library and installed packages), so they are part
// of its stamp and of its safety verdict.
struct FolderHelpers {
  std::vector<std::string> paths;  // absolute, in name order
};

// One plugin found on the opp path (nothing of it has run).
struct Candidate {
  std::string name;       // module name: the entry's own name (file stem or folder name)
  std::string path;       // absolute path of the entry: <opp folder>/<entry name> (never a link's target)
  std::string real_path;  // the canonical file or folder it resolves to (identity)
  std::string root;       // canonical opp folder it was found in (a file entry: its folder)
  bool is_package = false;
  // A C++ op library (`lib*.so` of an opp root, or a `.so` named directly):
  // loaded with dlopen, never imported by Python. Its stamp covers that one file.
  bool is_op_library = false;
  bool escapes = false;   // a symbolic link resolving outside `root`
  // Why it must not be loaded ("" when safe); filled by Discover unless
  // DiscoverOptions::check_safety is off. Text: "<path> is writable by others
  // (chmod o-w)" and the like.
  std::string insecure;
  std::shared_ptr<const FolderHelpers> helpers;  // single-file plugins: their folder's helpers (may be null)
  // What Discover's lstat of `path` saw when `path` is a regular file and not
  // a symbolic link (then it is also the stat of real_path); nullopt
  // otherwise. For DiscoveredStamp only: it describes the file at discovery.
  struct EntryStat {
    int64_t mtime_ns = 0, ctime_ns = 0;
    uint64_t size = 0, ino = 0;
  };
  std::optional<EntryStat> entry_stat;
};

struct DiscoverOptions {
  // The user whose files are trusted besides root (owner check): normally
  // geteuid().
  uid_t uid = 0;
  bool check_safety = true;
};

struct Discovery {
  std::vector<Candidate> plugins;     // in path order
  std::vector<PluginRecord> problems;  // entries that are no plugin (missing, error, conflict), in path order
};

// Splits a ':'-separated opp path, dropping empty entries.
std::vector<std::string> SplitOppPath(const std::string& value);

// Expands opp path entries (folders or `.py` files; relative entries are taken
// against `base_dir`, or the current directory when it is empty) into
// plugins. Never throws for a bad entry: each becomes a problem record naming
// it. Thread-safe (reads the file system only).
Discovery Discover(const std::vector<std::string>& entries, const DiscoverOptions& options,
                   const std::string& base_dir = {});

// One plugin named directly (LoadPlugin, ge-plugin-ls --check): a `.py` file,
// a package folder (with `__init__.py`) or an op library (a `.so` file), its
// name being the entry's own name. A folder without `__init__.py` is not one plugin: the result holds no
// plugin and one problem saying so (callers that accept opp folders test
// IsPluginFolder first and use Discover).
Discovery DiscoverOne(const std::string& path, const DiscoverOptions& options, const std::string& base_dir = {});

// True when `path` is a folder holding `__init__.py` (a package plugin rather
// than an opp folder).
bool IsPackageFolder(const std::string& path);

// The architecture folder name of op libraries for this build: "x86_64" or
// "aarch64" (upstream GE's spelling), else the compiler's machine name.
std::string OppLibraryArch();
// The op library folders of an opp root that exist, in load order:
// <root>/op_graph/lib/linux/<arch>, then <root>/op_proto/lib/linux/<arch>.
// Empty: `root` is no opp root. Reads the file system only; thread-safe.
std::vector<std::string> OppLibraryFolders(const std::string& root);

// The message of a plugin refused as insecure, the same in the engine's host
// and in the registry: "refused: <reason> (allow with --allow-insecure)".
std::string InsecureMessage(const std::string& reason);

// ---- stamps (the Stamp type: ge/plugin/record.h) ------------------------------------------
Stamp ComputeStamp(const Candidate& plugin, bool with_hash);
// ComputeStamp(plugin, false) as of discovery: for a single-file plugin
// without helpers whose entry is a regular file, from the lstat Discover took
// (Candidate::entry_stat; no second stat); otherwise ComputeStamp itself. For
// a freshness check right after Discover (the warm listing's index,
// share/docs/registry.md); never to stamp a plugin after it was scanned.
Stamp DiscoveredStamp(const Candidate& plugin);

// True when `old` still describes the plugin: same metadata, or (after a
// touch) the same content hash. Computes the hash only when needed. `now`,
// when given, receives the plugin's current stamp with its hash (old's when
// the metadata are the same, computed otherwise).
bool StillFresh(const Candidate& plugin, const Stamp& old, Stamp* now = nullptr);

}  // namespace ge::plugin
