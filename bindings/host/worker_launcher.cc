// worker_launcher.cc: workers forked from the engine's zygote, or posix_spawn'ed (worker_launcher.h).
#include "worker_launcher.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "ge/host/zygote.h"
#include "ge/log_spdlog.h"
#include "process_worker.h"

namespace ge::host {

namespace {

constexpr int kZygoteStarts = 2;  // the first and one restart

// The zygote program: ge-plugin-scan, where the worker executable is
// (process_worker.h, LibexecProgram).
std::string ZygoteExecutable() { return LibexecProgram("ge-plugin-scan"); }

// Why workers are spawned from the start ("" when they are forked).
std::string SpawnRequested() {
  const char* z = std::getenv("GE_PLUGIN_WORKER_ZYGOTE");
  if (z != nullptr && std::string(z) == "0") return "GE_PLUGIN_WORKER_ZYGOTE=0";
  const char* w = std::getenv("GE_PLUGIN_WORKER");
  if (w != nullptr && *w != '\0') return "GE_PLUGIN_WORKER is set";
  return {};
}

bool Valid(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

}  // namespace

std::shared_ptr<WorkerLauncher> WorkerLauncher::Shared(const std::string& python_dir) {
  // The one launcher of the process while any plugin holds it; a process
  // that unloads every process plugin ends its zygote with the last.
  static std::mutex mu;
  static std::weak_ptr<WorkerLauncher> current;
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<WorkerLauncher> l = current.lock();
  if (!l) {
    l = std::make_shared<WorkerLauncher>(python_dir);
    current = l;
  }
  return l;
}

WorkerLauncher::WorkerLauncher(std::string python_dir) : python_dir_(std::move(python_dir)) {}

WorkerLauncher::~WorkerLauncher() = default;  // the client closes the socket: the zygote kills its children, exits

ZygoteClient* WorkerLauncher::Usable() {
  if (spawn_) return nullptr;
  if (zygote_ && zygote_->alive()) return zygote_.get();
  if (zygote_) {
    Collect();  // the reports it sent before it went
    gone_ = zygote_->gone_reason();
    zygote_.reset();  // reaps it (our child)
  }
  if (starts_ >= kZygoteStarts) {
    spawn_ = true;
    Logger("host")->warn("the plugin workers' zygote is gone again ({}); spawning one ge-plugin-worker per worker from "
                         "now on",
                         gone_);
    return nullptr;
  }
  ++starts_;
  std::string why;
  zygote_ = ZygoteClient::Start({ZygoteExecutable(), "--zygote", "--python-dir", python_dir_}, -1, &why);
  if (!zygote_) {
    spawn_ = true;
    Logger("host")->warn("{}; spawning one ge-plugin-worker per worker instead", why);
    return nullptr;
  }
  if (!gone_.empty()) {
    Logger("host")->info("{}; restarted the plugin workers' zygote (pid {})", gone_, zygote_->pid());
  }
  return zygote_.get();
}

void WorkerLauncher::Collect() {
  if (!zygote_) return;
  for (const ZygoteExit& e : zygote_->TakeExits()) exits_[{starts_, e.pid}] = e.status;
}

StartedWorker WorkerLauncher::Start(int* channel) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string requested = SpawnRequested();
    for (ZygoteClient* z; requested.empty() && (z = Usable()) != nullptr;) {
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        throw std::runtime_error(std::string("socketpair for a plugin worker failed: ") + std::strerror(errno));
      }
      ZygoteFds fds;
      fds.channel = sv[1];
      fds.stdout_fd = Valid(STDOUT_FILENO) ? STDOUT_FILENO : -1;  // as a spawned worker's: the engine's own
      fds.stderr_fd = Valid(STDERR_FILENO) ? STDERR_FILENO : -1;
      std::string why;
      const pid_t pid = z->Fork("worker", {}, fds, &why);
      ::close(sv[1]);
      if (pid > 0) {
        *channel = sv[0];
        return StartedWorker{pid, true, starts_};
      }
      ::close(sv[0]);
      if (z->alive()) {
        // Refused (e.g. a zygote without the role): this worker is spawned.
        Logger("host")->warn("the plugin workers' zygote refused a worker ({}); spawning ge-plugin-worker", why);
        break;
      }
      // Gone: restarted (once) by the next Usable.
    }
  }
  return StartedWorker{SpawnWorker(WorkerExecutable(), channel), false, 0};
}

void WorkerLauncher::Kill(const StartedWorker& w) {
  if (!w.forked) {
    ::kill(w.pid, SIGKILL);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Only through the zygote that forked it, which signals only a child it
  // has not reaped (a pid that is free again is never hit).
  if (zygote_ && zygote_->alive() && w.zygote == starts_) zygote_->Kill(w.pid, SIGKILL);
}

std::optional<int> WorkerLauncher::WaitExit(const StartedWorker& w, Clock::time_point until, std::string* lost) {
  for (;;) {
    if (!w.forked) {
      int st = 0;
      const pid_t r = ::waitpid(w.pid, &st, WNOHANG);
      if (r == w.pid) return st;
      if (r < 0 && errno != EINTR) {
        *lost = "it cannot be waited for: " + std::string(std::strerror(errno));
        return std::nullopt;
      }
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      Collect();
      auto it = exits_.find({w.zygote, w.pid});
      if (it != exits_.end()) {
        const int st = it->second;
        exits_.erase(it);
        return st;
      }
      if (w.zygote != starts_ || !zygote_ || !zygote_->alive()) {
        const std::string why = w.zygote == starts_ && zygote_ ? zygote_->gone_reason() : gone_;
        *lost = "its zygote is gone (" + why + ") and the worker with it";
        return std::nullopt;
      }
    }
    if (Clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

pid_t WorkerLauncher::ZygotePid() {
  std::lock_guard<std::mutex> lock(mu_);
  return zygote_ && zygote_->alive() ? zygote_->pid() : -1;
}

}  // namespace ge::host
