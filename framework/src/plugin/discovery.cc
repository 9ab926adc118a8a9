// discovery.cc: see ge/plugin/discovery.h.
//
// Link resolution, path arithmetic and the listing of package and library
// folders use Boost.Filesystem; an opp folder is listed with readdir (its
// entries are many and named by string: ListNamesSorted). The stamp and the
// safety verdict read struct stat directly, because they need what
// Boost.Filesystem does not expose (ctime, inode number, owner, mode of the
// link itself).
#include "ge/plugin/discovery.h"

#include "ge/hash.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>

#include <boost/filesystem.hpp>

namespace fs = boost::filesystem;

namespace ge::plugin {

namespace {

// Bounds of a package walk: a plugin folder holding a whole file system (a
// link loop, a mounted tree) must not stall the listing.
// A package deeper or larger than this is refused as insecure ("too large to
// check") rather than half checked and half stamped.
constexpr int kMaxDepth = 32;
constexpr std::size_t kMaxFiles = 10000;

// The part of a stat a stamp uses.
Candidate::EntryStat EntryStatOf(const struct stat& st) {
  Candidate::EntryStat e;
  e.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000LL + st.st_mtim.tv_nsec;
  e.ctime_ns = int64_t{st.st_ctim.tv_sec} * 1000000000LL + st.st_ctim.tv_nsec;
  e.size = static_cast<uint64_t>(st.st_size);
  e.ino = static_cast<uint64_t>(st.st_ino);
  return e;
}

bool IsUnder(const std::string& path, const std::string& root) {
  return path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
         (root == "/" || path[root.size()] == '/');
}

// Python's keywords: valid identifiers no `import` statement can name.
const std::set<std::string> kKeywords{"False", "None", "True", "and", "as", "assert", "async", "await", "break",
                                      "class", "continue", "def", "del", "elif", "else", "except", "finally", "for",
                                      "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or",
                                      "pass", "raise", "return", "try", "while", "with", "yield"};

bool IsIdentifier(const std::string& s) {
  if (kKeywords.count(s)) return false;
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (unsigned char c : s) {
    if (!(std::isalnum(c) || c == '_') || c >= 0x80) return false;
  }
  return true;
}

std::string Canonical(const fs::path& p) {
  boost::system::error_code ec;
  fs::path c = fs::canonical(p, ec);
  return ec ? p.lexically_normal().string() : c.string();
}

fs::path Absolute(const std::string& entry, const std::string& base_dir) {
  fs::path p(entry);
  if (!p.is_absolute()) {
    boost::system::error_code ec;
    p = (base_dir.empty() ? fs::current_path(ec) : fs::path(base_dir)) / p;
  }
  std::string s = p.lexically_normal().string();
  // Boost spells a trailing slash ("pk/", what shell completion gives) "pk/.".
  while (s.size() > 2 && s.compare(s.size() - 2, 2, "/.") == 0) s.resize(s.size() - 2);
  return fs::path(s);
}

std::string LinkTarget(const fs::path& p) {
  boost::system::error_code ec;
  const fs::path t = fs::read_symlink(p, ec);
  return ec ? std::string("?") : t.string();
}

bool IsPackageDir(const fs::path& p) {
  boost::system::error_code ec;
  return fs::is_directory(p, ec) && fs::is_regular_file(p / "__init__.py", ec);
}

bool IsLibraryName(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 6 && name.compare(0, 3, "lib") == 0 && p.extension() == ".so";
}

// The entry names of `dir` in name order ("." and ".." left out), with
// readdir: the opp folder's listing on the warm path, where building a
// Boost.Filesystem path per entry and asking it for its file name and
// extension cost more than the readdir itself (1000 plugins: about 1 ms of
// a warm listing's 18, perf stat). `ec` gets readdir's error (the same
// message as Boost's: the system category's).
std::vector<std::string> ListNamesSorted(const std::string& dir, boost::system::error_code& ec) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    ec.assign(errno, boost::system::system_category());
    return names;
  }
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const char* n = e->d_name;
    if (!(n[0] == '.' && (n[1] == 0 || (n[1] == '.' && n[2] == 0)))) names.emplace_back(n);
    errno = 0;
  }
  if (errno != 0) ec.assign(errno, boost::system::system_category());
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// `folder`/`name` as Boost.Filesystem spells it (no doubled slash under "/").
std::string JoinPath(const std::string& folder, const std::string& name) {
  std::string p;  // one allocation (folder + "/" + name makes a temporary first)
  p.reserve(folder.size() + 1 + name.size());
  p += folder;
  if (!(folder.size() == 1 && folder[0] == '/')) p += '/';
  p += name;
  return p;
}

// A file name's extension as fs::path::extension gives it for the names a
// folder's listing yields (never "." or ".."): from the last dot, "" when
// there is none or the name starts with its only dot. Borrowed: a view into
// `name`, so a temporary string is refused at compile time (deleted below).
std::string_view NameExtension(std::string_view name) {
  const std::size_t dot = name.rfind('.');
  return dot == std::string_view::npos || dot == 0 ? std::string_view() : name.substr(dot);
}
std::string_view NameExtension(std::string&& temporary_name) = delete;

// The `_name.py` files and `_name/` packages of a folder (helper modules of
// its single-file plugins), in name order.
std::shared_ptr<const FolderHelpers> HelpersOf(const std::vector<fs::path>& children) {
  auto h = std::make_shared<FolderHelpers>();
  for (const auto& c : children) {
    const std::string name = c.filename().string();
    if (name.size() < 2 || name[0] != '_' || name == "__pycache__" || name == "__init__.py") continue;
    boost::system::error_code ec;
    if ((fs::is_regular_file(c, ec) && c.extension() == ".py") || IsPackageDir(c)) h->paths.push_back(c.string());
  }
  if (h->paths.empty()) return nullptr;
  return h;
}

// The same over a listing's names (ListNamesSorted): only the names that can
// be helpers become paths.
std::shared_ptr<const FolderHelpers> HelpersOf(const std::string& folder, const std::vector<std::string>& names) {
  std::vector<fs::path> candidates;
  for (const auto& n : names) {
    if (n.size() >= 2 && n[0] == '_') candidates.emplace_back(JoinPath(folder, n));
  }
  return HelpersOf(candidates);
}

std::vector<fs::path> ListSorted(const fs::path& dir, boost::system::error_code& ec) {
  std::vector<std::pair<std::string, fs::path>> named;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    named.emplace_back(it->path().filename().string(), it->path());
  }
  std::sort(named.begin(), named.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<fs::path> children;
  children.reserve(named.size());
  for (auto& n : named) children.push_back(std::move(n.second));
  return children;
}

// The helpers of a folder named directly (a file entry, LoadPlugin, the
// scanner child loading one plugin after another from one folder): listed
// once per process while the folder's mtime and ctime stay the same (adding,
// removing or renaming an entry changes them).
std::shared_ptr<const FolderHelpers> CachedHelpersOf(const fs::path& folder);

std::shared_ptr<const FolderHelpers> CachedHelpersOf(const fs::path& folder) {
  struct Entry {
    int64_t mtime_ns = 0, ctime_ns = 0;
    std::shared_ptr<const FolderHelpers> helpers;
  };
  static std::mutex mu;
  static std::map<std::string, Entry> cache;
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) return nullptr;
  const int64_t m = int64_t{st.st_mtim.tv_sec} * 1000000000LL + st.st_mtim.tv_nsec;
  const int64_t c = int64_t{st.st_ctim.tv_sec} * 1000000000LL + st.st_ctim.tv_nsec;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(folder.string());
    if (it != cache.end() && it->second.mtime_ns == m && it->second.ctime_ns == c) return it->second.helpers;
  }
  boost::system::error_code ec;
  auto helpers = HelpersOf(ListSorted(folder, ec));
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 1024) cache.clear();  // bounded: folders are few
  cache[folder.string()] = Entry{m, c, helpers};
  return helpers;
}

std::string UserName(uid_t uid) {
  if (const passwd* pw = ::getpwuid(uid)) return pw->pw_name;
  return std::to_string(uid);
}

// Why a file or folder whose lstat is `st` is unsafe, or "" (a link itself
// is never the problem: its target is checked).
std::string ModeReason(const std::string& p, const struct stat& st, uid_t uid) {
  if (S_ISLNK(st.st_mode)) return {};
  if (st.st_mode & S_IWOTH) return p + " is writable by others (chmod o-w)";
  if (st.st_uid != 0 && st.st_uid != uid) {
    return p + " is owned by user " + UserName(st.st_uid) + ", neither root nor the loading user " + UserName(uid);
  }
  return {};
}

// Why one file or folder (not followed when it is a link) is unsafe, or "".
std::string CheckOne(const std::string& p, uid_t uid) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return {};
  return ModeReason(p, st, uid);
}

// Walks a package tree (bounded, without __pycache__), calling `visit` for
// each path; stops at the first non-empty answer.
// A walk that hits kMaxDepth or kMaxFiles answers kTooLarge.
template <typename Visit>
std::string WalkTree(const std::string& dir, Visit visit) {
  boost::system::error_code ec;
  fs::recursive_directory_iterator it(dir, ec), end;
  std::size_t n = 0;
  for (; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == "__pycache__") {
      it.disable_recursion_pending();
      continue;
    }
    if (it.depth() > kMaxDepth || ++n > kMaxFiles) {
      return dir + " holds more than " + std::to_string(kMaxFiles) + " files or " + std::to_string(kMaxDepth) +
             " levels of folders: too large to check";
    }
    if (std::string r = visit(it->path()); !r.empty()) return r;
  }
  return {};
}

std::string TreeReason(const std::string& dir, uid_t uid) {
  return WalkTree(dir, [&](const fs::path& p) -> std::string {
    if (auto r = CheckOne(p.string(), uid); !r.empty()) return r;
    boost::system::error_code ec;
    if (fs::is_symlink(p, ec)) {
      const std::string target = Canonical(p);
      if (target != dir && !IsUnder(target, dir)) {
        return p.string() + " resolves outside the plugin folder " + dir + " (a symbolic link)";
      }
    }
    return {};
  });
}

// A helper module (a `_name.py` or `_name/` beside single-file plugins): it
// and, when it is a link, its target and the target's folder; a link leaving
// the opp folder is refused like a plugin's.
std::string HelperReason(const std::string& h, const std::string& root, uid_t uid) {
  if (auto r = CheckOne(h, uid); !r.empty()) return r;
  const std::string target = Canonical(h);
  if (target != h) {
    if (!IsUnder(target, root)) return h + " resolves outside its opp folder " + root + " (a symbolic link to " + target + ")";
    if (auto r = CheckOne(target, uid); !r.empty()) return r;
  }
  if (IsPackageDir(target)) return TreeReason(target, uid);
  return {};
}

// `root_reason`: the verdict on c.root, taken once per opp folder by the
// caller; `entry_reason`: the verdict on c.path when the caller has its lstat
// already (null: taken here).
std::string InsecureReason(const Candidate& c, uid_t uid, const std::string& root_reason,
                           const std::string* entry_reason) {
  if (c.escapes) return c.path + " resolves outside its opp folder " + c.root + " (a symbolic link to " + c.real_path + ")";
  // The opp folder, the entry, and for a link what it resolves to and the
  // folder that holds the target: whoever can write one of them can change
  // what is loaded.
  if (!root_reason.empty()) return root_reason;
  if (auto r = entry_reason ? *entry_reason : CheckOne(c.path, uid); !r.empty()) return r;
  if (c.real_path != c.path) {
    if (auto r = CheckOne(c.real_path, uid); !r.empty()) return r;
    const std::string target_folder = fs::path(c.real_path).parent_path().string();
    if (target_folder != c.root) {
      if (auto r = CheckOne(target_folder, uid); !r.empty()) return r;
    }
  }
  if (c.is_package) {
    if (auto r = TreeReason(c.real_path, uid); !r.empty()) return r;
  }
  if (c.helpers) {
    for (const auto& h : c.helpers->paths) {
      if (auto r = HelperReason(h, c.root, uid); !r.empty()) return r;
    }
  }
  return {};
}

class Builder {
 public:
  explicit Builder(const DiscoverOptions& o) : opts_(o) {}

  // A problem is reported once, also when its entry is listed twice.
  void Problem(const std::string& name, const std::string& path, PluginStatus status, const std::string& message) {
    if (!problems_seen_.emplace(path, message).second) return;
    out_.problems.push_back(ProblemRecord(name, path, status, ErrorKind::kDiscovery, message));
  }

  // `entry_reason`: the safety verdict on c.path when the caller has its
  // lstat already (null: taken here).
  // `folder_reason`: the verdict on the folders between c.root and the
  // entry (an op library's lib/linux/<arch> chain), "" when none.
  void Accept(Candidate c, const std::string* entry_reason = nullptr, const std::string& folder_reason = {}) {
    // The same file reached twice is one plugin: silently when it is the same
    // entry (a folder listed twice), reported when another entry (a link to a
    // sibling) names it.
    // A link leaving its opp folder is refused, and must not hide the plugin
    // it points at: it is keyed by its own path.
    // The entry is kept only when it is not the key itself (a link): most
    // plugins are no link, and their path is not copied twice.
    const std::string& key = c.escapes ? c.path : c.real_path;
    auto [first, fresh_file] = seen_.emplace(key, key == c.path ? std::string() : c.path);
    std::string_view first_entry = first->second.empty() ? first->first : first->second;
    // An op library hard-linked under another name is the same file too
    // (dlopen would return the first one's handle): keyed by (device, inode).
    struct stat id_st {};
    if (fresh_file && c.is_op_library && !c.escapes && ::stat(c.real_path.c_str(), &id_st) == 0) {
      auto [same, fresh_id] = seen_ids_.emplace(std::make_pair(id_st.st_dev, id_st.st_ino), c.path);
      if (!fresh_id) {
        first_entry = same->second;
        seen_.erase(first);
        fresh_file = false;
      }
    }
    if (!fresh_file) {
      if (first_entry != c.path) {
        PluginRecord r = ProblemRecord(c.name, c.path, PluginStatus::kConflict, ErrorKind::kConflict,
                                       c.path + " is the same file as " + std::string(first_entry) +
                                           ", already a plugin (a file is loaded once; first in path order wins)");
        r.conflicts_with = std::string(first_entry);
        out_.problems.push_back(std::move(r));
      }
      return;
    }
    if (!c.is_op_library && !IsIdentifier(c.name)) {
      Problem(c.name, c.path, PluginStatus::kError,
              "plugin name '" + c.name + "' (" + c.path +
                  ") is not a valid Python module name (letters, digits and '_', not starting with a digit)");
      return;
    }
    // The owner is the candidate pushed below (its index in out_.plugins).
    auto [it, fresh] = c.is_op_library ? std::make_pair(owners_.end(), true) : owners_.emplace(c.name, out_.plugins.size());
    if (!fresh) {
      const std::string& owner = out_.plugins[it->second].path;
      PluginRecord r = ProblemRecord(c.name, c.path, PluginStatus::kConflict, ErrorKind::kConflict,
                                     "plugin name '" + c.name + "' of " + c.path + " is already used by " + owner +
                                         " (plugin names are unique over the opp path; first in path order wins)");
      r.conflicts_with = owner;
      out_.problems.push_back(std::move(r));
      return;
    }
    if (opts_.check_safety) {
      auto root = root_reasons_.find(c.root);
      if (root == root_reasons_.end()) root = root_reasons_.emplace(c.root, CheckOne(c.root, opts_.uid)).first;
      c.insecure = InsecureReason(c, opts_.uid, root->second.empty() ? folder_reason : root->second, entry_reason);
    }
    out_.plugins.push_back(std::move(c));
  }

  // A child of an opp folder (or a file entry): a plugin, a helper, a dangling
  // link, or nothing.
  // `dir_fd`: the opp folder `root` opened (O_DIRECTORY), or -1: the entry's
  // lstat is then taken by its full path. Relative to the folder's fd it is
  // one name lookup instead of one per path component (measured: a warm
  // listing of 1000 plugins spent about a fifth of its CPU time in these
  // stats by full path).
  // `name`: the entry's name in `root` (from ListNamesSorted: its path and
  // extension are taken from the name, without a Boost.Filesystem path).
  void Child(const std::string& name, const std::string& root, const std::shared_ptr<const FolderHelpers>& helpers,
             int dir_fd = -1) {
    if (name.empty() || name[0] == '_' || name[0] == '.') return;  // helpers, __pycache__, hidden files
    std::string full = JoinPath(root, name);
    // One lstat gives the kind of entry and its safety verdict; a link is
    // followed with a stat of its own.
    struct stat lst {};
    if ((dir_fd >= 0 ? ::fstatat(dir_fd, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) : ::lstat(full.c_str(), &lst)) != 0) {
      return;
    }
    const bool link = S_ISLNK(lst.st_mode);
    // A Boost.Filesystem path only where one is asked (a link, a folder, a
    // problem): a regular file, the common case, needs none.
    const fs::path p = link || !S_ISREG(lst.st_mode) ? fs::path(full) : fs::path();
    boost::system::error_code ec;
    const fs::file_status st = link ? fs::status(p, ec)
                                    : fs::file_status(S_ISREG(lst.st_mode)   ? fs::regular_file
                                                      : S_ISDIR(lst.st_mode) ? fs::directory_file
                                                                             : fs::type_unknown);
    const std::string_view ext = NameExtension(name);
    const bool is_py = ext == ".py";
    const bool named_like_plugin = is_py || ext.empty();
    if (link && !fs::exists(st)) {
      if (!named_like_plugin) return;
      if (ec.value() == ELOOP) {
        Problem(p.stem().string(), p.string(), PluginStatus::kError, p.string() + " is a symbolic link loop");
      } else {
        Problem(p.stem().string(), p.string(), PluginStatus::kMissing,
                p.string() + " is a symbolic link to " + LinkTarget(p) + ", which does not exist");
      }
      return;
    }
    if (is_py && !fs::is_regular_file(st) && !fs::is_directory(st)) {
      // A FIFO, a device (a link to /dev/zero): never read, but not dropped silently.
      Problem(p.stem().string(), p.string(), PluginStatus::kError,
              p.string() + " is not a regular file (a FIFO, socket or device): not loaded");
      return;
    }
    Candidate c;
    if (fs::is_regular_file(st) && is_py) {
      c.name = name.substr(0, name.size() - ext.size());
      c.helpers = helpers;
    } else if (fs::is_directory(st) && IsPackageDir(p)) {
      c.name = name;
      c.is_package = true;
    } else {
      return;
    }
    c.real_path = link ? Canonical(p) : full;
    c.path = std::move(full);
    c.root = root;
    c.escapes = link && !IsUnder(c.real_path, root);
    if (!link && S_ISREG(lst.st_mode)) c.entry_stat = EntryStatOf(lst);
    const std::string entry_reason = opts_.check_safety ? ModeReason(c.path, lst, opts_.uid) : std::string();
    Accept(std::move(c), &entry_reason);
  }

  // A `lib*.so` in an op library folder of the opp root `root`; `chain`: the
  // safety verdict on the folders from the root down to it.
  void Library(const fs::path& p, const std::string& root, const std::string& chain) {
    if (!IsLibraryName(p)) return;
    struct stat lst {};
    if (::lstat(p.c_str(), &lst) != 0) return;
    const bool link = S_ISLNK(lst.st_mode);
    boost::system::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    const std::string name = p.filename().string();
    if (link && !fs::exists(st)) {
      if (ec.value() == ELOOP) {
        Problem(name, p.string(), PluginStatus::kError, p.string() + " is a symbolic link loop");
      } else {
        Problem(name, p.string(), PluginStatus::kMissing,
                p.string() + " is a symbolic link to " + LinkTarget(p) + ", which does not exist");
      }
      return;
    }
    if (!fs::is_regular_file(st)) {
      Problem(name, p.string(), PluginStatus::kError,
              p.string() + " is not a regular file (a folder, FIFO, socket or device): not loaded as an op library");
      return;
    }
    Candidate c;
    c.name = name;
    c.path = p.string();
    c.root = root;
    c.is_op_library = true;
    c.real_path = link ? Canonical(p) : p.string();
    c.escapes = link && !IsUnder(c.real_path, root);
    if (!link && S_ISREG(lst.st_mode)) c.entry_stat = EntryStatOf(lst);
    const std::string entry_reason = opts_.check_safety ? ModeReason(c.path, lst, opts_.uid) : std::string();
    Accept(std::move(c), &entry_reason, chain);
  }

  // A folder that looks meant as an opp root but has no op library folder
  // for this machine is reported, not skipped in silence (an author's layout
  // mistake would otherwise surface only as "canonical IR not found").
  void MisplacedLibraries(const std::string& root, const std::vector<std::string>& names) {
    const std::string arch = OppLibraryArch();
    boost::system::error_code ec;
    for (const char* layout : {"op_graph", "op_proto"}) {
      const fs::path top = fs::path(root) / layout;
      if (!fs::is_directory(top, ec) || fs::is_directory(top / "lib" / "linux" / arch, ec)) continue;
      std::string found;
      for (const auto& sub : ListSorted((top / "lib" / "linux").string(), ec)) {
        found += (found.empty() ? "" : ", ") + sub.filename().string();
      }
      ec.clear();
      Problem(layout, top.string(), PluginStatus::kError,
              "opp root " + root + " has " + layout + "/ but no " + layout + "/lib/linux/" + arch +
                  "/ (op libraries for this machine go there" +
                  (found.empty() ? std::string(")") : "; lib/linux/ has: " + found + ")"));
    }
    std::size_t libraries = 0;
    for (const auto& name : names) {
      if (name.size() > 6 && name.compare(0, 3, "lib") == 0 && NameExtension(name) == ".so") ++libraries;
    }
    if (libraries > 0 && OppLibraryFolders(root).empty()) {
      Problem(fs::path(root).filename().string(), root, PluginStatus::kError,
              "opp folder " + root + " holds " + std::to_string(libraries) +
                  " lib*.so file(s), which are not loaded from there: op libraries belong in an opp root's "
                  "op_graph/lib/linux/" + arch + "/ (put that root on the opp path), or name a library directly");
    }
  }

  // The op libraries of an opp root (nothing when `root` is none).
  void OppRoot(const std::string& root) {
    for (const std::string& folder : OppLibraryFolders(root)) {
      // Whoever can write a folder between the opp root and the library can
      // replace what is loaded: each is checked like the opp folder itself.
      std::string chain;
      if (opts_.check_safety) {
        fs::path at(root);
        for (const auto& part : fs::path(folder.substr(root.size() + 1))) {
          at /= part;
          if (chain.empty()) chain = CheckOne(at.string(), opts_.uid);
        }
      }
      boost::system::error_code ec;
      for (const auto& lib : ListSorted(folder, ec)) Library(lib, root, chain);
      if (ec) Problem(fs::path(folder).filename().string(), folder, PluginStatus::kError,
                      "cannot list op library folder " + folder + ": " + ec.message());
    }
  }

  void Folder(const fs::path& dir, const std::string& shown) {
    const std::string root = Canonical(dir);
    boost::system::error_code ec;
    const std::vector<std::string> names = ListNamesSorted(root, ec);
    if (ec) {
      Problem(dir.filename().string(), shown, PluginStatus::kError,
              "cannot list opp folder " + shown + ": " + ec.message());
      return;
    }
    OppRoot(root);
    MisplacedLibraries(root, names);
    const auto helpers = HelpersOf(root, names);
    // The children are stat'ed relative to the folder (see Child); when it
    // cannot be opened they are stat'ed by path, with the same verdicts.
    const int dir_fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    out_.plugins.reserve(out_.plugins.size() + names.size());
    seen_.reserve(seen_.size() + names.size());
    owners_.reserve(owners_.size() + names.size());
    for (const auto& name : names) Child(name, root, helpers, dir_fd);
    if (dir_fd >= 0) ::close(dir_fd);
  }

  // A `.py` file or a package folder named directly: its folder is made
  // canonical, its own name kept. That folder is its opp folder, so a link
  // leaving it is refused as it is when the folder is listed.
  void Named(const fs::path& abs, bool is_package, bool is_library = false) {
    const fs::path folder(Canonical(abs.parent_path()));
    const fs::path p = folder / abs.filename();
    Candidate c;
    c.is_op_library = is_library;
    c.name = is_package || is_library ? p.filename().string() : p.stem().string();
    c.path = p.string();
    c.real_path = Canonical(p);
    c.root = folder.string();
    c.escapes = c.real_path != c.path && !IsUnder(c.real_path, c.root);
    c.is_package = is_package;
    if (!is_package && !is_library) c.helpers = CachedHelpersOf(folder);
    Accept(std::move(c));
  }

  // Missing entries, dangling links and link loops named directly; the
  // message names the absolute path (the same whatever the spelling given).
  bool Exists(const fs::path& abs) {
    boost::system::error_code ec;
    const fs::file_status st = fs::status(abs, ec);
    if (fs::exists(st)) return true;
    const std::string name = abs.extension() == ".py" ? abs.stem().string() : abs.filename().string();
    const std::string entry = abs.string();
    if (ec.value() == ELOOP) {
      Problem(name, entry, PluginStatus::kError, "opp path entry " + entry + " is a symbolic link loop");
    } else if (fs::is_symlink(fs::symlink_status(abs, ec))) {
      Problem(name, entry, PluginStatus::kMissing,
              "opp path entry " + entry + " is a symbolic link to " + LinkTarget(abs) + ", which does not exist");
    } else {
      Problem(name, entry, PluginStatus::kMissing, "opp path entry " + entry + " does not exist");
    }
    return false;
  }

  Discovery Take() { return std::move(out_); }

 private:
  const DiscoverOptions& opts_;
  Discovery out_;
  // Looked up, never iterated: hashed (1000 plugins of one folder share a long
  // prefix that an ordered map compares again at every level).
  // real path -> the entry that named it first ("" when that is the real path itself)
  std::unordered_map<std::string, std::string> seen_;
  std::map<std::pair<dev_t, ino_t>, std::string> seen_ids_;  // op libraries: (device, inode) -> that entry
  std::unordered_map<std::string, std::size_t> owners_;  // plugin name -> its first plugin (index in out_.plugins)
  std::set<std::pair<std::string, std::string>> problems_seen_;  // (path, message)
  std::map<std::string, std::string> root_reasons_;             // opp folder -> its verdict
};

}  // namespace

std::vector<std::string> SplitOppPath(const std::string& value) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find(':', start);
    if (end == std::string::npos) end = value.size();
    if (end > start) out.push_back(value.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string InsecureMessage(const std::string& reason) {
  return "refused: " + reason + " (allow with --allow-insecure)";
}

bool IsPackageFolder(const std::string& path) { return IsPackageDir(fs::path(path)); }

std::string OppLibraryArch() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  struct utsname u {};
  return ::uname(&u) == 0 ? std::string(u.machine) : std::string("unknown");
#endif
}

std::vector<std::string> OppLibraryFolders(const std::string& root) {
  std::vector<std::string> out;
  for (const char* layout : {"op_graph", "op_proto"}) {
    const fs::path folder = fs::path(root) / layout / "lib" / "linux" / OppLibraryArch();
    boost::system::error_code ec;
    if (fs::is_directory(folder, ec)) out.push_back(folder.string());
  }
  return out;
}

Discovery Discover(const std::vector<std::string>& entries, const DiscoverOptions& options, const std::string& base_dir) {
  Builder b(options);
  for (const auto& entry : entries) {
    const fs::path abs = Absolute(entry, base_dir);
    if (!b.Exists(abs)) continue;
    boost::system::error_code ec;
    const fs::file_status st = fs::status(abs, ec);
    if (fs::is_regular_file(st) && abs.extension() == ".py") {
      b.Named(abs, /*is_package=*/false);
    } else if (fs::is_regular_file(st) && abs.extension() == ".so") {
      b.Named(abs, /*is_package=*/false, /*is_library=*/true);
    } else if (fs::is_directory(st)) {
      b.Folder(abs, abs.string());
    } else {
      b.Problem(abs.filename().string(), abs.string(), PluginStatus::kError,
                "opp path entry " + abs.string() + " is neither a .py file, an op library (.so) nor a folder");
    }
  }
  return b.Take();
}

Discovery DiscoverOne(const std::string& path, const DiscoverOptions& options, const std::string& base_dir) {
  Builder b(options);
  const fs::path abs = Absolute(path, base_dir);
  if (b.Exists(abs)) {
    boost::system::error_code ec;
    const fs::file_status st = fs::status(abs, ec);
    if (fs::is_regular_file(st) && abs.extension() == ".py") {
      b.Named(abs, /*is_package=*/false);
    } else if (fs::is_regular_file(st) && abs.extension() == ".so") {
      b.Named(abs, /*is_package=*/false, /*is_library=*/true);
    } else if (IsPackageDir(abs)) {
      b.Named(abs, /*is_package=*/true);
    } else {
      b.Problem(abs.filename().string(), abs.string(), PluginStatus::kError,
                abs.string() + " is not one plugin (a .py file, a package folder with __init__.py, or an op library .so)");
    }
  }
  return b.Take();
}

// ---- stamps -----------------------------------------------------------------------------------

namespace {

struct StampBuilder {
  Stamp s;
  Fnv1a64 inodes;  // relative names and inode numbers of the files
  Fnv1a64 hash;    // relative names and contents (with_hash)
  bool with_hash = false;

  // One regular file's metadata.
  void Meta(const Candidate::EntryStat& e, const std::string& rel) {
    s.mtime_ns = std::max<int64_t>(s.mtime_ns, e.mtime_ns);
    s.ctime_ns = std::max<int64_t>(s.ctime_ns, e.ctime_ns);
    s.size += e.size;
    s.files += 1;
    inodes.Add(rel.data(), rel.size() + 1);
    const uint64_t ino = e.ino;
    inodes.Add(&ino, sizeof(ino));
  }

  void File(const std::string& full, const std::string& rel) {
    struct stat st {};
    if (::stat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    Meta(EntryStatOf(st), rel);
    if (!with_hash) return;
    hash.Add(rel.data(), rel.size() + 1);
    const int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return;
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) hash.Add(buf, static_cast<std::size_t>(n));
    ::close(fd);
  }

  // Every file of a package tree but bytecode, in name order.
  void Tree(const std::string& dir, const std::string& prefix) {
    std::vector<std::string> files;
    WalkTree(dir, [&](const fs::path& p) -> std::string {
      boost::system::error_code ec;
      if (p.extension() != ".pyc" && fs::is_regular_file(p, ec)) files.push_back(p.string());
      return {};
    });
    std::sort(files.begin(), files.end());
    for (const auto& f : files) File(f, prefix + f.substr(dir.size()));
  }
};

}  // namespace

Stamp ComputeStamp(const Candidate& c, bool with_hash) {
  StampBuilder b;
  b.with_hash = with_hash;
  if (c.is_package) {
    b.Tree(c.real_path, "");
  } else {
    b.File(c.real_path, "");
  }
  if (c.helpers) {
    for (const auto& h : c.helpers->paths) {
      const std::string rel = "../" + fs::path(h).filename().string();
      if (IsPackageDir(h)) {
        b.Tree(Canonical(h), rel);
      } else {
        b.File(h, rel);
      }
    }
  }
  b.s.inodes = b.inodes.Value();
  if (with_hash) b.s.hash = b.hash.Hex();
  return b.s;
}

Stamp DiscoveredStamp(const Candidate& c) {
  if (c.is_package || c.helpers || !c.entry_stat) return ComputeStamp(c, false);
  StampBuilder b;
  b.Meta(*c.entry_stat, "");
  b.s.inodes = b.inodes.Value();
  return b.s;
}

bool StillFresh(const Candidate& c, const Stamp& old, Stamp* now) {
  Stamp current = ComputeStamp(c, false);
  bool fresh = current.SameMeta(old);
  if (fresh) {
    current.hash = old.hash;
  } else {
    current = ComputeStamp(c, true);
    fresh = !old.hash.empty() && current.hash == old.hash;
  }
  if (now) *now = std::move(current);
  return fresh;
}

}  // namespace ge::plugin
