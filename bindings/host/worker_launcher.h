// worker_launcher.h: how the engine starts plugin workers: forked from one zygote, or posix_spawn'ed.
//
// The engine never forks itself (it has threads). Its first process-isolated
// plugin starts one zygote (`ge-plugin-scan --zygote`, ge/host/zygote.h:
// CPython and `ge` initialized once, role "worker" = RunWorker), and every
// worker of every process plugin is then a fork of it: no Python start-up per
// worker, and the pages the zygote initialized are shared copy-on-write.
// The zygote is the workers' parent, so their exit statuses arrive as its
// exit reports (WaitExit). A zygote that dies is restarted once; after that,
// or when it cannot start or refuses a fork, workers are posix_spawn'ed
// (SpawnWorker) with a log line. $GE_PLUGIN_WORKER_ZYGOTE=0, or an explicit
// $GE_PLUGIN_WORKER (that executable is what runs), spawns from the start.
// share/docs/host-design.md, "Process isolation" and "The zygote".
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace ge::host {

class ZygoteClient;

// One started worker: its pid and whether the zygote is its parent.
struct StartedWorker {
  pid_t pid = -1;
  bool forked = false;  // the zygote's child (its exits come as reports) vs our posix_spawn child
  int zygote = 0;       // which zygote forked it (1: the first, 2: its restart)
};

class WorkerLauncher {
 public:
  using Clock = std::chrono::steady_clock;

  // The process's launcher, shared by every ProcessPlugin while one holds it
  // (the zygote ends with the last). `python_dir`: the engine's ge package
  // folder (PythonRuntime::PackageDir), given to the zygote so that its
  // Python is the engine's. Thread-safe.
  static std::shared_ptr<WorkerLauncher> Shared(const std::string& python_dir);
  explicit WorkerLauncher(std::string python_dir);
  ~WorkerLauncher();
  WorkerLauncher(const WorkerLauncher&) = delete;
  WorkerLauncher& operator=(const WorkerLauncher&) = delete;

  // Starts one worker with one end of a new socketpair as its channel and
  // stores the engine's end (close-on-exec, owned by the caller) in *channel.
  // The worker's stdout and stderr are this process's. Throws
  // std::runtime_error when neither a fork nor a spawn works (SpawnWorker's
  // error). Blocks while a zygote starts (at most 30 s). Thread-safe.
  StartedWorker Start(int* channel);
  // Sends SIGKILL to a worker Start returned (through the zygote for its
  // children: never a pid it has reaped). Thread-safe.
  void Kill(const StartedWorker& w);
  // Waits until `w` has ended or `until`, and returns its waitpid status;
  // nullopt when `until` passed. A forked worker whose zygote is gone has no
  // status: nullopt with *lost set to why (the worker died with its zygote,
  // PR_SET_PDEATHSIG). Thread-safe; polls every 2 ms.
  std::optional<int> WaitExit(const StartedWorker& w, Clock::time_point until, std::string* lost);
  // The current zygote's pid (-1: none). For tests and benchmarks.
  pid_t ZygotePid();

 private:
  // The zygote client to fork from, started or restarted when needed; null:
  // posix_spawn. Under mu_.
  ZygoteClient* Usable();
  // Reads the zygote's exit reports into exits_. Under mu_.
  void Collect();

  const std::string python_dir_;
  // Guards everything below (ZygoteClient is not thread-safe). Never taken
  // while holding the GIL, and no Python runs under it: a lock order against
  // the interpreter lock would otherwise be possible (share/docs/host-design.md).
  std::mutex mu_;
  std::unique_ptr<ZygoteClient> zygote_;
  int starts_ = 0;       // zygotes started (the first, and one restart)
  bool spawn_ = false;   // no zygote any more: posix_spawn every worker
  std::string gone_;     // why the last zygote ended
  std::map<std::pair<int, pid_t>, int> exits_;  // (zygote, pid) -> status: reports not yet taken by WaitExit
};

}  // namespace ge::host
