// registry_common.cc: see registry_common.h.
#include "registry_common.h"

#include "ge/text.h"

#include <cstdio>

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/un.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <tuple>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

extern char** environ;

namespace stdfs = std::filesystem;

namespace ge::registry {

namespace {

std::string Canonical(const std::string& p) {
  std::error_code ec;
  auto c = stdfs::canonical(p, ec);
  return ec ? p : c.string();
}

bool IsUnder(const std::string& path, const std::string& root) {
  return path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
         (root == "/" || path[root.size()] == '/');
}

std::string ExeDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return stdfs::path(buf).parent_path().string();
}

json ErrorRecord(const std::string& path, const std::string& name, const std::string& error) {
  return {{"name", name}, {"path", path}, {"version", ""}, {"description", ""}, {"isolation", ""},
          {"status", "error"}, {"error", error}, {"ops", json::array()}};
}

}  // namespace

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return stdfs::is_directory(path, ec);
}

void ErrorLocation(const std::string& error, const std::string& details, const std::string& path, json& out) {
  static const std::regex kAt(R"(\(at ([^()]+):(\d+)\))");
  static const std::regex kTb(R"re(File "([^"]+)", line (\d+))re");
  static const std::regex kPrefix(R"(^(/[^:\s]+):(\d+):)");
  std::smatch m;
  std::string file, line;
  if (std::regex_search(error, m, kAt)) {
    file = m[1], line = m[2];
  } else if (std::regex_search(error, m, kPrefix)) {
    file = m[1], line = m[2];
  } else {
    // The last traceback frame inside the plugin.
    auto begin = std::sregex_iterator(details.begin(), details.end(), kTb);
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      const std::string f = (*it)[1];
      if (f == path || IsUnder(f, path)) file = f, line = (*it)[2];
    }
    if (file.empty() && std::regex_search(error, m, kTb)) file = m[1], line = m[2];
  }
  // The line number is plugin text: parsed without exceptions, and only a
  // plausible one (1..2^31-1) is kept.
  long long n = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), n);
  if (!file.empty() && ec == std::errc() && end == line.data() + line.size() && n > 0 && n <= INT32_MAX) {
    out["error_file"] = file;
    out["error_line"] = static_cast<int>(n);
  }
}

std::vector<std::string> SplitPath(const std::string& value) {
  std::vector<std::string> out;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ':')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<Found> Discover(const std::vector<std::string>& entries, std::vector<json>& problems) {
  std::vector<Found> found;
  std::set<std::string> seen;
  for (const auto& entry : entries) {
    std::error_code ec;
    const auto st = stdfs::status(entry, ec);
    if (ec || !stdfs::exists(st)) {
      problems.push_back(ErrorRecord(entry, stdfs::path(entry).filename().string(),
                                     "opp path entry " + entry + " does not exist"));
      continue;
    }
    if (stdfs::is_regular_file(st)) {
      if (stdfs::path(entry).extension() != ".py") {
        problems.push_back(ErrorRecord(entry, stdfs::path(entry).filename().string(),
                                       "opp path entry " + entry + " is neither a .py file nor a folder"));
        continue;
      }
      Found f;
      f.path = Canonical(entry);
      f.name = stdfs::path(entry).stem().string();
      f.root = stdfs::path(f.path).parent_path().string();
      if (seen.insert(f.path).second) found.push_back(f);
      continue;
    }
    if (!stdfs::is_directory(st)) {
      problems.push_back(ErrorRecord(entry, stdfs::path(entry).filename().string(),
                                     "opp path entry " + entry + " is neither a .py file nor a folder"));
      continue;
    }
    const std::string root = Canonical(entry);
    std::vector<stdfs::directory_entry> children;
    for (stdfs::directory_iterator it(entry, ec), end; !ec && it != end; it.increment(ec)) children.push_back(*it);
    if (ec) {
      problems.push_back(ErrorRecord(entry, stdfs::path(entry).filename().string(),
                                     "cannot list opp folder " + entry + ": " + ec.message()));
      continue;
    }
    std::sort(children.begin(), children.end());
    for (const auto& de : children) {
      const stdfs::path& c = de.path();
      const std::string name = c.filename().string();
      std::error_code cec;
      Found f;
      const bool link = de.is_symlink(cec);
      if (de.is_regular_file(cec) && c.extension() == ".py" && !name.empty() && name[0] != '_') {
        f.name = c.stem().string();
      } else if (de.is_directory(cec) && stdfs::is_regular_file(c / "__init__.py", cec)) {
        f.name = name;
        f.is_package = true;
      } else {
        continue;
      }
      f.root = root;
      // Only a symbolic link needs resolving (readlink per component is costly).
      f.path = link ? Canonical(c.string()) : root + "/" + name;
      f.escapes = !IsUnder(f.path, root);
      if (f.escapes) f.path = root + "/" + name;  // never follow it out
      if (seen.insert(f.path).second) found.push_back(f);
    }
  }
  return found;
}

// ---- stamps -----------------------------------------------------------------------------------

json Stamp::ToJson() const { return {{"mtime_ns", mtime_ns}, {"size", size}, {"files", files}, {"hash", hash}}; }

Stamp Stamp::FromJson(const json& j) {
  Stamp s;
  s.mtime_ns = j.value("mtime_ns", int64_t{0});
  s.size = j.value("size", uint64_t{0});
  s.files = j.value("files", uint64_t{0});
  s.hash = j.value("hash", std::string());
  return s;
}

namespace {

struct Fnv {
  uint64_t h = 1469598103934665603ULL;
  void Add(const char* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ULL;
  }
};

void StampFile(const std::string& full, const std::string& rel, Stamp& s, Fnv* fnv) {
  struct stat st;
  if (::lstat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  const int64_t m = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  s.mtime_ns = std::max(s.mtime_ns, m);
  s.size += static_cast<uint64_t>(st.st_size);
  s.files += 1;
  if (fnv == nullptr) return;
  fnv->Add(rel.data(), rel.size() + 1);
  const int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) fnv->Add(buf, static_cast<std::size_t>(n));
  ::close(fd);
}

}  // namespace

Stamp ComputeStamp(const std::string& path, bool is_package, bool with_hash) {
  Stamp s;
  Fnv fnv;
  Fnv* h = with_hash ? &fnv : nullptr;
  if (!is_package) {
    StampFile(path, "", s, h);
  } else {
    std::vector<std::string> files;
    std::error_code ec;
    stdfs::recursive_directory_iterator it(path, stdfs::directory_options::none, ec), end;
    for (; !ec && it != end && files.size() < 10000; it.increment(ec)) {
      const auto& p = it->path();
      if (it->is_directory(ec)) {
        if (p.filename() == "__pycache__" || it.depth() > 8) it.disable_recursion_pending();
        continue;
      }
      if (p.extension() == ".pyc") continue;
      files.push_back(p.string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) StampFile(f, f.substr(path.size()), s, h);
    // A package's pyproject.toml may also sit beside it? No: inside (share/docs/plugin-authors.md, opp folders).
  }
  if (with_hash) {
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(fnv.h));
    s.hash = buf;
  }
  return s;
}

// ---- safety -----------------------------------------------------------------------------------

namespace {

std::string UserName(uid_t uid) {
  if (const passwd* pw = ::getpwuid(uid)) return pw->pw_name;
  return std::to_string(uid);
}

std::string CheckOne(const std::string& p, uid_t uid) {
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return {};
  if (S_ISLNK(st.st_mode)) return {};
  if (st.st_mode & S_IWOTH) return p + " is writable by others (chmod o-w)";
  if (st.st_uid != 0 && st.st_uid != uid) {
    return p + " is owned by user " + UserName(st.st_uid) + ", neither root nor the scanning user " + UserName(uid);
  }
  return {};
}

}  // namespace

std::string InsecureReason(const Found& f, uid_t uid) {
  if (f.escapes) return f.path + " resolves outside its opp folder " + f.root + " (a symbolic link)";
  if (auto r = CheckOne(f.root, uid); !r.empty()) return r;
  if (auto r = CheckOne(f.path, uid); !r.empty()) return r;
  if (f.is_package) {
    std::error_code ec;
    stdfs::recursive_directory_iterator it(f.path, stdfs::directory_options::none, ec), end;
    for (int n = 0; !ec && it != end && n < 10000; it.increment(ec), ++n) {
      if (it->path().filename() == "__pycache__") {
        it.disable_recursion_pending();
        continue;
      }
      if (auto r = CheckOne(it->path().string(), uid); !r.empty()) return r;
      if (it->is_symlink(ec)) {
        const std::string target = Canonical(it->path().string());
        if (!IsUnder(target, f.path)) return it->path().string() + " resolves outside the plugin folder " + f.path;
      }
    }
  }
  return {};
}

// ---- the out-of-process scan -------------------------------------------------------------------

std::string DefaultScanner() {
  if (const char* env = std::getenv("GE_PLUGIN_SCAN")) return env;
  return (stdfs::path(ExeDir()) / "ge-plugin-scan").string();
}

namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  pid_t pid = -1;
  int out = -1;
  std::string buf;
  std::deque<std::size_t> todo;  // indexes into paths, in the order sent
  std::set<std::size_t> pending;
  std::optional<std::size_t> current;
  Clock::time_point deadline;
  bool started = false;  // at least one "begin" seen
};

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

bool Spawn(const std::vector<std::string>& paths, const std::vector<std::size_t>& which, const ScanOptions& opts,
           Child& c, std::string* why) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) {
    *why = std::strerror(errno);
    return false;
  }
  if (::pipe2(out, O_CLOEXEC) != 0) {
    *why = std::strerror(errno);
    ::close(in[0]), ::close(in[1]);
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  if (opts.quiet_children) posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const std::string scanner = opts.scanner.empty() ? DefaultScanner() : opts.scanner;
  std::vector<std::string> args{scanner};
  if (!opts.log_level.empty()) args.push_back("--log-level"), args.push_back(opts.log_level);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, scanner.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    *why = "cannot start the scanner " + scanner + ": " + std::strerror(rc);
    ::close(in[1]), ::close(out[0]);
    return false;
  }
  // The child reads its whole list before it starts Python.
  std::string list;
  for (auto i : which) list += paths[i] + "\n";
  std::size_t off = 0;
  while (off < list.size()) {
    const ssize_t n = ::write(in[1], list.data() + off, list.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child died; its exit is handled below
    off += static_cast<std::size_t>(n);
  }
  ::close(in[1]);
  c = Child();
  c.pid = pid;
  c.out = out[0];
  c.todo.assign(which.begin(), which.end());
  c.pending.insert(which.begin(), which.end());
  c.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.timeout_s + 5.0));
  return true;
}

}  // namespace

std::vector<json> ScanPlugins(const std::vector<std::string>& paths, const ScanOptions& opts) {
  std::vector<json> results(paths.size());
  std::vector<bool> done(paths.size(), false);
  std::size_t ndone = 0;
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.timeout_s));
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < paths.size(); ++i) index.emplace(paths[i], i);

  auto finish = [&](std::size_t i, json r) {
    if (done[i]) return;
    done[i] = true;
    ++ndone;
    results[i] = std::move(r);
    if (opts.progress) opts.progress(ndone, paths.size());
  };
  auto fail = [&](std::size_t i, const std::string& status, const std::string& error, json extra) {
    json r = ErrorRecord(paths[i], stdfs::path(paths[i]).stem().string(), error);
    r["status"] = status;
    r.update(extra);
    finish(i, r);
  };

  // Work queue split into batches; up to `jobs` children at a time.
  std::deque<std::vector<std::size_t>> batches;
  {
    const std::size_t jobs = std::max(1, std::min(opts.jobs, paths.size() < 16 ? 1 : opts.jobs));
    const std::size_t per = std::max<std::size_t>(1, std::min(opts.batch, (paths.size() + jobs - 1) / jobs));
    for (std::size_t i = 0; i < paths.size(); i += per) {
      std::vector<std::size_t> b;
      for (std::size_t k = i; k < std::min(paths.size(), i + per); ++k) b.push_back(k);
      batches.push_back(b);
    }
  }
  std::vector<Child> children;
  auto start_next = [&]() {
    while (!batches.empty() && children.size() < static_cast<std::size_t>(std::max(1, opts.jobs))) {
      std::vector<std::size_t> b = batches.front();
      batches.pop_front();
      b.erase(std::remove_if(b.begin(), b.end(), [&](std::size_t i) { return done[i]; }), b.end());
      if (b.empty()) continue;
      Child c;
      std::string why;
      if (!Spawn(paths, b, opts, c, &why)) {
        for (auto i : b) fail(i, "error", why, json::object());
        continue;
      }
      children.push_back(std::move(c));
    }
  };
  start_next();

  while (!children.empty()) {
    std::vector<pollfd> fds;
    auto now = Clock::now();
    auto next = now + std::chrono::seconds(60);
    for (auto& c : children) {
      fds.push_back({c.out, POLLIN, 0});
      next = std::min(next, c.deadline);
    }
    const int wait_ms = static_cast<int>(
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1));
    const int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) break;
    now = Clock::now();
    std::vector<std::size_t> ended;
    for (std::size_t k = 0; k < children.size(); ++k) {
      Child& c = children[k];
      bool eof = false, hung = false;
      if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[65536];
        const ssize_t r = ::read(c.out, buf, sizeof(buf));
        if (r > 0) {
          c.buf.append(buf, static_cast<std::size_t>(r));
        } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
          eof = true;
        }
        std::size_t pos;
        while ((pos = c.buf.find('\n')) != std::string::npos) {
          const std::string line = c.buf.substr(0, pos);
          c.buf.erase(0, pos + 1);
          json j = json::parse(line, nullptr, false);
          if (!j.is_object()) continue;
          if (j.contains("begin") && j["begin"].is_string()) {
            auto it = index.find(j["begin"].get<std::string>());
            if (it != index.end() && c.pending.count(it->second)) {
              c.current = it->second;
              c.started = true;
              c.deadline = now + limit;
            }
          } else if (j.contains("path") && j["path"].is_string()) {
            auto it = index.find(j["path"].get<std::string>());
            if (it != index.end() && c.current == it->second) {  // only the plugin being scanned
              c.pending.erase(it->second);
              c.current.reset();
              c.deadline = now + limit;
              if (auto problem = RecordProblem(j, /*stamp_required=*/false)) {
                fail(it->second, "error", "the scanner sent a malformed record for " + paths[it->second] + ": " + *problem,
                     json::object());
              } else {
                finish(it->second, std::move(j));
              }
            }
          }
        }
      }
      if (!eof && now >= c.deadline) hung = true;
      if (!eof && !hung) continue;
      if (hung) ::kill(c.pid, SIGKILL);
      int status = 0;
      // After EOF the child is exiting; bound the wait all the same.
      for (int tries = 0;; ++tries) {
        const pid_t w = ::waitpid(c.pid, &status, tries < 200 ? WNOHANG : 0);
        if (w == c.pid || (w < 0 && errno != EINTR)) break;
        if (tries == 200) ::kill(c.pid, SIGKILL);
        if (tries < 200) ::usleep(5000);
      }
      ::close(c.out);
      if (c.current) {
        const std::size_t i = *c.current;
        c.pending.erase(i);
        const double secs = opts.timeout_s;
        if (hung) {
          char t[32];
          std::snprintf(t, sizeof(t), "%g", secs);
          fail(i, "hung", std::string("scanning ") + paths[i] + " did not finish within " + t +
                              " s (killed; rescanned when its files change)", {{"timeout_s", secs}});
        } else if (WIFSIGNALED(status)) {
          const int sig = WTERMSIG(status);
          fail(i, "crashed", "the scanner crashed with " + SignalName(sig) + " while loading " + paths[i],
               {{"signal", sig}, {"signal_name", SignalName(sig)}});
        } else {
          const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
          fail(i, "exited", "the process exited with code " + std::to_string(code) + " while loading " + paths[i],
               {{"exit_code", code}});
        }
      } else if (!c.started && !c.pending.empty()) {
        // It died before loading anything: not a plugin's fault.
        std::string why = WIFSIGNALED(status) ? "killed by " + SignalName(WTERMSIG(status))
                                              : "exit code " + std::to_string(WEXITSTATUS(status));
        if (hung) why = "no answer";
        for (auto i : c.pending) fail(i, "error", "the scanner failed to start (" + why + ")", json::object());
        c.pending.clear();
      }
      if (!c.pending.empty()) {
        std::vector<std::size_t> rest;
        for (auto i : c.todo) {
          if (c.pending.count(i)) rest.push_back(i);
        }
        batches.push_front(rest);
      }
      ended.push_back(k);
    }
    for (auto it = ended.rbegin(); it != ended.rend(); ++it) children.erase(children.begin() + static_cast<long>(*it));
    if (!ended.empty()) start_next();
  }
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!done[i]) fail(i, "error", "not scanned", json::object());
  }
  return results;
}

// ---- state -------------------------------------------------------------------------------------

std::vector<json> Refresh(const std::vector<std::string>& entries, std::map<std::string, json>& records,
                          const RefreshOptions& opts, RefreshStats* stats, bool force,
                          const std::vector<std::string>& force_paths) {
  std::vector<json> problems;
  const std::vector<Found> found = Discover(entries, problems);
  const uid_t uid = ::geteuid();
  std::vector<std::string> to_scan;
  std::map<std::string, Stamp> stamps;
  std::set<std::string> live;
  RefreshStats st;
  st.discovered = found.size();
  const std::set<std::string> forced(force_paths.begin(), force_paths.end());
  for (const auto& f : found) {
    live.insert(f.path);
    Stamp s = ComputeStamp(f.path, f.is_package, false);
    auto it = records.find(f.path);
    bool fresh = false;
    if (it != records.end() && !force && !forced.count(f.path)) {
      const Stamp old = Stamp::FromJson(it->second.value("stamp", json::object()));
      if (old.SameMeta(s)) {
        fresh = true;
      } else {
        s = ComputeStamp(f.path, f.is_package, true);
        if (!old.hash.empty() && old.hash == s.hash) {  // touched, not changed: keep the verdict
          it->second["stamp"] = s.ToJson();
          fresh = true;
        }
      }
    }
    if (s.hash.empty()) s = ComputeStamp(f.path, f.is_package, true);
    // The safety verdict is taken every time (permissions change without content).
    const std::string insecure = opts.allow_insecure ? std::string() : InsecureReason(f, uid);
    if (!insecure.empty()) {
      json r = ErrorRecord(f.path, f.name, "refused: " + insecure + " (allow with --allow-insecure)");
      r["status"] = "insecure";
      r["stamp"] = s.ToJson();
      records[f.path] = r;
      continue;
    }
    if (fresh && it->second.value("status", "") != "insecure") {
      ++st.reused;
      continue;
    }
    stamps[f.path] = s;
    to_scan.push_back(f.path);
  }
  if (opts.no_scan) {
    st.scanned = to_scan.size();
    to_scan.clear();
  }
  if (!to_scan.empty()) {
    std::vector<json> scanned = ScanPlugins(to_scan, opts.scan);
    for (std::size_t i = 0; i < to_scan.size(); ++i) {
      json& r = scanned[i];
      r["path"] = to_scan[i];
      r["stamp"] = stamps[to_scan[i]].ToJson();
      records[to_scan[i]] = std::move(r);
    }
  }
  if (!opts.no_scan) st.scanned = to_scan.size();
  for (auto it = records.begin(); it != records.end();) {
    if (!live.count(it->first)) {
      it = records.erase(it);
      ++st.removed;
    } else {
      ++it;
    }
  }
  // Discovery names come from the file system: they always win over what a
  // plugin says (a plugin cannot claim another's name or path).
  std::vector<json> ordered;
  for (const auto& f : found) {
    json& r = records[f.path];
    r["module"] = f.name;
    if (!r.contains("name") || !r["name"].is_string() || r["name"].get<std::string>().empty()) r["name"] = f.name;
    ordered.push_back(r);
  }
  for (auto& p : problems) ordered.push_back(p);
  if (stats) *stats = st;
  return ResolveConflicts(std::move(ordered));
}

std::vector<json> ResolveConflicts(std::vector<json> ordered) {
  std::map<std::string, std::string> owner;  // op_type -> path
  for (auto& r : ordered) {
    const std::string status = r.value("status", "");
    if (status == "conflict") r["status"] = "ok", r["error"] = "", r.erase("conflicts_with");
    if (r.value("status", "") != "ok") continue;
    const std::string path = r.value("path", "");
    bool clash = false;
    for (const auto& op : r.value("ops", json::array())) {
      const std::string t = op.value("op_type", "");
      auto it = owner.find(t);
      if (it != owner.end()) {
        r["status"] = "conflict";
        r["error"] = "op_type '" + t + "' from " + path + " conflicts with the one from " + it->second +
                     " (first in path order wins)";
        r["conflicts_with"] = it->second;
        clash = true;
        break;
      }
    }
    if (clash) continue;
    for (const auto& op : r.value("ops", json::array())) owner[op.value("op_type", "")] = path;
  }
  return ordered;
}

json Summary(const json& r) {
  json ops = json::array();
  for (const auto& op : r.value("ops", json::array())) {
    ops.push_back({{"op_type", op.value("op_type", "")}, {"capabilities", op.value("capabilities", json::array())}});
  }
  return {{"name", r.value("name", "")},         {"path", r.value("path", "")},
          {"version", r.value("version", "")},   {"isolation", r.value("isolation", "")},
          {"status", r.value("status", "error")}, {"error", r.value("error", "")},
          {"ops", ops}};
}

// ---- cache ---------------------------------------------------------------------------------------

namespace {

// `value`'s JSON type name, for messages.
std::string TypeName(const json& v) { return v.type_name(); }

// nullopt when `r[key]` is absent (and optional) or of the wanted kind.
std::optional<std::string> FieldProblem(const json& r, const char* key, const char* kind, bool required) {
  if (!r.contains(key)) {
    if (required) return std::string("missing field '") + key + "'";
    return std::nullopt;
  }
  const json& v = r[key];
  const std::string k = kind;
  bool ok = false;
  if (k == "string") ok = v.is_string();
  else if (k == "integer") ok = v.is_number_integer();
  else if (k == "unsigned") ok = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  else if (k == "number") ok = v.is_number();
  else if (k == "boolean") ok = v.is_boolean();
  else if (k == "object") ok = v.is_object();
  else if (k == "array") ok = v.is_array();
  if (ok) return std::nullopt;
  return std::string("field '") + key + "' must be " + (k == "integer" || k == "unsigned" || k == "array" ? "an " : "a ") +
         k + ", got " + TypeName(v);
}

}  // namespace

std::optional<std::string> RecordProblem(const json& r, bool stamp_required) {
  static const std::set<std::string> kStatuses{"ok",    "error",  "conflict", "insecure",
                                               "crashed", "hung", "exited",   "missing"};
  if (!r.is_object()) return "a plugin record must be an object, got " + TypeName(r);
  for (const auto& [key, kind, required] : std::initializer_list<std::tuple<const char*, const char*, bool>>{
           {"path", "string", true},         {"status", "string", true},       {"name", "string", false},
           {"version", "string", false},     {"description", "string", false}, {"isolation", "string", false},
           {"error", "string", false},       {"details", "string", false},     {"error_file", "string", false},
           {"error_line", "integer", false}, {"module", "string", false},      {"conflicts_with", "string", false},
           {"signal", "integer", false},     {"signal_name", "string", false}, {"exit_code", "integer", false},
           {"timeout_s", "number", false},   {"ops", "array", false},          {"stamp", "object", stamp_required}}) {
    if (auto p = FieldProblem(r, key, kind, required)) return p;
  }
  if (r["path"].get_ref<const std::string&>().empty()) return std::string("field 'path' is empty");
  static const std::set<std::string> kIsolations{"", "subinterpreter", "main", "process"};
  if (r.contains("isolation") && !kIsolations.count(r["isolation"].get<std::string>())) {
    return "field 'isolation' has an unknown value '" + Abbreviate(r["isolation"].get<std::string>()) + "'";
  }
  if (r.contains("error_line") && !(r["error_line"].is_number_integer() && r["error_line"].get<int64_t>() > 0 &&
                                    r["error_line"].get<int64_t>() <= INT32_MAX)) {
    return std::string("field 'error_line' must be a line number (1..2^31-1)");
  }
  if (!kStatuses.count(r["status"].get<std::string>())) {
    return "field 'status' has an unknown value '" + Abbreviate(r["status"].get<std::string>()) + "'";
  }
  if (r.contains("stamp")) {
    const json& st = r["stamp"];
    for (const auto& [key, kind] : std::initializer_list<std::pair<const char*, const char*>>{
             {"mtime_ns", "integer"}, {"size", "unsigned"}, {"files", "unsigned"}, {"hash", "string"}}) {
      if (auto p = FieldProblem(st, key, kind, true)) return "stamp: " + *p;
    }
    // Numbers beyond int64 / uint64 would wrap when read back.
    if (st["mtime_ns"].is_number_unsigned() && st["mtime_ns"].get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return std::string("stamp: field 'mtime_ns' is out of range");
    }
  }
  if (r["status"] == "ok" && !r.contains("ops")) return std::string("missing field 'ops' (status ok)");
  if (r.contains("ops")) {
    std::size_t i = 0;
    for (const json& op : r["ops"]) {
      const std::string where = "ops[" + std::to_string(i++) + "]: ";
      if (!op.is_object()) return where + "must be an object, got " + TypeName(op);
      for (const auto& [key, kind, required] : std::initializer_list<std::tuple<const char*, const char*, bool>>{
               {"op_type", "string", true}, {"capabilities", "array", true}, {"validation", "string", false},
               {"prototype", "object", false}}) {
        if (auto p = FieldProblem(op, key, kind, required)) return where + *p;
      }
      for (const json& c : op["capabilities"]) {
        if (!c.is_string()) return where + "capabilities must be strings, got " + TypeName(c);
      }
      if (op.contains("prototype")) {
        if (auto p = FieldProblem(op["prototype"], "signature", "string", false)) return where + "prototype: " + *p;
      }
    }
  }
  return std::nullopt;
}

namespace {

// The whole of a file the tools read (cache, listing index): a regular file of
// at most `max_bytes`, checked before reading (a symlink to /dev/zero, a FIFO
// or a huge file is refused with the reason, never read until memory runs out).
std::optional<std::string> ReadBoundedFile(const std::string& path, std::size_t max_bytes, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (why) *why = path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  std::optional<std::string> text;
  if (::fstat(fd, &st) != 0) {
    if (why) *why = path + ": " + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    if (why) *why = path + " is not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    if (why) *why = path + " is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                    " a registry file may be";
  } else {
    std::string buf(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t off = 0;
    while (off < buf.size()) {
      const ssize_t n = ::read(fd, buf.data() + off, buf.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    buf.resize(off);
    text = std::move(buf);
  }
  ::close(fd);
  return text;
}

}  // namespace

std::optional<json> LoadCache(const std::string& path, std::string* why, bool light) {
  struct stat lst {};
  if (::stat(path.c_str(), &lst) != 0 && errno == ENOENT) {
    if (why) *why = "no cache at " + path;
    return std::nullopt;
  }
  std::string read_why;
  const std::optional<std::string> content = ReadBoundedFile(path, kMaxCacheBytes, &read_why);
  if (!content) {
    if (why) *why = "cache " + read_why;
    return std::nullopt;
  }
  const std::string& text = *content;
  json::parser_callback_t drop = [](int depth, json::parse_event_t ev, json& parsed) {
    return !(ev == json::parse_event_t::key && depth > 2 && parsed.is_string() &&
             (parsed.get_ref<const std::string&>() == "prototype" || parsed.get_ref<const std::string&>() == "details"));
  };
  json j = json::parse(text, light ? drop : json::parser_callback_t(nullptr), false);
  if (j.is_discarded() || !j.is_object()) {
    if (why) *why = "cache " + path + " is unreadable (cut short or corrupted)";
    return std::nullopt;
  }
  if (j.value("format", "") != kCacheFormat || !j.contains("version") || !j["version"].is_number_integer() ||
      j["version"].get<int>() != kCacheVersion) {
    if (why) *why = "cache " + path + " has a foreign format or version (expected " + kCacheFormat + " v" +
                    std::to_string(kCacheVersion) + ")";
    return std::nullopt;
  }
  if (!j.contains("plugins") || !j["plugins"].is_array() || !j.contains("opp_path") || !j["opp_path"].is_array()) {
    if (why) *why = "cache " + path + " is malformed";
    return std::nullopt;
  }
  if (j.contains("written_unix") && !j["written_unix"].is_number_integer()) {
    if (why) *why = "cache " + path + " is malformed: written_unix must be an integer";
    return std::nullopt;
  }
  for (const auto& e : j["opp_path"]) {
    if (!e.is_string()) {
      if (why) *why = "cache " + path + " is malformed: opp_path must hold strings";
      return std::nullopt;
    }
  }
  // Every record field by field: one bad record makes the whole cache
  // untrusted (it is rebuilt by a scan), never a crash later.
  std::size_t i = 0;
  for (const auto& r : j["plugins"]) {
    if (auto problem = RecordProblem(r, /*stamp_required=*/true)) {
      if (why) {
        const std::string at = r.is_object() && r.contains("path") && r["path"].is_string()
                                   ? " (" + Abbreviate(r["path"].get<std::string>()) + ")"
                                   : "";
        *why = "cache " + path + " is malformed: plugins[" + std::to_string(i) + "]" + at + ": " + *problem;
      }
      return std::nullopt;
    }
    ++i;
  }
  return j;
}

std::map<std::string, json> CacheRecords(json cache) {
  std::map<std::string, json> out;
  for (auto& r : cache["plugins"]) {
    std::string p = r["path"].get<std::string>();
    out.emplace(std::move(p), std::move(r));
  }
  return out;
}

namespace {

// Writes `text` to `path` as durably as a file can be: a temporary file in the
// same folder, fsync, rename over `path`, fsync of the folder. Readers see the
// old file or the new one, never a part; a crash leaves no half-written file.
bool WriteFileDurably(const std::string& path, const std::string& text, std::string* why) {
  const stdfs::path target(path);
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

}  // namespace

bool SaveCache(const std::string& path, const std::vector<std::string>& entries,
               const std::map<std::string, json>& records, std::string* why) {
  json j = {{"format", kCacheFormat}, {"version", kCacheVersion}, {"opp_path", entries}, {"plugins", json::array()}};
  j["written_unix"] = static_cast<int64_t>(::time(nullptr));
  for (const auto& [p, r] : records) j["plugins"].push_back(r);
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  const stdfs::path target(path);
  std::error_code ec;
  if (target.has_parent_path() && !stdfs::exists(target.parent_path(), ec)) {
    // Only folders created here get a mode; an existing folder (e.g. /tmp) is
    // never changed.
    stdfs::create_directories(target.parent_path(), ec);
    if (!ec) ::chmod(target.parent_path().c_str(), 0755);
  }
  return WriteFileDurably(path, text, why);
}

// ---- defaults ------------------------------------------------------------------------------------

// The system daemon's places (share/systemd/ge-plugin-registryd.service).
constexpr char kSystemSocket[] = "/run/ge-plugin-registry/registry.sock";
constexpr char kSystemCache[] = "/var/cache/ge-plugin-registry/registry.json";

namespace {
bool PathExists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}
std::string UserSocketPath() {
  if (const char* e = std::getenv("XDG_RUNTIME_DIR"); e && *e) return std::string(e) + "/ge-plugin-registry.sock";
  return "/tmp/ge-plugin-registry-" + std::to_string(::geteuid()) + "/registry.sock";
}
std::string UserCachePath() {
  if (const char* e = std::getenv("XDG_CACHE_HOME"); e && *e) return std::string(e) + "/ge-plugin/registry.json";
  if (const char* e = std::getenv("HOME"); e && *e) return std::string(e) + "/.cache/ge-plugin/registry.json";
  return "/tmp/ge-plugin-registry-" + std::to_string(::geteuid()) + "/registry.json";
}
}  // namespace

// Explicit (environment) > systemd's directories (the daemon under systemd) >
// root: the system places > a user's own daemon/cache when present > the
// system daemon/cache when present > the user's places.
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

std::string DefaultCachePath() {
  if (const char* e = std::getenv("GE_PLUGIN_REGISTRY_CACHE"); e && *e) return e;
  if (const char* e = std::getenv("CACHE_DIRECTORY"); e && *e) return std::string(e) + "/registry.json";
  if (::geteuid() == 0) return kSystemCache;
  const std::string user = UserCachePath();
  if (!PathExists(user) && PathExists(kSystemCache)) return kSystemCache;
  return user;
}

std::vector<std::string> OppEntries(const std::string& opt) {
  if (!opt.empty()) return SplitPath(opt);
  if (const char* e = std::getenv("ASCEND_CUSTOM_OPP_PATH")) return SplitPath(e);
  return {};
}

std::string Printable(const std::string& s) { return TerminalSafe(s); }

std::function<std::string(const std::string&, bool)> CrashVerdicts(const std::string& cache_path, std::string* why_out) {
  std::string why;
  auto cache = LoadCache(cache_path.empty() ? DefaultCachePath() : cache_path, &why, /*light=*/true);
  if (!cache) {
    if (why_out) *why_out = why;
    return {};
  }
  auto records = std::make_shared<std::map<std::string, json>>(CacheRecords(std::move(*cache)));
  return [records](const std::string& path, bool is_package) -> std::string {
    auto it = records->find(path);
    if (it == records->end()) return {};
    const std::string status = it->second.value("status", std::string());
    if (status != "crashed" && status != "hung" && status != "exited") return {};
    const Stamp old = Stamp::FromJson(it->second.value("stamp", json::object()));
    if (!ComputeStamp(path, is_package, false).SameMeta(old)) {
      // Touched: still the same plugin when the content hash is unchanged.
      if (old.hash.empty() || ComputeStamp(path, is_package, true).hash != old.hash) return {};
    }
    const std::string error = it->second.value("error", std::string());
    return "the plugin registry marks it " + status + (error.empty() ? "" : " (" + error + ")") +
           "; fix the plugin (any change clears the mark) or run without --skip-crashed";
  };
}

namespace {
// Version 2: the last line is "S\t<FNV-1a 64 of every P line>", so an edited,
// cut or reordered index is never passed through.
constexpr char kListHeader[] = "ge-plugin-list 2";

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
  if (::stat(cache_path.c_str(), &st) != 0) return {};
  return "C\t" + std::to_string(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec) + "\t" +
         std::to_string(static_cast<long long>(st.st_size)) + "\t" + std::to_string(static_cast<long long>(st.st_ino));
}
}  // namespace

bool SaveListIndex(const std::string& cache_path, const std::vector<std::string>& entries,
                   const std::vector<json>& ordered, std::string* why) {
  const std::string identity = CacheIdentity(cache_path);
  if (identity.empty()) return false;  // no cache, no index
  std::ostringstream out;
  out << kListHeader << "\n" << identity << "\nO\t" << json(entries).dump(-1, ' ', false, json::error_handler_t::replace)
      << "\n";
  std::vector<std::string> plines;
  for (const auto& r : ordered) {
    const std::string path = r.value("path", "");
    if (path.empty() || path.find_first_of("\t\n") != std::string::npos) return false;  // not representable: no index
    const Stamp st = Stamp::FromJson(r.value("stamp", json::object()));
    plines.push_back("P\t" + path + "\t" + std::to_string(st.mtime_ns) + "\t" + std::to_string(st.size) + "\t" +
                     std::to_string(st.files) + "\t" + Summary(r).dump(-1, ' ', false, json::error_handler_t::replace));
    out << plines.back() << "\n";
  }
  out << "S\t" << LinesChecksum(plines) << "\n";
  return WriteFileDurably(ListIndexPath(cache_path), out.str(), why);
}

std::optional<std::string> FreshListJson(const std::string& cache_path, const std::vector<std::string>& entries,
                                         bool allow_insecure) {
  // The index is a file like the cache: bounded, regular, and each line checked
  // before its summary is passed through (an edited line makes it stale).
  std::optional<std::string> content = ReadBoundedFile(ListIndexPath(cache_path), kMaxCacheBytes, nullptr);
  if (!content) return std::nullopt;
  std::istringstream f(std::move(*content));
  std::string line;
  if (!std::getline(f, line) || line != kListHeader) return std::nullopt;
  if (!std::getline(f, line) || line != CacheIdentity(cache_path) || line.empty()) return std::nullopt;
  if (!std::getline(f, line) || line != "O\t" + json(entries).dump(-1, ' ', false, json::error_handler_t::replace)) {
    return std::nullopt;
  }
  std::vector<json> problems;
  const std::vector<Found> found = Discover(entries, problems);
  if (!problems.empty()) return std::nullopt;
  std::string array = "[";
  std::size_t i = 0;
  const uid_t uid = ::geteuid();
  std::vector<std::string> plines;
  bool sum_ok = false;
  while (std::getline(f, line)) {
    if (line.compare(0, 2, "S\t") == 0) {
      sum_ok = !f.eof() && f.peek() == EOF && line.substr(2) == LinesChecksum(plines);
      break;
    }
    plines.push_back(line);
    // P \t path \t mtime_ns \t size \t files \t summary
    std::size_t pos[5];
    std::size_t from = 0;
    for (int k = 0; k < 5; ++k) {
      pos[k] = line.find('\t', from);
      if (pos[k] == std::string::npos) return std::nullopt;
      from = pos[k] + 1;
    }
    if (line.compare(0, pos[0], "P") != 0 || i >= found.size()) return std::nullopt;
    const Found& fd = found[i++];
    if (line.compare(pos[0] + 1, pos[1] - pos[0] - 1, fd.path) != 0) return std::nullopt;
    Stamp old;
    try {
      old.mtime_ns = std::stoll(line.substr(pos[1] + 1, pos[2] - pos[1] - 1));
      old.size = std::stoull(line.substr(pos[2] + 1, pos[3] - pos[2] - 1));
      old.files = std::stoull(line.substr(pos[3] + 1, pos[4] - pos[3] - 1));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (!ComputeStamp(fd.path, fd.is_package, false).SameMeta(old)) return std::nullopt;
    if (!allow_insecure && !InsecureReason(fd, uid).empty()) return std::nullopt;
    // The summary must be what Summary() writes for this plugin: an object
    // whose fields have their types and whose path is the line's.
    const json summary = json::parse(line.begin() + static_cast<long>(pos[4] + 1), line.end(), nullptr, false);
    if (summary.is_discarded() || RecordProblem(summary, false) || summary.value("path", "") != fd.path ||
        summary.size() != 7) {
      return std::nullopt;
    }
    if (array.size() > 1) array += ",";
    array.append(line, pos[4] + 1, std::string::npos);  // checked above: valid JSON, as written
  }
  if (i != found.size() || !sum_ok) return std::nullopt;
  return array + "]";
}

}  // namespace ge::registry
