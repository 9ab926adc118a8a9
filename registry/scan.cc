// scan.cc: see scan.h.
#include "scan.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <optional>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "ge/host/zygote.h"
#include "ge/log_spdlog.h"
#include "ge/text.h"
#include "ge/spawn_attr.h"

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

// How long a scanner child that sent its record may take to exit before it is
// killed. Nothing runs after the record but _exit, so this only has to cover
// a loaded machine's scheduling delay; 2 s does, and is far shorter than any
// refresh interval, so a child never lingers in the daemon.
constexpr int kAnsweredGraceMs = 2000;

// The scanner's arguments shared by both ways of starting it.
std::vector<std::string> ScannerArgs(const ScanOptions& opts) {
  std::vector<std::string> args;
  if (!opts.log_level.empty()) args.push_back("--log-level"), args.push_back(opts.log_level);
  if (opts.allow_insecure) args.push_back("--allow-insecure");
  for (const auto& lib : opts.prototype_libraries) args.push_back("--prototype-library"), args.push_back(lib);
  for (const auto& [lib, why] : opts.failed_libraries) {
    args.push_back("--failed-library"), args.push_back(lib), args.push_back(why);
  }
  return args;
}

// While a zygote's child waits for its exit report, the loop looks at the
// zygote this often (a stopped zygote sends nothing to wake it).
constexpr int kExitCheckMs = 20;

// The most plugins one zygote child scans, in sequence: after each record
// the registry sends it the next queued path, or ends its feed. Each stays
// loaded (a sub-interpreter with `ge` is about 2 MB) until the child exits,
// and the child's fork and exit are shared by them (share/docs/registry.md,
// "Processes: the zygote").
constexpr std::size_t kBatchMax = 16;

// One scanner child: the plugins of its batch, in order (a spawned one: one).
struct Child {
  std::vector<std::size_t> batch;
  pid_t pid = -1;
  bool zygote = false;  // forked by the zygote (it reaps it and reports the exit), else our posix_spawn child
  int generation = 0;   // the zygote that forked it (ScanZygote::State::starts then)
  bool alone = false;   // a suspect rescanned by itself (its batch is one plugin, the only child in flight)
  int out = -1;              // its channel (a zygote's child: a socket, the next paths are sent on it)
  bool fed_all = false;      // told it gets no more paths (shutdown of our sending side)
  std::string buf;
  Clock::time_point deadline;
  std::size_t begun = 0;     // plugins of the batch whose "begin" came
  std::size_t answered = 0;  // plugins whose record came (held in `records` until the exit is reported)
  std::vector<std::optional<PluginRecord>> records;  // the records, if well-formed
  std::vector<std::string> problems;                  // else why not
  std::size_t judged = SIZE_MAX;                      // the batch position already judged (hung, no start)
  bool eof = false;                    // its channel closed
  bool waiting = false;                // closed: waiting for the zygote's exit report
  bool killed = false;                 // asked to be killed: waiting for the exit report
  bool orphaned = false;               // its zygote was lost before reporting its exit
  std::string lost;                    // how (ZygoteClient::gone_reason)
  int lost_status = -1;                // the zygote's waitpid status (ZygoteClient::end_status)
  std::optional<int> status;           // its waitpid status, once known
};

// posix_spawn's a ge-plugin-scan for the plugin `path` (on its stdin).
bool Spawn(const std::string& path, const ScanOptions& opts, Child& c, std::string* why) {
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
  // A process group of its own, as a zygote's scan child: a plugin signalling
  // its group hits only its scanner (share/docs/registry.md, "Processes").
  const PlainSpawnAttr attr(/*own_process_group=*/true);
  const std::string scanner = opts.scanner.empty() ? DefaultScanner() : opts.scanner;
  std::vector<std::string> args{scanner};
  for (auto& a : ScannerArgs(opts)) args.push_back(std::move(a));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, scanner.c_str(), &fa, attr.get(), argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    *why = "cannot start the scanner " + scanner + ": " + std::strerror(rc);
    ::close(in[1]), ::close(out[0]);
    return false;
  }
  // The path ends with a NUL (the one byte no path holds); the pipe holds it.
  const std::string list = path + '\0';
  std::size_t off = 0;
  while (off < list.size()) {
    const ssize_t n = ::write(in[1], list.data() + off, list.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child died; its exit is handled by the caller
    off += static_cast<std::size_t>(n);
  }
  ::close(in[1]);
  c.pid = pid;
  c.out = out[0];
  c.zygote = false;
  return true;
}

}  // namespace

struct ScanZygote::State {
  std::unique_ptr<host::ZygoteClient> client;
  int starts = 0;         // zygotes started so far (over every scan it served)
  bool spawn = false;     // no zygote could start: posix_spawn each child
  std::string scanner;    // the scanner it runs
  // How the zygote of each generation (`starts` when it was started) was
  // lost: ZygoteClient::gone_reason and end_status, kept for the children
  // it had when it was replaced.
  std::map<int, std::pair<std::string, int>> lost;
};

ScanZygote::ScanZygote() = default;
ScanZygote::~ScanZygote() = default;

int ScanZygote::pid() const {
  std::lock_guard<std::mutex> lock(mu);
  return state && state->client && state->client->alive() ? state->client->pid() : -1;
}

namespace {

// The zygote client of `z`, started or restarted when needed (while
// `z.starts` < `max_starts`); null when the scan is to spawn its children
// (the zygote cannot start: said once in the log) or, with `*exhausted` set,
// when the scan has used up its zygote starts. A zygote dying is never a
// reason to spawn: a plugin that kills its parent would then kill the tool.
host::ZygoteClient* UsableZygote(ScanZygote::State& z, const ScanOptions& opts, int max_starts, bool* exhausted) {
  *exhausted = false;
  if (z.spawn) return nullptr;
  if (z.client && z.client->alive()) return z.client.get();
  std::string gone;
  if (z.client) {
    gone = z.client->gone_reason();
    z.client->TakeExits();  // reaps it when it ended (its status tells how)
    z.lost[z.starts] = {z.client->gone_reason(), z.client->end_status()};
  }
  z.client.reset();  // reaps the one that died
  if (z.starts >= max_starts) {
    *exhausted = true;
    return nullptr;
  }
  const std::string scanner = opts.scanner.empty() ? DefaultScanner() : opts.scanner;
  std::string why;
  ++z.starts;
  z.client = host::ZygoteClient::Start({scanner, "--zygote"}, -1, &why);
  if (!z.client) {
    Logger("registry")->warn("{}; spawning one ge-plugin-scan per plugin instead", why);
    z.spawn = true;
    return nullptr;
  }
  if (!gone.empty()) Logger("registry")->info("{}; restarted the scanner's zygote (pid {})", gone, z.client->pid());
  z.scanner = scanner;
  return z.client.get();
}

}  // namespace

std::vector<PluginRecord> ScanPlugins(const std::vector<std::string>& paths, const ScanOptions& opts) {
  std::vector<PluginRecord> results(paths.size());
  std::vector<bool> done(paths.size(), false);
  std::size_t ndone = 0;
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.timeout_s));
  const auto start_limit =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.timeout_s + 5.0));
  const auto grace = std::chrono::milliseconds(kAnsweredGraceMs);

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
                                           plugin::ErrorKind::kScan, error);
    if (fill) fill(r);
    finish(i, std::move(r));
  };
  if (paths.empty()) return results;

  // The zygote: the caller's, else one for this scan.
  std::shared_ptr<ScanZygote> zygote = opts.zygote ? opts.zygote : std::make_shared<ScanZygote>();
  std::lock_guard<std::mutex> zlock(zygote->mu);
  if (!zygote->state) {
    zygote->state = std::make_unique<ScanZygote::State>();
    const char* env = std::getenv("GE_PLUGIN_SCAN_ZYGOTE");
    if (env != nullptr && std::string(env) == "0") zygote->state->spawn = true;
  }
  ScanZygote::State& zs = *zygote->state;
  const std::string scanner = opts.scanner.empty() ? DefaultScanner() : opts.scanner;
  if (zs.client && zs.scanner != scanner) zs.client.reset(), zs.starts = 0;  // another scanner asked for
  const std::vector<std::string> base_args = ScannerArgs(opts);
  // The children's stderr (the zygote's own is the caller's).
  int err_fd = -1;
  if (opts.quiet_children) err_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  const int child_err = err_fd >= 0 ? err_fd : STDERR_FILENO;

  std::deque<std::size_t> todo;
  for (std::size_t i = 0; i < paths.size(); ++i) todo.push_back(i);
  // Plugins that ran in a child of a zygote that was lost (died, stopped,
  // stopped answering) before their verdict was confirmed: each is scanned
  // again alone, so that the one during whose scan it is lost is the culprit.
  std::deque<std::size_t> suspects;
  std::vector<Child> children;
  // Zygote starts this scan may use: the first, a few restarts for losses not
  // pinned on a plugin (OOM, a plugin that kills only sometimes), and two more
  // per plugin marked for it, so a pathological case cannot loop.
  const int starts0 = zs.starts;
  int killers = 0;
  auto max_starts = [&]() { return starts0 + 3 + 2 * killers; };
  auto not_scanned_why = [&]() {
    return "not scanned: the scanner's zygote was lost " + std::to_string(zs.starts - starts0) +
           " times during this scan (share/docs/registry.md, \"Processes: the zygote\")";
  };
  const std::size_t jobs = static_cast<std::size_t>(std::max(1, opts.jobs));
  // Plugins given back unbegun by a child, in their order, to the front.
  auto give_back = [&](const std::vector<std::size_t>& batch, std::size_t from) {
    for (std::size_t k = batch.size(); k-- > from;) {
      if (!done[batch[k]]) todo.push_front(batch[k]);
    }
  };

  // Forks the scanner child of `batch` (plugins in order), or spawns one for
  // its first plugin (the others go back to the front of the queue).
  auto launch = [&](std::vector<std::size_t> batch, bool alone) {
    Child c;
    c.alone = alone;
    std::string why;
    bool exhausted = false;
    for (host::ZygoteClient* z; (z = UsableZygote(zs, opts, max_starts(), &exhausted)) != nullptr;) {
      // Its channel: lines from it, and the next paths to it (a suspect
      // alone gets none).
      int out[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) != 0) {
        for (auto i : batch) {
          fail(i, PluginStatus::kError, std::string("cannot make a socket for the scanner: ") + std::strerror(errno));
        }
        return;
      }
      std::vector<std::string> args = base_args;
      if (!alone) args.push_back("--more-on-channel");
      args.push_back("--");
      for (auto i : batch) args.push_back(paths[i]);
      host::ZygoteFds fds;
      fds.channel = out[1];
      fds.stderr_fd = child_err;
      const pid_t pid = z->Fork("scan", args, fds, &why);
      ::close(out[1]);
      if (pid > 0) {
        c.batch = std::move(batch);
        c.pid = pid;
        c.out = out[0];
        c.zygote = true;
        c.fed_all = alone;
        if (alone) ::shutdown(c.out, SHUT_WR);
        c.generation = zs.starts;
        c.deadline = Clock::now() + start_limit;
        children.push_back(std::move(c));
        return;
      }
      ::close(out[0]);
      if (z->alive()) {  // refused (threads, fork failed): this process spawns from now on
        Logger("registry")->warn("the scanner's zygote refused a child ({}); spawning one ge-plugin-scan per plugin "
                                 "instead", why);
        zs.spawn = true;
        break;
      }
      // Lost while forking this child (which may have begun before the
      // answer): its plugins are suspects. The next UsableZygote restarts the
      // zygote; the children it had are judged in the loop below.
      for (auto i : batch) suspects.push_back(i);
      return;
    }
    if (exhausted) {
      for (auto i : batch) fail(i, PluginStatus::kError, not_scanned_why());
      return;
    }
    give_back(batch, 1);
    batch.resize(1);
    if (!Spawn(paths[batch[0]], opts, c, &why)) {
      fail(batch[0], PluginStatus::kError, why);
      return;
    }
    c.batch = std::move(batch);
    c.deadline = Clock::now() + start_limit;
    children.push_back(std::move(c));
  };
  auto start_next = [&]() {
    for (;;) {
      // Suspects are scanned one at a time, before anything else, each alone
      // in its child and the only child in flight.
      if (!suspects.empty()) {
        if (!children.empty()) return;
        const std::size_t i = suspects.front();
        suspects.pop_front();
        if (!done[i]) launch({i}, /*alone=*/true);
        continue;
      }
      if (todo.empty() || children.size() >= jobs) return;
      // Its first plugin; the next ones are sent after each record (feed).
      const std::size_t i = todo.front();
      todo.pop_front();
      if (!done[i]) launch({i}, /*alone=*/false);
    }
  };
  // After a record of zygote child c: the next queued plugin for it, or the
  // end of its feed (its batch is full, suspects wait to be scanned alone,
  // or nothing is queued): then it exits after its record.
  auto feed = [&](Child& c) {
    if (c.fed_all || !c.zygote) return;
    while (!todo.empty() && done[todo.front()]) todo.pop_front();
    if (c.batch.size() < kBatchMax && suspects.empty() && !todo.empty()) {
      const std::size_t i = todo.front();
      const std::string msg = paths[i] + '\0';
      if (::send(c.out, msg.data(), msg.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(msg.size())) {
        todo.pop_front();
        c.batch.push_back(i);
        return;
      }
    }
    ::shutdown(c.out, SHUT_WR);
    c.fed_all = true;
  };
  // The verdict of plugin i whose scanner ended (or was killed) without its
  // record; `started`: its "begin" came.
  auto verdict = [&](std::size_t i, bool started, bool hung, int status) {
    const double secs = opts.timeout_s;
    if (hung) {
      char t[32];
      std::snprintf(t, sizeof(t), "%g", secs);
      fail(i, PluginStatus::kHung,
           std::string("scanning ") + paths[i] + " did not finish within " + t +
               " s (killed; rescanned when its files change)",
           [&](PluginRecord& r) { r.timeout_s = secs; });
    } else if (!started) {
      // It died before loading anything: not the plugin's fault.
      const std::string why = WIFSIGNALED(status) ? "killed by " + plugin::SignalName(WTERMSIG(status))
                                                  : "exit code " + std::to_string(WEXITSTATUS(status));
      fail(i, PluginStatus::kError, "the scanner failed to start (" + why + ")");
    } else if (WIFSTOPPED(status)) {
      // Our spawned scanner's guard found stopped (then killed).
      const int sig = WSTOPSIG(status);
      fail(i, PluginStatus::kCrashed,
           "stopped its scanner's parent process (" + plugin::SignalName(sig) + ") while being scanned: " + paths[i],
           [&](PluginRecord& r) { r.signal = sig; });
    } else if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      fail(i, PluginStatus::kCrashed, "the scanner crashed with " + plugin::SignalName(sig) + " while loading " + paths[i],
           [&](PluginRecord& r) { r.signal = sig; });
    } else {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      fail(i, PluginStatus::kExited,
           "the process exited with code " + std::to_string(code) + " while loading " + paths[i],
           [&](PluginRecord& r) { r.exit_code = code; });
    }
  };
  // The verdict of the k-th record a child sent.
  auto answer = [&](Child& c, std::size_t k) {
    const std::size_t i = c.batch[k];
    if (c.records[k]) {
      finish(i, std::move(*c.records[k]));
    } else {
      fail(i, PluginStatus::kError, "the scanner sent a malformed record for " + paths[i] + ": " + c.problems[k]);
    }
  };
  // Plugin i's scan was the only one in flight when the zygote was lost
  // (`end`: its waitpid status, -1 unknown; `why`: how it was lost).
  auto blame_zygote_loss = [&](std::size_t i, int end, const std::string& why) {
    ++killers;
    std::string what;
    if (end != -1 && WIFSTOPPED(end)) {
      what = "stopped its parent process, the scanner's zygote (" + plugin::SignalName(WSTOPSIG(end)) + ")";
    } else if (end != -1 && WIFSIGNALED(end)) {
      what = "killed its parent process, the scanner's zygote (" + plugin::SignalName(WTERMSIG(end)) + ")";
    } else {
      what = "made its parent process, the scanner's zygote, fail (" + why + ")";
    }
    fail(i, PluginStatus::kCrashed, what + ", while being scanned: " + paths[i]);
  };
  // Reaps our own (spawned) child, bounded: it is exiting or was killed. One
  // found stopped is killed, and its stop status returned (WIFSTOPPED).
  auto reap_spawned = [](pid_t pid) {
    int status = 0;
    for (int tries = 0;; ++tries) {
      const pid_t w = ::waitpid(pid, &status, (tries < 200 ? WNOHANG : 0) | WUNTRACED);
      if (w == pid && WIFSTOPPED(status)) {
        ::kill(pid, SIGKILL);
        int ignored;
        while (::waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      if (w == pid || (w < 0 && errno != EINTR)) break;
      if (tries == 200) ::kill(pid, SIGKILL);
      if (tries < 200) ::usleep(5000);
    }
    return status;
  };
  auto kill_child = [&](const Child& c) {
    if (!c.zygote) {
      ::kill(c.pid, SIGKILL);
      reap_spawned(c.pid);
    } else if (zs.client) {
      zs.client->Kill(c.pid, SIGKILL);  // the zygote reaps it
    }
  };
  // A zygote's child whose exit was reported: its records are final; the
  // plugin it was loading gets the exit's verdict; unbegun ones go back.
  auto settle = [&](Child& c) {
    for (std::size_t k = 0; k < c.answered; ++k) answer(c, k);
    if (c.begun > c.answered && c.judged != c.answered) {
      verdict(c.batch[c.answered], /*started=*/true, /*hung=*/false, *c.status);
    } else if (c.begun == 0 && c.judged != 0) {
      verdict(c.batch[0], /*started=*/false, /*hung=*/false, *c.status);
    }
    give_back(c.batch, std::max<std::size_t>(c.begun, 1));
  };
  // A zygote's child whose zygote was lost before reporting its exit: every
  // plugin it began is a suspect (the culprit when it was alone).
  auto orphan = [&](Child& c) {
    for (std::size_t k = 0; k < c.begun; ++k) {
      if (k == c.judged) continue;
      if (c.alone) {
        blame_zygote_loss(c.batch[k], c.lost_status, c.lost);
      } else {
        suspects.push_back(c.batch[k]);
      }
    }
    give_back(c.batch, c.begun);  // none of their code ran: scanned again as if new
  };

  start_next();
  while (!children.empty()) {
    std::vector<pollfd> fds;
    auto now = Clock::now();
    auto next = now + std::chrono::seconds(60);
    if (opts.tick) next = now + std::chrono::milliseconds(kScanTickMs);
    for (auto& c : children) {
      fds.push_back({c.eof ? -1 : c.out, POLLIN, 0});
      next = std::min(next, c.deadline);
      // Waiting for the zygote's exit report: it is looked at often (a
      // stopped zygote sends nothing).
      if (c.zygote && (c.eof || c.killed)) next = std::min(next, now + std::chrono::milliseconds(kExitCheckMs));
    }
    const bool watch_zygote = zs.client && zs.client->alive();
    if (watch_zygote) fds.push_back({zs.client->fd(), POLLIN, 0});
    const int wait_ms = static_cast<int>(
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1));
    const int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) break;
    now = Clock::now();
    // Exit reports of the zygote's children; also whether the zygote is lost.
    if (zs.client) {
      for (const auto& e : zs.client->TakeExits()) {
        for (auto& c : children) {
          if (c.zygote && c.pid == e.pid && c.generation == zs.starts && !c.status) {
            c.status = e.status;
            if (!c.eof) c.deadline = now + grace;  // what it wrote is read to its end, for a little while
          }
        }
      }
    }
    for (auto& c : children) {
      if (!c.zygote || c.status || c.orphaned) continue;
      std::pair<std::string, int> how;
      if (c.generation == zs.starts && zs.client && zs.client->alive()) continue;
      if (c.generation == zs.starts && zs.client) {
        how = {zs.client->gone_reason(), zs.client->end_status()};
      } else if (auto it = zs.lost.find(c.generation); it != zs.lost.end()) {
        how = it->second;
      }
      // Its zygote is lost (PR_SET_PDEATHSIG ends it, if that did not): what
      // it wrote is read to its end, for a little while, then it is judged.
      c.orphaned = true;
      c.lost = how.first;
      c.lost_status = how.second;
      c.deadline = now + grace;
    }
    std::vector<std::size_t> ended;
    for (std::size_t k = 0; k < children.size(); ++k) {
      Child& c = children[k];
      if (!c.eof && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
        char buf[65536];
        const ssize_t r = ::read(c.out, buf, sizeof(buf));
        if (r > 0) {
          c.buf.append(buf, static_cast<std::size_t>(r));
        } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
          c.eof = true;
        }
        std::size_t pos;
        while ((pos = c.buf.find('\n')) != std::string::npos) {
          const std::string line = c.buf.substr(0, pos);
          c.buf.erase(0, pos + 1);
          json j = json::parse(line, nullptr, false);
          if (!j.is_object()) continue;
          if (j.contains("begin") && j["begin"].is_string()) {
            // The next plugin of its batch, once the one before has its record.
            const auto begun = ParsePathText(j["begin"].get_ref<const std::string&>());
            if (begun && c.begun == c.answered && c.begun < c.batch.size() && *begun == paths[c.batch[c.begun]]) {
              ++c.begun;
              if (!c.killed && !c.orphaned) c.deadline = now + limit;
            }
          } else if (c.begun > c.answered) {
            // Only the plugin being scanned can be answered for; a record
            // naming another path, or none, is malformed.
            const std::size_t i = c.batch[c.answered];
            std::string problem;
            std::optional<PluginRecord> rec = plugin::FromJson(j, &problem);
            if (rec && rec->path != paths[i]) problem = "it names another path", rec.reset();
            c.records.push_back(std::move(rec));
            c.problems.push_back(std::move(problem));
            ++c.answered;
            // The next "begin", or the end, comes within the time limit.
            if (!c.killed && !c.orphaned) {
              c.deadline = now + limit;
              if (c.answered == c.batch.size()) feed(c);
            }
          }
        }
      }
      if (!c.zygote) {
        // Our own child (one plugin): its record is its verdict; we reap it.
        const std::size_t i = c.batch[0];
        if (c.answered > 0) {
          // Its guard (ge-plugin-scan's first process, the plugin's parent)
          // ends as the scanner did: a signal or a stop after the record is
          // the plugin's doing (it killed or stopped its scanner or that parent).
          const int st = reap_spawned(c.pid);
          if (WIFSTOPPED(st) || WIFSIGNALED(st)) {
            const int sig = WIFSTOPPED(st) ? WSTOPSIG(st) : WTERMSIG(st);
            fail(i, PluginStatus::kCrashed,
                 std::string(WIFSTOPPED(st) ? "stopped" : "killed") + " its scanner's parent process or the scanner (" +
                     plugin::SignalName(sig) + ") while being scanned: " + paths[i],
                 [&](PluginRecord& r) { r.signal = sig; });
          } else {
            answer(c, 0);
          }
          ended.push_back(k);
        } else if (now >= c.deadline) {
          kill_child(c);
          if (c.begun > 0) {
            verdict(i, true, /*hung=*/true, 0);
          } else {
            fail(i, PluginStatus::kError, "the scanner failed to start (no answer)");
          }
          ended.push_back(k);
        } else if (c.eof) {
          verdict(i, c.begun > 0, /*hung=*/false, reap_spawned(c.pid));
          ended.push_back(k);
        }
        continue;
      }
      // A zygote's child. Its records (and its end) are final once the
      // zygote reports its exit: a plugin that killed or stopped the zygote
      // may still have sent a record, and is blamed only by the loss below.
      if (c.status) {
        if (c.eof || now >= c.deadline) {
          settle(c);
          ended.push_back(k);
        }
        continue;
      }
      if (c.orphaned) {
        if (c.eof || now >= c.deadline) {
          orphan(c);
          ended.push_back(k);
        }
        continue;
      }
      if (c.killed) {
        // Asked the zygote to kill it; a zygote that reports nothing within
        // kAnsweredGraceMs is lost (stopped answering): judged next round.
        if (now >= c.deadline && zs.client && zs.client->alive()) {
          zs.client->Abandon("the zygote (pid " + std::to_string(zs.client->pid()) +
                             ") did not report the end of a child it was asked to kill; killed");
        }
        continue;
      }
      if (c.eof) {
        // Ending (it _exits after its last record): the zygote reports it
        // soon. One still there after kAnsweredGraceMs (plugin code that
        // closed the channel, then slept) is killed.
        if (!c.waiting) {
          c.waiting = true;
          c.deadline = now + grace;
        } else if (now >= c.deadline) {
          Logger("registry")->warn("a scanner child (pid {}) closed its channel but did not exit within {} ms; killed",
                                   c.pid, kAnsweredGraceMs);
          kill_child(c);
          c.killed = true;
          c.deadline = now + grace;
        }
        continue;
      }
      if (now >= c.deadline) {
        if (c.begun > c.answered) {
          c.judged = c.answered;  // the plugin it is loading passed the time limit
          verdict(c.batch[c.answered], true, /*hung=*/true, 0);
        } else if (c.begun == 0) {
          c.judged = 0;
          fail(c.batch[0], PluginStatus::kError, "the scanner failed to start (no answer)");
        }
        // (else: no "begin" after a record in time, only the scanner's own
        // code between plugins: nobody is blamed, the rest go back.)
        kill_child(c);
        c.killed = true;
        c.deadline = now + grace;
      }
    }
    for (auto it = ended.rbegin(); it != ended.rend(); ++it) {
      ::close(children[*it].out);
      children.erase(children.begin() + static_cast<long>(*it));
    }
    start_next();
    if (opts.tick) opts.tick();
  }
  if (err_fd >= 0) ::close(err_fd);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!done[i]) fail(i, PluginStatus::kError, "not scanned");
  }
  return results;
}

bool ServesPrototypes(const PluginRecord& r) { return r.op_library && r.status == PluginStatus::kOk; }

std::vector<PluginRecord> ScanOppPath(const std::vector<std::string>& paths, const std::vector<bool>& is_library,
                                      const std::vector<PluginRecord>& other_libraries, const ScanOptions& given_opts) {
  std::vector<PluginRecord> out(paths.size());
  // One zygote for every pass (the caller's, else this scan's).
  ScanOptions opts = given_opts;
  if (!opts.zygote) opts.zygote = std::make_shared<ScanZygote>();
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
    if (out[i].status == PluginStatus::kError && out[i].error.kind == plugin::ErrorKind::kPrototype) again.push_back(i);
  }
  if (!again.empty()) {
    const ScanOptions loaded = lenders([](const PluginRecord& r) {
      return ServesPrototypes(r) || (r.op_library && r.status == PluginStatus::kError && r.error.kind == plugin::ErrorKind::kPrototype);
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
