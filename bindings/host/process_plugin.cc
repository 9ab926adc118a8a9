// process_plugin.cc: worker lifecycle (start, deadline, crash, restart limit) and the proxy ops' calls.
#include "process_plugin.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <optional>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ge/log_spdlog.h"
#include "ge/text.h"
#include "process_worker.h"

namespace ge::host {

using wire::Json;
using Clock = std::chrono::steady_clock;

namespace {

// The "plugin" logger, looked up once: its level is the level in effect.
const std::shared_ptr<spdlog::logger>& PluginLogger() {
  static const std::shared_ptr<spdlog::logger> logger = Logger("plugin");
  return logger;
}

// Each worker holds some descriptors open in the engine (its channel, log
// socket, pidfd, call page and arena mappings: about 7), so the common soft
// RLIMIT_NOFILE of 1024 would stop at about 140 process plugins. The host
// waits with poll(2), never select(2) (whose FD_SETSIZE is what the 1024
// default protects), so, once per process before the first worker starts, the
// soft limit is raised to the hard one (at most fs.nr_open), as systemd
// advises for programs that do not use select (systemd.exec(5),
// LimitNOFILE=). An engine whose own code uses select() on descriptors it
// opens later should lower it again. share/docs/host-design.md, "Process
// isolation".
void RaiseDescriptorLimit() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct rlimit lim {};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
    rlim_t want = lim.rlim_max;
    if (std::ifstream nr("/proc/sys/fs/nr_open"); nr) {
      unsigned long long cap = 0;
      if (nr >> cap && cap > 0 && (want == RLIM_INFINITY || want > cap)) want = static_cast<rlim_t>(cap);
    }
    if (want <= lim.rlim_cur) return;
    const rlim_t before = lim.rlim_cur;
    lim.rlim_cur = want;
    if (::setrlimit(RLIMIT_NOFILE, &lim) == 0) {
      PluginLogger()->debug("raised the soft descriptor limit (RLIMIT_NOFILE) from {} to {} for process plugins",
                            static_cast<unsigned long long>(before), static_cast<unsigned long long>(want));
    }
  });
}

Clock::time_point DeadlineAfter(double seconds) {
  if (seconds <= 0) return Clock::time_point::max();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

// " (it was stopped: SIGSTOP or a debugger)" when `pid` is in the stopped
// or traced state now (/proc/PID/stat), else "".
std::string StoppedNote(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return {};
  const auto close = line.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos || close + 2 >= line.size()) return {};
  const char state = line[close + 2];
  return state == 'T' || state == 't' ? " (it was stopped: SIGSTOP or a debugger)" : "";
}

std::string DescribeWait(int st) {
  if (WIFEXITED(st) && WEXITSTATUS(st) == kWorkerExitChannelLost) {
    return "ended: it lost its channel to the engine (did the plugin close or replace the worker's descriptors?)";
  }
  if (WIFSIGNALED(st)) {
    const int sig = WTERMSIG(st);
    const char* name = ::strsignal(sig);
    return "died of signal " + std::to_string(sig) + (name ? " (" + std::string(name) + ")" : std::string());
  }
  if (WIFEXITED(st)) return "exited with code " + std::to_string(WEXITSTATUS(st));
  return "ended (wait status " + std::to_string(st) + ")";
}

// "plugin 'N' (PATH), METHOD of op_type 'OP': ", the start of every failure of a call.
std::string CallWhere(const ProcessPluginConfig& cfg, const char* method, const std::string& op_type) {
  return "plugin '" + cfg.name + "' (" + cfg.path + "), " + method + " of op_type '" + op_type + "': ";
}

}  // namespace

WorkerLink::~WorkerLink() {
  if (fd >= 0) ::close(fd);
  if (pidfd >= 0) ::close(pidfd);
}

uint32_t WorkerLink::AttrsId(const std::vector<AttrValue>& values) const {
  for (const auto& [held, id] : attr_ids) {
    if (held == values) return id;
  }
  return 0;
}

uint32_t WorkerLink::RememberAttrs(const std::vector<AttrValue>& values) {
  for (const AttrValue& v : values) {
    if (TypeOf(v) == AttrType::VT_TENSOR) return 0;
  }
  // A few distinct attribute sets per worker are the rule (one per node of
  // its ops); past the bound the oldest id is given to the new set.
  constexpr std::size_t kMaxHeld = 64;
  if (attr_ids.size() >= kMaxHeld) {
    const uint32_t id = attr_ids.front().second;
    attr_ids.erase(attr_ids.begin());
    attr_ids.emplace_back(values, id);
    return id;
  }
  attr_ids.emplace_back(values, next_attr_id);
  return next_attr_id++;
}

void WorkerLink::DrainLog() {
  if (!log || page == nullptr) return;
  const uint32_t now = page->log_records.load(std::memory_order_acquire);
  if (now == log_seen) return;  // nothing logged since: no system call on the fast path
  log_seen = now;
  log->Drain();
}

bool WorkerLink::Gone() const noexcept {
  pollfd fds[2] = {{fd, POLLRDHUP, 0}, {pidfd, POLLIN, 0}};
  const nfds_t n = pidfd >= 0 ? 2 : 1;
  if (fd < 0 || ::poll(fds, n, 0) <= 0) return fd < 0;
  return (fds[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0 || (n == 2 && (fds[1].revents & POLLIN) != 0);
}

void WorkerLink::QueueFree(uint64_t offset) {
  if (!alive) return;  // its worker is gone: the block goes with the mapping
  std::lock_guard<std::mutex> lock(frees_mu);
  frees.push_back(offset);
}

std::vector<uint64_t> WorkerLink::TakeFrees() {
  std::lock_guard<std::mutex> lock(frees_mu);
  std::vector<uint64_t> out;
  out.swap(frees);
  return out;
}

ProcessPlugin::ProcessPlugin(ProcessPluginConfig cfg, Loaded* loaded)
    : cfg_(std::move(cfg)), launcher_(WorkerLauncher::Shared(cfg_.python_dir)) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string why;
  link_ = StartWorker(loaded, &why);
  if (!link_) {
    loaded->report.name = cfg_.name;
    loaded->report.path = cfg_.path;
    loaded->report.status = plugin::PluginStatus::kError;
    loaded->report.error.kind = plugin::ErrorKind::kImport;
    loaded->report.error.message = cfg_.path + ": " + why;
  }
}

ProcessPlugin::~ProcessPlugin() {
  std::lock_guard<std::mutex> lock(mu_);
  EndWorker(/*kill_now=*/false);
}

pid_t ProcessPlugin::WorkerPid() {
  std::lock_guard<std::mutex> lock(mu_);
  return link_ && link_->alive ? link_->pid : -1;
}

std::shared_ptr<WorkerLink> ProcessPlugin::StartWorker(Loaded* loaded, std::string* why) {
  RaiseDescriptorLimit();
  auto link = std::make_shared<WorkerLink>();
  std::shared_ptr<SharedArena> engine;
  int log_worker_end = -1;  // the worker's end of its log socket, ours until init lends it
  try {
    engine = EngineArena();
    link->arena = SharedMapping::CreateFitting("ge-worker-arena", kWorkerArenaBytes);
    link->page_mapping = SharedMapping::Create("ge-worker-call", page::kPageBytes);
    link->page = new (link->page_mapping->base()) page::Page();
    link->started = launcher_->Start(&link->fd);
    link->pid = link->started.pid;
    // Its log socket: the worker's lines reach the engine's log (and LogSink).
    int logsv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, logsv) == 0) {
      log_worker_end = logsv[1];
      link->log = std::make_unique<WorkerLogReader>(
          logsv[0], cfg_.name, "plugin '" + cfg_.name + "' (" + cfg_.path + "), worker pid " + std::to_string(link->pid));
    }
  } catch (const std::exception& e) {
    if (log_worker_end >= 0) ::close(log_worker_end);
    *why = e.what();
    return nullptr;
  }
  link_ = link;  // so that Reap can end it
  Json init{{"type", "init"},
            {"plugin", cfg_.path},
            {"python_dir", cfg_.python_dir},
            {"log_level", cfg_.log_level},
            {"join_timeout_s", cfg_.join_timeout_s},
            {"prototype_libraries", cfg_.prototype_libraries},
            {"failed_libraries", Json::array()}};
  for (const auto& [lib, err] : cfg_.failed_libraries) init["failed_libraries"].push_back({lib, err});
  Json msg;
  std::string bad;
  std::vector<int> passed;
  wire::Received r = wire::Received::kClosed;
  std::vector<int> lent = {engine->mapping()->fd(), link->arena->fd(), link->page_mapping->fd()};
  if (log_worker_end >= 0) lent.push_back(log_worker_end);
  const bool init_sent = wire::Send(link->fd, init, lent);
  if (log_worker_end >= 0) ::close(log_worker_end);  // the worker holds its own copy now (or never will)
  if (init_sent) r = wire::Receive(link->fd, DeadlineAfter(LoadTimeout()), msg, &passed, &bad);
  link->DrainLog();  // its load lines, before the engine's own about the load
  // The worker's pidfd (made by the worker itself, so it is surely that
  // process): its end is seen at once even when a child of it keeps the socket open.
  for (int f : passed) {
    if (link->pidfd < 0) {
      link->pidfd = f;
    } else {
      ::close(f);
    }
  }
  if (r == wire::Received::kTimeout) {
    *why = "loading in its worker process (pid " + std::to_string(link->pid) + ") did not finish within " +
           Seconds(LoadTimeout()) + " s; the worker was killed";
    Reap(/*kill_now=*/true);
    return nullptr;
  }
  if (r != wire::Received::kOk) {
    const pid_t pid = link->pid;
    *why = "its worker process (pid " + std::to_string(pid) + ") " + Reap(false) + " while loading the plugin";
    return nullptr;
  }
  if (msg.contains("fatal")) {
    *why = "its worker process could not start: " + msg.at("fatal").get<std::string>();
    Reap(true);
    return nullptr;
  }
  try {
    std::string field;
    auto rec = plugin::FromJson(msg.at("report"), &field);
    if (!rec) throw std::invalid_argument("report: " + field);
    loaded->report = std::move(*rec);
    loaded->ops.clear();
    for (const auto& op : msg.at("ops")) {
      loaded->ops.push_back(ProcessOpInfo{static_cast<uint32_t>(loaded->ops.size()), op.at("op_type").get<std::string>(),
                                          wire::SchemaFromJson(op.at("schema")), op.at("caps").get<uint32_t>()});
    }
  } catch (const std::exception& e) {
    *why = std::string("its worker process answered a load it cannot have made: ") + e.what();
    Reap(true);
    return nullptr;
  }
  return link;
}

std::string ProcessPlugin::Reap(bool kill_now) {
  if (!link_ || !link_->alive) return "ended";
  link_->alive = false;
  WorkerLink& l = *link_;
  const StartedWorker w = l.started;
  // Whatever way it ends, its last lines (a crash's, too) are re-emitted once
  // it has ended, and its log reader stops (an RAII guard: Reap has many exits).
  struct StopLog {
    WorkerLink& link;
    ~StopLog() {
      if (link.log) link.log->Stop();
    }
  } stop_log{l};
  // The worker leads its own process group (RunWorker), so whatever a plugin
  // started there ends with it: the group is signalled once the worker has
  // ended but before it is reaped (a spawned worker is reaped by WaitExit
  // below), while the group id is surely still its own.
  auto end_group = [pid = w.pid] {
    if (pid > 0) ::kill(-pid, SIGKILL);
  };
  if (!kill_now && l.page != nullptr) {
    // Told to end: it exits at once (it may be gone already; then nobody hears it).
    l.page->request_kind = page::Kind::kBye;
    page::Ring(l.page->request_seq, l.page->worker_waiting, ++l.seq);
  }
  if (l.fd >= 0) {
    ::close(l.fd);
    l.fd = -1;
  }
  std::string lost;
  // After a SIGKILL the end is near; 30 s bounds a wait on an unkillable one.
  constexpr double kAfterKillS = 30.0;
  if (kill_now) {
    end_group();
    launcher_->Kill(w);
    launcher_->WaitExit(w, DeadlineAfter(kAfterKillS), &lost);
    return "was killed";
  }
  // It closed its end or we closed ours: it is ending; give it a moment, then make sure.
  const double grace_s = std::max(cfg_.join_timeout_s, 0.0) + 2.0;
  if (l.pidfd >= 0) {
    // A worker told bye ends at once (it runs no atexit handler, joins no
    // thread); one that has not ended within kByeS is stopped or starved
    // and is killed, rather than holding its engine's unload for seconds.
    constexpr int kByeMs = 500;
    pollfd p{l.pidfd, POLLIN, 0};
    int r = 0;
    do {
      r = ::poll(&p, 1, kByeMs);
    } while (r < 0 && errno == EINTR);
    if (r <= 0) {
      end_group();
      launcher_->Kill(w);
      launcher_->WaitExit(w, DeadlineAfter(kAfterKillS), &lost);
      return "stopped answering" + StoppedNote(w.pid) + " and was killed";
    }
    end_group();
  }
  if (std::optional<int> st = launcher_->WaitExit(w, DeadlineAfter(grace_s), &lost)) {
    if (l.pidfd < 0) end_group();
    return DescribeWait(*st);
  }
  if (!lost.empty()) return "ended (" + lost + ")";
  end_group();
  launcher_->Kill(w);
  launcher_->WaitExit(w, DeadlineAfter(kAfterKillS), &lost);
  return "stopped answering and was killed";
}

void ProcessPlugin::EndWorker(bool kill_now) {
  if (link_) Reap(kill_now);
}

Status ProcessPlugin::Failure(const char* method, const std::string& op_type, const std::string& what) const {
  ErrorInfo e;
  e.message = CallWhere(cfg_, method, op_type) + what;
  e.plugin = cfg_.name;
  e.file = cfg_.path;
  e.call_site = method;
  e.kind = "worker";
  return Status::Error(std::move(e));
}

std::string ProcessPlugin::WhatNext() const {
  // The restarts the next call would count (the window as Call prunes it):
  // at the limit, the next call disables the plugin instead of restarting.
  const auto now = Clock::now();
  const auto recent = std::count_if(restarts_.begin(), restarts_.end(), [&](const auto& t) {
    return now - t <= std::chrono::duration<double>(kRestartWindowS);
  });
  if (recent >= kMaxRestarts) {
    return "; its worker was restarted " + std::to_string(kMaxRestarts) + " times within " + Seconds(kRestartWindowS) +
           " s, so the next call disables the plugin";
  }
  return "; a new worker is started for the next call";
}

Status ProcessPlugin::Call(const char* method, const std::string& op_type,
                           const std::function<Json(const std::shared_ptr<WorkerLink>&)>& build, Json& reply,
                           std::shared_ptr<WorkerLink>* link) {
  Incoming in;
  Status st = Call(
      method, op_type, [&](const std::shared_ptr<WorkerLink>& l) { return Outgoing{false, build(l)}; }, in, link);
  if (st.ok()) reply = std::move(in.json);
  return st;
}

namespace {
// How often an engine sleeping on the page looks whether its worker is still there.
constexpr std::chrono::milliseconds kEngineSlice{5};
}  // namespace

Status ProcessPlugin::Call(const char* method, const std::string& op_type,
                           const std::function<Outgoing(const std::shared_ptr<WorkerLink>&)>& build, Incoming& reply,
                           std::shared_ptr<WorkerLink>* link) {
  std::lock_guard<std::mutex> lock(mu_);
  // Two attempts: a worker that ended between calls (killed from outside) is
  // found gone before it took the request up (the page's taken_seq);
  // nothing of the call ran, so a new worker takes it (a restart like any other).
  for (int attempt = 0;; ++attempt) {
    if (!disabled_.empty()) return Failure(method, op_type, disabled_);
    if (!link_ || !link_->alive) {
      const auto now = Clock::now();
      while (!restarts_.empty() && now - restarts_.front() > std::chrono::duration<double>(kRestartWindowS)) {
        restarts_.pop_front();
      }
      if (restarts_.size() >= static_cast<std::size_t>(kMaxRestarts)) {
        disabled_ = "the plugin is disabled: its worker process was restarted " + std::to_string(kMaxRestarts) +
                    " times within " + Seconds(kRestartWindowS) + " s and failed again (last: " + last_failure_ + ")";
        return Failure(method, op_type, disabled_);
      }
      restarts_.push_back(now);
      Loaded again;
      std::string why;
      if (!StartWorker(&again, &why)) {
        last_failure_ = why;
        return Failure(method, op_type, "cannot restart its worker process: " + why);
      }
      if (!again.report.ok()) {
        last_failure_ = "the plugin no longer loads: " + again.report.error.OneLine();
        Reap(true);
        return Failure(method, op_type, "a new worker process cannot load the plugin: " + again.report.error.OneLine());
      }
    }
    const std::shared_ptr<WorkerLink> cur = link_;
    page::Page& pg = *cur->page;
    Outgoing out = build(cur);
    std::vector<uint64_t> frees = cur->TakeFrees();
    // A request on the socket is encoded before the worker is rung: one too
    // large for a frame fails the call here (the worker never sees it).
    std::vector<uint8_t> frame;
    if (!out.in_page) {
      if (!frees.empty()) out.json["frees"] = frees;
      std::size_t bytes = 0;
      std::optional<std::vector<uint8_t>> encoded = wire::Encode(out.json, &bytes);
      if (!encoded) {
        for (uint64_t f : frees) cur->QueueFree(f);
        return Failure(method, op_type,
                       "the request to its worker process is " + std::to_string(bytes) +
                           " bytes, more than one message may hold (" + std::to_string(wire::kMaxFrameBytes) + ")");
      }
      frame = std::move(*encoded);
    }
    const uint32_t seq = ++cur->seq;
    // The engine's level in effect, applied by the worker before the call
    // (an embedding engine may have changed it since the worker started):
    // the level its loggers filter at, read without a lock (SetLogLevel sets
    // every logger's; CurrentLogLevel would take the log's mutex and read
    // the environment on every call).
    pg.log_level.store(static_cast<int32_t>(FromSpdlog(PluginLogger()->level())), std::memory_order_relaxed);
    bool sent = true;
    if (out.in_page) {
      const std::size_t n = std::min<std::size_t>(frees.size(), page::kMaxFrees);
      std::copy_n(frees.begin(), n, pg.request.frees);
      pg.request.n_frees = static_cast<uint32_t>(n);
      for (std::size_t i = n; i < frees.size(); ++i) cur->QueueFree(frees[i]);  // the next request takes the rest
      pg.request_kind = page::Kind::kExecute;
      page::Ring(pg.request_seq, pg.worker_waiting, seq);
    } else {
      // Rung before the frame is written: the worker reads it as it comes (a
      // frame larger than the socket's buffer would otherwise block both).
      pg.request_kind = page::Kind::kSocket;
      page::Ring(pg.request_seq, pg.worker_waiting, seq);
      sent = wire::SendFrame(cur->fd, frame);
    }
    const auto deadline = DeadlineAfter(cfg_.call_timeout_s);
    const auto rung = Clock::now();
    const page::Wait w = sent ? page::WaitFor(pg.reply_seq, pg.engine_waiting, seq, cur->spin.Next(), kEngineSlice,
                                              deadline, [&] { return cur->Gone(); })
                              : page::Wait::kPeerGone;
    cur->spin.Observe(Clock::now() - rung);
    if (w == page::Wait::kRung && pg.reply_kind == page::Kind::kExecute) {
      const page::ExecuteReply& r = pg.reply;
      reply.in_page = true;
      reply.page_reply.rc = r.rc;
      reply.page_reply.n_outputs = r.n_outputs;
      std::copy_n(r.outputs, std::min(r.n_outputs, page::kMaxTensors), reply.page_reply.outputs);
      cur->DrainLog();
      *link = cur;
      return Status::Ok();
    }
    wire::Received r = wire::Received::kClosed;
    std::string bad;
    if (w == page::Wait::kRung) {
      r = wire::Receive(cur->fd, deadline, reply.json, nullptr, &bad, cur->pidfd);
      if (r == wire::Received::kOk) {
        cur->DrainLog();
        *link = cur;
        return Status::Ok();
      }
    } else if (w == page::Wait::kTimeout) {
      r = wire::Received::kTimeout;
    }
    // A failed call from here on (the pid only for its message).
    const std::string pid = std::to_string(cur->pid);
    if (w == page::Wait::kPeerGone && pg.taken_seq.load(std::memory_order_acquire) != seq && attempt == 0) {
      last_failure_ = "its worker process (pid " + pid + ") " + Reap(false) + " between calls";
      continue;
    }
    if (r == wire::Received::kTimeout) {
      // Why it did not answer, as far as can be told before the kill.
      std::string why = StoppedNote(cur->pid);
      if (why.empty() && pg.taken_seq.load(std::memory_order_acquire) != seq) {
        why = " (it never took the call up: starved of CPU or blocked outside any call)";
      }
      Reap(/*kill_now=*/true);
      last_failure_ = "the call did not finish within " + Seconds(cfg_.call_timeout_s) +
                      " s (the call timeout: ge-run --call-timeout, HostOptions::call_timeout_s); its worker process "
                      "(pid " + pid + ")" + why + " was killed";
    } else if (r == wire::Received::kError && !bad.empty()) {
      Reap(true);
      last_failure_ = "its worker process (pid " + pid + ") sent " + bad + " and was killed";
    } else {
      last_failure_ = "its worker process (pid " + pid + ") " + Reap(false) + " during the call";
    }
    return Failure(method, op_type, last_failure_ + WhatNext());
  }
}

// ---- the proxy op ---------------------------------------------------------------------------

ProcessOpProxy::ProcessOpProxy(std::shared_ptr<ProcessPlugin> plugin, ProcessOpInfo info,
                               std::shared_ptr<std::atomic<uint64_t>> calls)
    : plugin_(std::move(plugin)), info_(std::move(info)), calls_(std::move(calls)) {}

namespace {

graphStatus Fail(gert::ExtendedKernelContext& ctx, Status st) {
  ctx.SetError(std::move(st));
  return GRAPH_FAILED;
}

// The worker's answer to a call: its graphStatus and error slot.
graphStatus Answer(gert::ExtendedKernelContext& ctx, const Json& reply) {
  const graphStatus rc = reply.at("rc").get<graphStatus>();
  Status st = wire::StatusFromJson(reply.at("status"));
  if (!st.ok()) ctx.SetError(std::move(st));
  return rc;
}

}  // namespace

namespace {

// Output k of a call: the block of the worker's arena at [off, off + size),
// adopted without a copy; the engine frees it (through the worker) when the
// last tensor on it goes.
graphStatus AdoptOutput(gert::EagerOpExecutionContext& ctx, const ProcessPluginConfig& cfg, std::size_t k,
                        const TensorDesc& desc, uint64_t off, std::size_t size, const std::shared_ptr<WorkerLink>& link) {
  const SharedMapping& wm = *link->arena;
  if (off > wm.size() || size > wm.size() - off) {
    return Fail(ctx, Status::Error("plugin '" + cfg.name + "': its worker returned output " + std::to_string(k) +
                                   " outside its arena"));
  }
  void* addr = wm.base() + off;
  std::shared_ptr<void> owner(addr, [link, off](void*) { link->QueueFree(off); });
  ctx.SetOutputTensor(k, Tensor::Adopt(desc, addr, size, std::move(owner)));
  return GRAPH_SUCCESS;
}

}  // namespace

graphStatus ProcessOpProxy::Execute(gert::EagerOpExecutionContext* ctx) {
  const ProcessPluginConfig& cfg = plugin_->config();
  if (!HasCapability(info_.capabilities, CustomOpCapability::kEagerExecute)) {
    return Fail(*ctx, Status::Error("op_type '" + info_.op_type + "' of plugin '" + cfg.name + "' has no execute"));
  }
  try {
    // Inputs outside the shared arenas (borrowed caller memory, heap tensors
    // of a full arena) are copied once into the engine arena for the call.
    struct Staged {
      Tensor* tensor;
      std::shared_ptr<void> block;
    };
    std::vector<Staged> staged;
    const std::shared_ptr<SharedArena> engine = EngineArena();
    const SharedMapping& em = *engine->mapping();
    const std::size_t n_inputs = ctx->GetInputNum();
    // Where input i's bytes are for the worker: -1 none, or (arena, offset).
    auto locate = [&](const std::shared_ptr<WorkerLink>& link, std::size_t i, Tensor* t) -> std::pair<int, uint64_t> {
      void* a = t->GetAddr();
      if (a == nullptr) return {-1, 0};
      if (em.Contains(a, t->GetSize())) return {0, em.OffsetOf(a)};
      if (link->arena->Contains(a, t->GetSize())) return {1, link->arena->OffsetOf(a)};
      std::shared_ptr<void> block = engine->Allocate(t->GetSize());
      if (!block) {
        throw std::runtime_error("the engine's shared arena has no room for input " + std::to_string(i) + " (" +
                                 std::to_string(t->GetSize()) + " bytes)");
      }
      std::memcpy(block.get(), a, t->GetSize());
      const uint64_t off = em.OffsetOf(block.get());
      staged.push_back({t, std::move(block)});
      return {0, off};
    };
    const std::vector<AttrValue>& attr_values = ctx->GetAttrs()->Values();
    const std::vector<std::size_t>& in_counts = ctx->InputLayout().Counts();
    const std::vector<std::size_t>& out_counts = ctx->OutputLayout().Counts();
    const char* node = ctx->GetNodeName();
    const std::size_t node_len = std::strlen(node);
    auto build = [&](const std::shared_ptr<WorkerLink>& link) -> Outgoing {
      staged.clear();
      const uint32_t attrs_id = link->AttrsId(attr_values);
      // In the page when it fits and the worker holds the attributes already.
      if (attrs_id != 0 && n_inputs <= page::kMaxTensors && in_counts.size() <= page::kMaxCounts &&
          out_counts.size() <= page::kMaxCounts && node_len <= page::kMaxNode) {
        page::ExecuteRequest& r = link->page->request;
        r.op_index = info_.index;
        r.attrs_id = attrs_id;
        r.n_inputs = static_cast<uint32_t>(n_inputs);
        r.n_in_counts = static_cast<uint32_t>(in_counts.size());
        r.n_out_counts = static_cast<uint32_t>(out_counts.size());
        std::copy(in_counts.begin(), in_counts.end(), r.in_counts);
        std::copy(out_counts.begin(), out_counts.end(), r.out_counts);
        r.node_len = static_cast<uint32_t>(node_len);
        std::memcpy(r.node, node, node_len);
        for (std::size_t i = 0; i < n_inputs; ++i) {
          Tensor* t = ctx->GetInputTensor(i);
          page::TensorRecord& tr = r.inputs[i];
          page::DescToRecord(t->Desc(), &tr);
          tr.read_only = t->IsReadOnly() ? 1 : 0;
          tr.size = t->GetSize();
          const auto [arena, off] = locate(link, i, t);
          tr.arena = arena;
          tr.offset = off;
        }
        return Outgoing{true, {}};
      }
      Json inputs = Json::array();
      for (std::size_t i = 0; i < n_inputs; ++i) {
        Tensor* t = ctx->GetInputTensor(i);
        Json j{{"d", wire::DescToJson(t->Desc())}, {"ro", t->IsReadOnly()}, {"size", t->GetSize()}};
        const auto [arena, off] = locate(link, i, t);
        j["a"] = arena;
        if (arena >= 0) j["off"] = off;
        inputs.push_back(std::move(j));
      }
      Json req{{"type", "execute"},
               {"op_type", info_.op_type},
               {"node", node},
               {"in", in_counts},
               {"out", out_counts},
               {"attrs", wire::AttrsToJson(*ctx->GetAttrs())},
               {"inputs", std::move(inputs)}};
      // The worker keeps these attributes under an id: the node's next calls can go in the page.
      if (attrs_id == 0) {
        if (const uint32_t id = link->RememberAttrs(attr_values)) req["attrs_id"] = id;
      }
      return Outgoing{false, std::move(req)};
    };
    Incoming reply;
    std::shared_ptr<WorkerLink> link;
    if (Status st = plugin_->Call("execute", info_.op_type, build, reply, &link); !st.ok()) return Fail(*ctx, std::move(st));
    calls_->fetch_add(1, std::memory_order_relaxed);
    if (reply.in_page) {
      if (std::string bad = page::ReplyProblem(reply.page_reply, static_cast<uint32_t>(n_inputs)); !bad.empty()) {
        return Fail(*ctx, Status::Error(CallWhere(cfg, "execute", info_.op_type) + "its worker process (pid " +
                                        std::to_string(link->pid) + ") answered " + bad));
      }
    } else if (const graphStatus rc = Answer(*ctx, reply.json); rc != GRAPH_SUCCESS) {
      return rc;
    }
    for (const Staged& s : staged) {
      if (!s.tensor->IsReadOnly()) std::memcpy(s.tensor->GetAddr(), s.block.get(), s.tensor->GetSize());
    }
    if (reply.in_page) {
      const page::ExecuteReply& r = reply.page_reply;
      for (std::size_t k = 0; k < r.n_outputs; ++k) {
        const page::OutputRecord& o = r.outputs[k];
        if (o.kind == 1) {
          if (ctx->MakeOutputRefInput(k, o.ref) == nullptr) return GRAPH_FAILED;
        } else if (o.kind == 2) {
          const graphStatus rc = AdoptOutput(*ctx, cfg, k, page::DescFromRecord(o.tensor), o.tensor.offset,
                                             static_cast<std::size_t>(o.tensor.size), link);
          if (rc != GRAPH_SUCCESS) return rc;
        }
      }
      return GRAPH_SUCCESS;
    }
    const Json& outs = reply.json.at("outputs");
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const Json& o = outs[k];
      if (o.is_null()) continue;
      if (o.contains("ref")) {
        if (ctx->MakeOutputRefInput(k, o.at("ref").get<std::size_t>()) == nullptr) return GRAPH_FAILED;
        continue;
      }
      const TensorDesc desc = wire::DescFromJson(o.at("d"));
      if (o.contains("off")) {
        const graphStatus rc =
            AdoptOutput(*ctx, cfg, k, desc, o.at("off").get<uint64_t>(), o.at("size").get<std::size_t>(), link);
        if (rc != GRAPH_SUCCESS) return rc;
      } else {
        const auto& bytes = o.at("b").get_binary();
        Tensor t = Tensor::Allocate(desc);
        std::memcpy(t.GetAddr(), bytes.data(), std::min(bytes.size(), t.GetSize()));
        ctx->SetOutputTensor(k, std::move(t));
      }
    }
    return GRAPH_SUCCESS;
  } catch (const std::exception& e) {
    return Fail(*ctx, Status::Error(CallWhere(cfg, "execute", info_.op_type) + e.what()));
  }
}

graphStatus ProcessOpProxy::InferMeta(InferMetaContext* ctx) {
  const ProcessPluginConfig& cfg = plugin_->config();
  if (!HasCapability(info_.capabilities, CustomOpCapability::kInferMeta)) {
    return Fail(*ctx, Status::Error("op_type '" + info_.op_type + "' of plugin '" + cfg.name + "' has no infer_meta"));
  }
  try {
    auto build = [&](const std::shared_ptr<WorkerLink>&) {
      Json inputs = Json::array();
      for (std::size_t i = 0; i < ctx->GetInputNum(); ++i) inputs.push_back(wire::DescToJson(*ctx->GetInputDesc(i)));
      return Json{{"type", "infer_meta"},
                  {"op_type", info_.op_type},
                  {"node", ctx->GetNodeName()},
                  {"in", ctx->InputLayout().Counts()},
                  {"attrs", wire::AttrsToJson(*ctx->GetAttrs())},
                  {"inputs", std::move(inputs)}};
    };
    Json reply;
    std::shared_ptr<WorkerLink> link;
    if (Status st = plugin_->Call("infer_meta", info_.op_type, build, reply, &link); !st.ok()) return Fail(*ctx, std::move(st));
    calls_->fetch_add(1, std::memory_order_relaxed);
    const graphStatus rc = Answer(*ctx, reply);
    if (rc != GRAPH_SUCCESS || !reply.at("set").get<bool>()) return rc;
    std::vector<TensorDesc> outs;
    for (const auto& d : reply.at("outputs")) outs.push_back(wire::DescFromJson(d));
    ctx->SetOutputs(std::move(outs), InstanceLayout(reply.at("layout").get<std::vector<std::size_t>>()));
    return GRAPH_SUCCESS;
  } catch (const std::exception& e) {
    return Fail(*ctx, Status::Error(CallWhere(cfg, "infer_meta", info_.op_type) + e.what()));
  }
}

namespace {

Json DescsOf(std::size_t n, const std::function<const Tensor*(std::size_t)>& at) {
  Json out = Json::array();
  for (std::size_t i = 0; i < n; ++i) out.push_back(wire::DescToJson(at(i)->Desc()));
  return out;
}

}  // namespace

graphStatus ProcessOpProxy::Compile(gert::OpCompileContext* ctx) {
  const ProcessPluginConfig& cfg = plugin_->config();
  if (!HasCapability(info_.capabilities, CustomOpCapability::kCompilable)) {
    return Fail(*ctx, Status::Error("op_type '" + info_.op_type + "' of plugin '" + cfg.name + "' has no compile"));
  }
  try {
    // The platform crosses as where it was read from (an ini file, or this
    // machine); it is resolved here before the call, so a platform that fails
    // to load reaches the worker as its error, raised there only if the op
    // asks for the platform (as in-process).
    Json platform;
    try {
      platform = Json{{"source", ctx->Platform()->Source()}};
    } catch (const std::exception& e) {
      platform = Json{{"error", e.what()}};
    }
    auto build = [&](const std::shared_ptr<WorkerLink>&) {
      return Json{{"type", "compile"},
                  {"op_type", info_.op_type},
                  {"node", ctx->GetNodeName()},
                  {"inputs", DescsOf(ctx->GetInputNum(), [&](std::size_t i) { return ctx->GetInputTensor(i); })},
                  {"outputs", DescsOf(ctx->GetOutputNum(), [&](std::size_t i) { return ctx->GetOutputTensor(i); })},
                  {"in", ctx->InputLayout().Counts()},
                  {"out", ctx->OutputLayout().Counts()},
                  {"attrs", wire::AttrsToJson(*ctx->GetAttrs())},
                  {"options", ctx->Options()},
                  {"platform", platform}};
    };
    Json reply;
    std::shared_ptr<WorkerLink> link;
    if (Status st = plugin_->Call("compile", info_.op_type, build, reply, &link); !st.ok()) return Fail(*ctx, std::move(st));
    calls_->fetch_add(1, std::memory_order_relaxed);
    return Answer(*ctx, reply);
  } catch (const std::exception& e) {
    return Fail(*ctx, Status::Error(CallWhere(cfg, "compile", info_.op_type) + e.what()));
  }
}

graphStatus ProcessOpProxy::DeclareLaunchArgs(gert::AnnotatedArgsContext& ctx) {
  const ProcessPluginConfig& cfg = plugin_->config();
  if (!HasCapability(info_.capabilities, CustomOpCapability::kAnnotatedArgs)) {
    return Fail(ctx, Status::Error("op_type '" + info_.op_type + "' of plugin '" + cfg.name + "' has no declare_launch_args"));
  }
  try {
    auto build = [&](const std::shared_ptr<WorkerLink>&) {
      return Json{{"type", "declare_launch_args"},
                  {"op_type", info_.op_type},
                  {"node", ctx.GetNodeName()},
                  {"inputs", DescsOf(ctx.GetInputNum(), [&](std::size_t i) { return ctx.GetInputTensor(i); })},
                  {"outputs", DescsOf(ctx.GetOutputNum(), [&](std::size_t i) { return ctx.GetOutputTensor(i); })},
                  {"in", ctx.InputLayout().Counts()},
                  {"out", ctx.OutputLayout().Counts()},
                  {"attrs", wire::AttrsToJson(*ctx.GetAttrs())},
                  {"stream", ctx.GetStreamId()}};
    };
    Json reply;
    std::shared_ptr<WorkerLink> link;
    if (Status st = plugin_->Call("declare_launch_args", info_.op_type, build, reply, &link); !st.ok()) {
      return Fail(ctx, std::move(st));
    }
    calls_->fetch_add(1, std::memory_order_relaxed);
    const graphStatus rc = Answer(ctx, reply);
    if (rc != GRAPH_SUCCESS) return rc;
    // The worker's task plan, declared again here: its workspaces (sizes; the
    // engine allocates them) and its launches, checked by the same AddLaunch.
    for (const auto& size : reply.at("workspaces")) {
      if (ctx.MallocWorkSpace(size.get<std::size_t>()).addr == nullptr) return GRAPH_FAILED;
    }
    for (const auto& l : reply.at("launches")) {
      KernelLaunch launch;
      launch.kernel_name = l.at("name").get<std::string>();
      const auto& bin = l.at("bin").get_binary();
      launch.kernel_bin = std::make_shared<const std::string>(bin.begin(), bin.end());
      launch.block_dim = l.at("block_dim").get<uint32_t>();
      launch.stream_id = l.at("stream").get<int64_t>();
      for (const auto& a : l.at("args")) {
        launch.args.push_back(KernelArgSlot{static_cast<KernelArgSlot::Kind>(a.at(0).get<int>()), a.at(1).get<uint64_t>()});
      }
      ctx.AddLaunch(std::move(launch));
    }
    return GRAPH_SUCCESS;
  } catch (const std::exception& e) {
    return Fail(ctx, Status::Error(CallWhere(cfg, "declare_launch_args", info_.op_type) + e.what()));
  }
}

}  // namespace ge::host
