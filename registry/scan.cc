// scan.cc: see scan.h.
#include "scan.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "ge/text.h"

extern char** environ;

namespace ge::registry {

using nlohmann::json;
using plugin::PluginRecord;
using plugin::PluginStatus;

namespace {

std::string ExeDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return boost::filesystem::path(buf).parent_path().string();
}

}  // namespace

#ifndef GE_BIN_TO_LIBEXEC
#define GE_BIN_TO_LIBEXEC "../libexec/ge-plugin"
#endif

// Installed, the scanner is in libexec (GE_BIN_TO_LIBEXEC from the tools'
// folder: CMakeLists.txt); in the build tree it is beside the tools. Both are
// relative to the running executable, never a path of the build machine.
std::string DefaultScanner() {
  if (const char* env = std::getenv("GE_PLUGIN_SCAN")) return env;
  const boost::filesystem::path dir(ExeDir());
  const boost::filesystem::path installed = dir / GE_BIN_TO_LIBEXEC / "ge-plugin-scan";
  boost::system::error_code ec;
  if (boost::filesystem::is_regular_file(installed, ec)) return installed.lexically_normal().string();
  return (dir / "ge-plugin-scan").string();
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
  Clock::time_point begun;   // when `current` began loading
  bool started = false;      // at least one "begin" seen
  bool handed_off = false;   // its queued plugins went to another child: it ends after `current`
};

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
  if (opts.allow_insecure) args.push_back("--allow-insecure");
  for (const auto& lib : opts.prototype_libraries) args.push_back("--prototype-library"), args.push_back(lib);
  for (const auto& [lib, why] : opts.failed_libraries) {
    args.push_back("--failed-library"), args.push_back(lib), args.push_back(why);
  }
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
  // The child reads its whole list before it starts Python; each path ends
  // with a NUL (the one byte no path holds).
  std::string list;
  for (auto i : which) list += paths[i] + '\0';
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

std::vector<PluginRecord> ScanPlugins(const std::vector<std::string>& paths, const ScanOptions& opts) {
  std::vector<PluginRecord> results(paths.size());
  std::vector<bool> done(paths.size(), false);
  std::size_t ndone = 0;
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.timeout_s));
  std::map<std::string, std::size_t> index;  // by path (bytes)
  for (std::size_t i = 0; i < paths.size(); ++i) index.emplace(paths[i], i);

  auto finish = [&](std::size_t i, PluginRecord r) {
    if (done[i]) return;
    done[i] = true;
    ++ndone;
    results[i] = std::move(r);
    if (opts.on_record) opts.on_record(i, results[i]);
    if (opts.progress) opts.progress(ndone, paths.size());
  };
  // A verdict of the scan itself; `fill` adds its data (signal, code, limit).
  auto fail = [&](std::size_t i, PluginStatus status, const std::string& error,
                  const std::function<void(PluginRecord&)>& fill = nullptr) {
    PluginRecord r = plugin::ProblemRecord(boost::filesystem::path(paths[i]).stem().string(), paths[i], status,
                                           "scan", error);
    if (fill) fill(r);
    finish(i, std::move(r));
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
        for (auto i : b) fail(i, PluginStatus::kError, why);
        continue;
      }
      children.push_back(std::move(c));
    }
  };
  start_next();
  const double slow_s = opts.slow_after_s >= 0 ? opts.slow_after_s : std::min(1.0, opts.timeout_s / 4);
  const auto slow = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(slow_s));

  while (!children.empty()) {
    std::vector<pollfd> fds;
    auto now = Clock::now();
    auto next = now + std::chrono::seconds(60);
    if (opts.tick) next = now + std::chrono::milliseconds(kScanTickMs);
    for (auto& c : children) {
      fds.push_back({c.out, POLLIN, 0});
      next = std::min(next, c.deadline);
      // A slow plugin with others queued behind it: wake when they are to be handed off.
      if (c.current && !c.handed_off && c.pending.size() > 1 && batches.empty() &&
          children.size() < static_cast<std::size_t>(std::max(1, opts.jobs))) {
        next = std::min(next, c.begun + slow);
      }
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
            const auto begun = ParsePathText(j["begin"].get_ref<const std::string&>());
            auto it = begun ? index.find(*begun) : index.end();
            if (it != index.end() && c.pending.count(it->second)) {
              c.current = it->second;
              c.started = true;
              c.deadline = now + limit;
              c.begun = now;
            }
          } else if (c.current) {
            // Only the plugin being scanned can be answered for; a record
            // naming another path, or none, is malformed.
            const std::size_t i = *c.current;
            c.pending.erase(i);
            c.current.reset();
            c.deadline = now + limit;
            std::string problem;
            std::optional<PluginRecord> r = plugin::FromJson(j, &problem);
            if (r && r->path != paths[i]) problem = "it names another path", r.reset();
            if (r) {
              finish(i, std::move(*r));
            } else {
              fail(i, PluginStatus::kError, "the scanner sent a malformed record for " + paths[i] + ": " + problem);
            }
          }
        }
      }
      if (!eof && now >= c.deadline) hung = true;
      // Handed off and its last plugin answered: what it would load next is
      // another child's now.
      const bool finished = c.handed_off && !c.current && c.pending.empty();
      if (!eof && !hung && !finished) continue;
      if (hung || finished) ::kill(c.pid, SIGKILL);
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
          fail(i, PluginStatus::kHung,
               std::string("scanning ") + paths[i] + " did not finish within " + t +
                   " s (killed; rescanned when its files change)",
               [&](PluginRecord& r) { r.timeout_s = secs; });
        } else if (WIFSIGNALED(status)) {
          const int sig = WTERMSIG(status);
          fail(i, PluginStatus::kCrashed,
               "the scanner crashed with " + plugin::SignalName(sig) + " while loading " + paths[i],
               [&](PluginRecord& r) { r.signal = sig; });
        } else {
          const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
          fail(i, PluginStatus::kExited,
               "the process exited with code " + std::to_string(code) + " while loading " + paths[i],
               [&](PluginRecord& r) { r.exit_code = code; });
        }
      } else if (!c.started && !c.pending.empty()) {
        // It died before loading anything: not a plugin's fault.
        std::string why = WIFSIGNALED(status) ? "killed by " + plugin::SignalName(WTERMSIG(status))
                                              : "exit code " + std::to_string(WEXITSTATUS(status));
        if (hung) why = "no answer";
        for (auto i : c.pending) fail(i, PluginStatus::kError, "the scanner failed to start (" + why + ")");
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
    // A plugin slow to load does not hold up the ones queued behind it: they
    // go to a new child while there is room for one (up to `jobs`).
    for (auto& c : children) {
      if (children.size() + batches.size() >= static_cast<std::size_t>(std::max(1, opts.jobs))) break;
      if (!c.current || c.handed_off || c.pending.size() < 2 || now < c.begun + slow) continue;
      std::vector<std::size_t> rest;
      for (auto i : c.todo) {
        if (c.pending.count(i) && i != *c.current) rest.push_back(i);
      }
      for (auto i : rest) c.pending.erase(i);
      c.handed_off = true;
      batches.push_front(rest);
    }
    start_next();
    if (opts.tick) opts.tick();
  }
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!done[i]) fail(i, PluginStatus::kError, "not scanned");
  }
  return results;
}

bool ServesPrototypes(const PluginRecord& r) { return r.op_library && r.status == PluginStatus::kOk; }

std::vector<PluginRecord> ScanOppPath(const std::vector<std::string>& paths, const std::vector<bool>& is_library,
                                      const std::vector<PluginRecord>& other_libraries, const ScanOptions& opts) {
  std::vector<PluginRecord> out(paths.size());
  std::vector<std::size_t> libs, pys;
  for (std::size_t i = 0; i < paths.size(); ++i) (is_library[i] ? libs : pys).push_back(i);
  auto scan = [&](const std::vector<std::size_t>& which, const ScanOptions& given) {
    std::vector<std::string> p;
    for (auto i : which) p.push_back(paths[i]);
    ScanOptions o = given;
    if (opts.on_record) {
      o.on_record = [&](std::size_t k, const PluginRecord& r) { opts.on_record(which[k], r); };
    }
    std::vector<PluginRecord> r = ScanPlugins(p, o);
    for (std::size_t k = 0; k < which.size(); ++k) out[which[k]] = std::move(r[k]);
  };
  // Prototype libraries for a scan: those whose record passes `serves`.
  auto lenders = [&](const std::function<bool(const PluginRecord&)>& serves) {
    ScanOptions o = opts;
    o.prototype_libraries.clear();
    for (const auto& r : other_libraries) {
      if (serves(r)) o.prototype_libraries.push_back(r.path);
    }
    for (auto i : libs) {
      if (serves(out[i])) o.prototype_libraries.push_back(paths[i]);
    }
    return o;
  };
  // Alone first: a library that crashes in its constructors is marked without
  // being loaded into any other scan.
  if (!libs.empty()) scan(libs, lenders([](const PluginRecord&) { return false; }));
  // A library whose custom op lacks a prototype may find it in another one
  // that loaded (even one failing for the same reason: all are retried).
  std::vector<std::size_t> again;
  for (auto i : libs) {
    if (out[i].status == PluginStatus::kError && out[i].error.kind == "prototype") again.push_back(i);
  }
  if (!again.empty()) {
    const ScanOptions loaded = lenders([](const PluginRecord& r) {
      return ServesPrototypes(r) || (r.op_library && r.status == PluginStatus::kError && r.error.kind == "prototype");
    });
    if (!loaded.prototype_libraries.empty()) scan(again, loaded);
  }
  // Python plugins bind to the prototypes of the libraries that register them.
  if (!pys.empty()) {
    ScanOptions o = lenders(ServesPrototypes);
    // Failed libraries name themselves in an implementation's "canonical IR not found".
    auto failed = [&](const PluginRecord& r, const std::string& path) {
      if (r.op_library && r.status == PluginStatus::kError) o.failed_libraries.emplace_back(path, r.error.OneLine());
    };
    for (const auto& r : other_libraries) failed(r, r.path);
    for (auto i : libs) failed(out[i], paths[i]);
    scan(pys, o);
  }
  return out;
}

}  // namespace ge::registry
