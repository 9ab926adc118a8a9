// process_plugin.h: the engine's side of a plugin of isolation "process": its worker process and the proxy ops.
//
// A ProcessPlugin owns one worker (process_worker.h) at a time: it starts it,
// has it load the plugin, sends it one call at a time with a deadline, and
// turns a worker that crashes, exits, or overruns the deadline (it is then
// killed) into a failed call naming the plugin, the op_type, the method and
// the signal or exit code. The next call starts a new worker; after
// kMaxRestarts restarts within kRestartWindowS the plugin is disabled and
// every call fails with that reason. ProcessOpProxy is what the registry
// hands the engine: the same capability interfaces, mask and schema as the
// plugin's op in its worker. share/docs/host-design.md, "Process isolation".
//
// Workers are started by the process's WorkerLauncher (worker_launcher.h):
// forked from its zygote, or posix_spawn'ed.
//
// Thread-safety: calls to one plugin serialize on its lock (one worker serves
// one call at a time; the launcher's lock is taken under it, never the other
// way); no Python and no interpreter lock in this process.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "call_page.h"
#include "ge/op/custom_op.h"
#include "ge/plugin/record.h"
#include "shared_arena.h"
#include "worker_launcher.h"
#include "worker_log.h"
#include "worker_wire.h"

namespace ge::host {

inline constexpr int kMaxRestarts = 3;
// Seconds a new worker gets to load its plugin (an import of numpy on a busy
// machine takes seconds), or the call timeout when that is longer.
inline constexpr double kMinLoadTimeoutS = 60.0;
inline constexpr double kRestartWindowS = 60.0;

struct ProcessPluginConfig {
  std::string name;
  std::string path;
  std::string python_dir;
  std::string log_level;
  double join_timeout_s = 0.5;
  double call_timeout_s = 60.0;
  std::vector<std::string> prototype_libraries;
  std::vector<std::pair<std::string, std::string>> failed_libraries;
};

// One op of the plugin as its worker registered it.
struct ProcessOpInfo {
  uint32_t index = 0;  // its position in the worker's "loaded" answer (ExecuteRequest::op_index)
  std::string op_type;
  std::shared_ptr<const OpSchema> schema;
  uint32_t capabilities = 0;
};

// One worker process of a plugin (one generation): its pid, channel, call
// page, the mapping of its arena, and the blocks of that arena the engine let
// go of (sent with the next request). Output tensors keep it alive.
struct WorkerLink {
  pid_t pid = -1;
  StartedWorker started;  // how it was started (forked by the zygote or spawned): how it is reaped
  int fd = -1;
  int pidfd = -1;  // the worker's own pidfd, passed with its "loaded" answer (-1: none; readable once it ended)
  std::shared_ptr<SharedMapping> page_mapping;
  page::Page* page = nullptr;  // in page_mapping (call_page.h)
  uint32_t seq = 0;            // the last request rung; under ProcessPlugin's lock
  page::SpinPolicy spin;       // how long to spin for its answers; under ProcessPlugin's lock
  std::shared_ptr<SharedMapping> arena;
  std::mutex frees_mu;
  std::vector<uint64_t> frees;
  bool alive = true;  // under ProcessPlugin's lock
  // Runtime attributes this worker holds by id (sent once in a socket
  // request, then named by ExecuteRequest::attrs_id); under ProcessPlugin's lock.
  std::vector<std::pair<std::vector<AttrValue>, uint32_t>> attr_ids;
  uint32_t next_attr_id = 1;
  ~WorkerLink();
  void QueueFree(uint64_t offset);
  std::vector<uint64_t> TakeFrees();
  // The id under which the worker holds `values`, 0 when it holds none.
  uint32_t AttrsId(const std::vector<AttrValue>& values) const;
  // A new id for `values` (the request that carries them tells the worker);
  // 0 when they cannot be held (tensor attributes: their bytes may change
  // behind an unchanged pointer).
  uint32_t RememberAttrs(const std::vector<AttrValue>& values);
  // True when the worker process has ended (its pidfd) or closed its end.
  bool Gone() const noexcept;
  // Its log lines, re-emitted through the engine's log (worker_log.h); null
  // when the socket could not be made (the worker then logs to its stderr).
  std::unique_ptr<WorkerLogReader> log;
  uint32_t log_seen = 0;  // the page's log_records when last drained; under ProcessPlugin's lock
  // Re-emits the lines the worker logged up to its last answer (when it logged any).
  void DrainLog();
};

// What a call sends: an ExecuteRequest the build wrote into the link's page,
// or a message for the socket.
struct Outgoing {
  bool in_page = false;
  wire::Json json;
};
// What a call got back: the page's reply (in_page; copied out of the page
// under the plugin's lock, its first n_outputs records), or a socket message.
struct Incoming {
  bool in_page = false;
  page::ExecuteReply page_reply;
  wire::Json json;
};

class ProcessPlugin {
 public:
  struct Loaded {
    plugin::PluginRecord report;  // the worker's report (status ok or why not)
    std::vector<ProcessOpInfo> ops;
  };
  // Starts the first worker and loads the plugin in it. Never throws for a
  // plugin problem: a failed start, a worker that dies or overruns the
  // deadline while loading, is `loaded->report` with status error.
  ProcessPlugin(ProcessPluginConfig cfg, Loaded* loaded);
  ~ProcessPlugin();
  ProcessPlugin(const ProcessPlugin&) = delete;
  ProcessPlugin& operator=(const ProcessPlugin&) = delete;

  // Builds a request for the current worker (restarting it first when it
  // died), rings its page and sends it, and waits at most call_timeout_s for
  // `reply`. `build` may encode blocks of the worker's arena and write the
  // page's request (it gets the link). A failure of the worker, the deadline
  // or the plugin being disabled is the returned Status (message naming
  // plugin, op_type, method); otherwise `reply` holds the worker's answer and
  // *link the worker that gave it.
  Status Call(const char* method, const std::string& op_type,
              const std::function<Outgoing(const std::shared_ptr<WorkerLink>&)>& build, Incoming& reply,
              std::shared_ptr<WorkerLink>* link);
  // The same for a socket message and answer.
  Status Call(const char* method, const std::string& op_type,
              const std::function<wire::Json(const std::shared_ptr<WorkerLink>&)>& build, wire::Json& reply,
              std::shared_ptr<WorkerLink>* link);

  const ProcessPluginConfig& config() const noexcept { return cfg_; }
  // The current worker's pid (-1 when none): for tests and benchmarks.
  pid_t WorkerPid();

 private:
  std::shared_ptr<WorkerLink> StartWorker(Loaded* loaded, std::string* why);
  void EndWorker(bool kill_now);
  // "died of signal 11 (Segmentation fault)" / "exited with code 3", reaping the worker.
  std::string Reap(bool kill_now);
  Status Failure(const char* method, const std::string& op_type, const std::string& what) const;
  // The end of a failed call's message: "; a new worker is started for the
  // next call", or, at the restart limit, that the next call disables the plugin.
  std::string WhatNext() const;
  double LoadTimeout() const noexcept { return std::max(cfg_.call_timeout_s, kMinLoadTimeoutS); }

  ProcessPluginConfig cfg_;
  std::shared_ptr<WorkerLauncher> launcher_;  // shared by every process plugin (one zygote)
  std::mutex mu_;
  std::shared_ptr<WorkerLink> link_;
  std::deque<std::chrono::steady_clock::time_point> restarts_;
  std::string disabled_;  // the reason, once disabled
  std::string last_failure_;
};

// The op object the engine sees for an op of a process-isolated plugin.
class ProcessOpProxy final : public CapabilityReportingOp,
                             public EagerExecuteOp,
                             public CompilableOp,
                             public AnnotatedArgsOp,
                             public InferMetaOp {
 public:
  ProcessOpProxy(std::shared_ptr<ProcessPlugin> plugin, ProcessOpInfo info,
                 std::shared_ptr<std::atomic<uint64_t>> calls);
  uint32_t GetCapabilities() const noexcept override { return info_.capabilities; }
  const OpSchema& GetSchema() const noexcept override { return *info_.schema; }
  graphStatus Execute(gert::EagerOpExecutionContext* ctx) override;
  graphStatus InferMeta(InferMetaContext* ctx) override;
  graphStatus Compile(gert::OpCompileContext* ctx) override;
  graphStatus DeclareLaunchArgs(gert::AnnotatedArgsContext& ctx) override;

 private:
  std::shared_ptr<ProcessPlugin> plugin_;
  ProcessOpInfo info_;
  std::shared_ptr<std::atomic<uint64_t>> calls_;
};

}  // namespace ge::host
