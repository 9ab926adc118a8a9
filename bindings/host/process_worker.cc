// process_worker.cc: the worker side of isolation "process" (RunWorker) and the one place workers are spawned.
#include "process_worker.h"

#include <boost/filesystem.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <spawn.h>
#include <stdexcept>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ge/host/plugin_host.h"
#include "ge/op/launch.h"
#include "ge/op/op_registry.h"
#include "ge/platform/platform_info.h"
#include "ge/plugin/record.h"
#include "ge/spawn_attr.h"
#include "call_page.h"
#include "shared_arena.h"
#include "worker_access.h"
#include "worker_log.h"
#include "worker_wire.h"

extern char** environ;

#ifndef GE_LIB_TO_LIBEXEC
#define GE_LIB_TO_LIBEXEC "../libexec/ge-plugin"
#endif

namespace fs = boost::filesystem;

namespace ge::host {

namespace {

using wire::Json;

// Calls one op method; a C++ exception escaping it becomes the context's
// error (as the engine reports one in-process) and GRAPH_FAILED.
template <typename Context, typename Call>
graphStatus Guarded(Context& ctx, Call&& call) {
  try {
    return call();
  } catch (const std::exception& e) {
    ctx.SetError(Status::Error(std::string("C++ exception: ") + e.what()));
    return GRAPH_FAILED;
  }
}

// The worker's state between requests: the plugin's ops, the two arenas, and
// the output blocks the engine still holds (by offset in the worker arena).
struct Worker {
  int fd = -1;
  std::shared_ptr<SharedMapping> engine_arena;
  std::shared_ptr<SharedArena> own_arena;
  OpRegistry registry;
  std::unique_ptr<PluginHost> host;
  std::map<std::string, std::shared_ptr<BaseCustomOp>> ops;
  // The ops in the order of the "loaded" answer (ExecuteRequest::op_index),
  // with their execute interface (null: none) and schema looked up once.
  struct Indexed {
    EagerExecuteOp* execute;
    const OpSchema* schema;
  };
  std::vector<Indexed> by_index;
  std::map<uint64_t, std::shared_ptr<void>> held;  // outputs handed to the engine
  std::shared_ptr<SharedMapping> page_mapping;
  page::Page* page = nullptr;
  std::map<uint32_t, RuntimeAttrs> attrs_by_id;  // attributes the engine named by id (call_page.h)

  BaseCustomOp* Op(const std::string& op_type) {
    auto it = ops.find(op_type);
    if (it != ops.end()) return it->second.get();
    std::shared_ptr<BaseCustomOp> op = registry.Create(op_type);
    if (!op) throw std::invalid_argument("the worker has no op_type '" + op_type + "'");
    return ops.emplace(op_type, std::move(op)).first->second.get();
  }

  static const OpSchema& SchemaOf(BaseCustomOp* op) {
    return dynamic_cast<const CapabilityReportingOp&>(*op).GetSchema();
  }

  Json Load(const Json& init) {
    HostOptions o;
    o.use_env_opp_path = false;
    o.python_dir = init.at("python_dir").get<std::string>();
    o.default_isolation = "main";
    o.allow_insecure = true;  // the engine decided already
    o.log_level = init.at("log_level").get<std::string>();
    o.thread_join_timeout_s = init.at("join_timeout_s").get<double>();
    o.prototype_libraries = init.at("prototype_libraries").get<std::vector<std::string>>();
    for (const auto& f : init.at("failed_libraries")) {
      o.failed_libraries.emplace_back(f.at(0).get<std::string>(), f.at(1).get<std::string>());
    }
    host = std::make_unique<PluginHost>(o, registry);
    WorkerAccess::MarkWorker(*host);
    const PluginReport report = host->LoadPlugin(init.at("plugin").get<std::string>());
    Json ops_json = Json::array();
    for (const auto& rec : report.ops) {
      if (!report.ok()) break;
      auto op = registry.Create(rec.op_type);
      const auto* reporting = dynamic_cast<const CapabilityReportingOp*>(op.get());
      if (reporting == nullptr) continue;
      ops_json.push_back({{"op_type", rec.op_type},
                          {"schema", wire::SchemaToJson(reporting->GetSchema())},
                          {"caps", reporting->GetCapabilities()}});
      by_index.push_back({CustomOpCast<EagerExecuteOp>(op.get()), &reporting->GetSchema()});
      ops.emplace(rec.op_type, std::move(op));
    }
    return Json{{"type", "loaded"}, {"report", plugin::ToJson(report)}, {"ops", ops_json}, {"pid", ::getpid()}};
  }

  // A tensor of a request: a block of the engine arena (0) or of ours (1), by offset; -1: no memory.
  Tensor ArenaTensor(const TensorDesc& desc, int arena, uint64_t off, uint64_t size, bool read_only) {
    if (arena < 0) return Tensor::Borrow(desc, nullptr, 0, true);
    if (arena > 1) throw std::out_of_range("input in arena " + std::to_string(arena) + " (supported: -1, 0, 1)");
    const SharedMapping& m = arena == 0 ? *engine_arena : *own_arena->mapping();
    if (off > m.size() || size > m.size() - off) {
      throw std::out_of_range("input block [" + std::to_string(off) + ", +" + std::to_string(size) +
                              ") outside the shared arena of " + std::to_string(m.size()) + " bytes");
    }
    return Tensor::Borrow(desc, m.base() + off, static_cast<std::size_t>(size), read_only);
  }

  Tensor InputTensor(const Json& j) {
    const int arena = j.at("a").get<int>();
    return ArenaTensor(wire::DescFromJson(j.at("d")), arena, arena < 0 ? 0 : j.at("off").get<uint64_t>(),
                       arena < 0 ? 0 : j.at("size").get<uint64_t>(), j.at("ro").get<bool>());
  }

  // One execute as the engine asked it, and what came of it.
  struct Ran {
    std::vector<Tensor> inputs;
    graphStatus rc = GRAPH_FAILED;
    Status status;
    std::vector<std::optional<Tensor>> outputs;
  };

  void Run(EagerExecuteOp* ex, const OpSchema& schema, Ran& ran, InstanceLayout in, const RuntimeAttrs& attrs,
           InstanceLayout out, std::string node) {
    if (ex == nullptr) throw std::invalid_argument("op_type has no execute");
    std::vector<Tensor*> ptrs;
    ptrs.reserve(ran.inputs.size());
    for (auto& t : ran.inputs) ptrs.push_back(&t);
    EagerOpExecutionContext ctx(schema, ptrs, std::move(in), attrs, std::move(out));
    ctx.SetNodeName(std::move(node));
    ran.rc = Guarded(ctx, [&] { return ex->Execute(&ctx); });
    ran.status = ctx.TakeError();
    ran.outputs = ctx.TakeOutputs();
  }

  // The input output `o` aliases, if any.
  static std::optional<std::size_t> RefOf(const Ran& ran, const Tensor& o) {
    std::optional<std::size_t> ref;
    for (std::size_t i = 0; i < ran.inputs.size() && o.GetAddr() != nullptr; ++i) {
      if (ran.inputs[i].GetAddr() == o.GetAddr()) ref = i;
    }
    return ref;
  }

  bool InOwnArena(const Tensor& o) const {
    return o.GetAddr() != nullptr && o.IsOwned() && own_arena->mapping()->Contains(o.GetAddr(), o.GetSize());
  }

  // The answer as a socket message.
  Json ReplyJson(Ran& ran) {
    Json reply{{"rc", ran.rc}, {"status", wire::StatusToJson(ran.status)}};
    if (ran.rc != GRAPH_SUCCESS) return reply;  // nothing half-written reaches the engine
    Json outs = Json::array();
    const SharedMapping& own = *own_arena->mapping();
    for (auto& o : ran.outputs) {
      if (!o) {
        outs.push_back(nullptr);
        continue;
      }
      Json j{{"d", wire::DescToJson(o->Desc())}};
      if (const auto ref = RefOf(ran, *o)) {
        j["ref"] = *ref;
      } else if (InOwnArena(*o)) {
        const uint64_t off = own.OffsetOf(o->GetAddr());
        held[off] = o->Owner();
        j["off"] = off;
        j["size"] = o->GetSize();
      } else {
        // Heap memory (the arena was full): the bytes travel in the reply.
        const auto* b = static_cast<const uint8_t*>(o->GetAddr());
        j["b"] = Json::binary(std::vector<uint8_t>(b, b == nullptr ? b : b + o->GetSize()));
      }
      outs.push_back(std::move(j));
    }
    reply["outputs"] = std::move(outs);
    return reply;
  }

  // The answer in the page; false (nothing written) when the page cannot
  // hold it: a failure, an error slot set, an output on the heap.
  bool ReplyPage(Ran& ran) {
    if (ran.rc != GRAPH_SUCCESS || !ran.status.ok() || ran.outputs.size() > page::kMaxTensors) return false;
    for (const auto& o : ran.outputs) {
      if (o && !RefOf(ran, *o) && !InOwnArena(*o)) return false;
    }
    page::ExecuteReply& r = page->reply;
    r.rc = GRAPH_SUCCESS;
    r.n_outputs = static_cast<uint32_t>(ran.outputs.size());
    const SharedMapping& own = *own_arena->mapping();
    for (std::size_t k = 0; k < ran.outputs.size(); ++k) {
      page::OutputRecord& rec = r.outputs[k];
      const auto& o = ran.outputs[k];
      rec.kind = 0;
      if (!o) continue;
      if (const auto ref = RefOf(ran, *o)) {
        rec.kind = 1;
        rec.ref = static_cast<uint32_t>(*ref);
        continue;
      }
      rec.kind = 2;
      page::DescToRecord(o->Desc(), &rec.tensor);
      rec.tensor.arena = 1;
      rec.tensor.offset = own.OffsetOf(o->GetAddr());
      rec.tensor.size = o->GetSize();
      held[rec.tensor.offset] = o->Owner();
    }
    return true;
  }

  Json Execute(const Json& req) {
    BaseCustomOp* op = Op(req.at("op_type").get<std::string>());
    RuntimeAttrs attrs = wire::AttrsFromJson(req.at("attrs"));
    // Kept for the node's next calls, which name them by id (call_page.h).
    if (req.contains("attrs_id")) attrs_by_id[req.at("attrs_id").get<uint32_t>()] = attrs;
    Ran ran;
    const Json& in = req.at("inputs");
    ran.inputs.reserve(in.size());
    for (const auto& t : in) ran.inputs.push_back(InputTensor(t));
    Run(CustomOpCast<EagerExecuteOp>(op), SchemaOf(op), ran, InstanceLayout(req.at("in").get<std::vector<std::size_t>>()), attrs,
        InstanceLayout(req.at("out").get<std::vector<std::size_t>>()), req.at("node").get<std::string>());
    return ReplyJson(ran);
  }

  // The ExecuteRequest in the page. True when the answer went into the page;
  // otherwise it is *slow, for the socket.
  bool ExecuteInPage(Json* slow) {
    const page::ExecuteRequest& r = page->request;
    if (r.n_frees > page::kMaxFrees || r.n_inputs > page::kMaxTensors || r.n_in_counts > page::kMaxCounts ||
        r.n_out_counts > page::kMaxCounts || r.node_len > page::kMaxNode) {
      throw std::out_of_range("an execute record over the page's limits");
    }
    for (uint32_t i = 0; i < r.n_frees; ++i) held.erase(r.frees[i]);
    if (r.op_index >= by_index.size()) {
      throw std::out_of_range("op index " + std::to_string(r.op_index) + " of " + std::to_string(by_index.size()));
    }
    const auto attrs = attrs_by_id.find(r.attrs_id);
    if (attrs == attrs_by_id.end()) throw std::out_of_range("attributes id " + std::to_string(r.attrs_id) + " unknown");
    Ran ran;
    ran.inputs.reserve(r.n_inputs);
    for (uint32_t i = 0; i < r.n_inputs; ++i) {
      const page::TensorRecord& t = r.inputs[i];
      ran.inputs.push_back(ArenaTensor(page::DescFromRecord(t), t.arena, t.offset, t.size, t.read_only != 0));
    }
    const Indexed& op = by_index[r.op_index];
    Run(op.execute, *op.schema, ran, InstanceLayout(std::vector<std::size_t>(r.in_counts, r.in_counts + r.n_in_counts)),
        attrs->second, InstanceLayout(std::vector<std::size_t>(r.out_counts, r.out_counts + r.n_out_counts)),
        std::string(r.node, r.node_len));
    if (ReplyPage(ran)) return true;
    *slow = ReplyJson(ran);
    return false;
  }

  Json InferMeta(const Json& req) {
    BaseCustomOp* op = Op(req.at("op_type").get<std::string>());
    auto* im = CustomOpCast<InferMetaOp>(op);
    if (im == nullptr) throw std::invalid_argument("op_type has no infer_meta");
    const RuntimeAttrs attrs = wire::AttrsFromJson(req.at("attrs"));
    InferMetaContext ctx(SchemaOf(op), Descs(req.at("inputs")), InstanceLayout(req.at("in").get<std::vector<std::size_t>>()), attrs);
    ctx.SetNodeName(req.at("node").get<std::string>());
    const graphStatus rc = Guarded(ctx, [&] { return im->InferMeta(&ctx); });
    Json reply{{"rc", rc}, {"status", wire::StatusToJson(ctx.TakeError())}, {"set", ctx.HasOutputs()}};
    if (rc == GRAPH_SUCCESS && ctx.HasOutputs()) {
      Json outs = Json::array();
      for (const auto& d : ctx.Outputs()) outs.push_back(wire::DescToJson(d));
      reply["outputs"] = std::move(outs);
      reply["layout"] = ctx.OutputLayout().Counts();
    }
    return reply;
  }

  // The input descriptions of an infer_meta request, or the metadata-only
  // tensors of a compile or declare_launch_args request.
  static std::vector<TensorDesc> Descs(const Json& j) {
    std::vector<TensorDesc> out;
    for (const auto& d : j) out.push_back(wire::DescFromJson(d));
    return out;
  }

  Json Compile(const Json& req) {
    BaseCustomOp* op = Op(req.at("op_type").get<std::string>());
    auto* comp = CustomOpCast<CompilableOp>(op);
    if (comp == nullptr) throw std::invalid_argument("op_type has no compile");
    const RuntimeAttrs attrs = wire::AttrsFromJson(req.at("attrs"));
    const auto options = req.at("options").get<std::map<std::string, std::string>>();
    const Json platform = req.at("platform");
    OpCompileContext::PlatformLoader loader = [platform]() -> std::shared_ptr<const PlatformInfos> {
      if (platform.contains("error")) throw PlatformError(platform.at("error").get<std::string>());
      const std::string source = platform.at("source").get<std::string>();
      PlatformInfos host = PlatformInfos::Host();
      if (source == host.Source()) return std::make_shared<const PlatformInfos>(std::move(host));
      return std::make_shared<const PlatformInfos>(PlatformInfos::LoadIni(source));
    };
    OpCompileContext ctx(SchemaOf(op), Descs(req.at("inputs")), InstanceLayout(req.at("in").get<std::vector<std::size_t>>()),
                         Descs(req.at("outputs")), InstanceLayout(req.at("out").get<std::vector<std::size_t>>()), attrs,
                         options, loader);
    ctx.SetNodeName(req.at("node").get<std::string>());
    const graphStatus rc = Guarded(ctx, [&] { return comp->Compile(&ctx); });
    return Json{{"rc", rc}, {"status", wire::StatusToJson(ctx.TakeError())}};
  }

  Json DeclareLaunchArgs(const Json& req) {
    BaseCustomOp* op = Op(req.at("op_type").get<std::string>());
    auto* ann = CustomOpCast<AnnotatedArgsOp>(op);
    if (ann == nullptr) throw std::invalid_argument("op_type has no declare_launch_args");
    const RuntimeAttrs attrs = wire::AttrsFromJson(req.at("attrs"));
    AnnotatedArgsContext ctx(SchemaOf(op), Descs(req.at("inputs")), InstanceLayout(req.at("in").get<std::vector<std::size_t>>()),
                             Descs(req.at("outputs")), InstanceLayout(req.at("out").get<std::vector<std::size_t>>()), attrs,
                             req.at("stream").get<uint32_t>());
    ctx.SetNodeName(req.at("node").get<std::string>());
    const graphStatus rc = Guarded(ctx, [&] { return ann->DeclareLaunchArgs(ctx); });
    Json reply{{"rc", rc}, {"status", wire::StatusToJson(ctx.TakeError())}};
    if (rc != GRAPH_SUCCESS) return reply;
    const TaskPlan& plan = ctx.Plan();
    reply["workspaces"] = plan.workspace_sizes;
    Json launches = Json::array();
    for (const KernelLaunch& l : plan.launches) {
      Json args = Json::array();
      for (const KernelArgSlot& a : l.args) args.push_back({static_cast<int>(a.kind), a.value});
      launches.push_back({{"name", l.kernel_name},
                          {"bin", Json::binary(std::vector<uint8_t>(l.kernel_bin->begin(), l.kernel_bin->end()))},
                          {"block_dim", l.block_dim},
                          {"stream", l.stream_id},
                          {"args", std::move(args)}});
    }
    reply["launches"] = std::move(launches);
    return reply;
  }

  Json Handle(const Json& req) {
    if (req.contains("frees")) {
      for (const auto& off : req.at("frees")) held.erase(off.get<uint64_t>());
    }
    const std::string type = req.at("type").get<std::string>();
    if (type == "execute") return Execute(req);
    if (type == "infer_meta") return InferMeta(req);
    if (type == "compile") return Compile(req);
    if (type == "declare_launch_args") return DeclareLaunchArgs(req);
    if (type == "free") return Json{{"rc", GRAPH_SUCCESS}};
    throw std::invalid_argument("unknown request type '" + type + "'");
  }
};

}  // namespace

int RunWorker(int channel_fd, const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fprintf(stderr, "ge-plugin-worker: unknown argument '%s' (none are defined)\n", args.front().c_str());
    ::close(channel_fd);
    return 2;
  }
  // The worker ends with its engine even when the engine is killed.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // It leads its own process group, so that the engine ends whatever a
  // plugin started here together with it (ProcessPlugin::Reap).
  ::setpgid(0, 0);
  Worker w;
  w.fd = channel_fd;
  Json init;
  std::vector<int> fds;
  std::string why;
  // Three descriptors (the engine's arena, ours, the call page), and a fourth,
  // our log socket, unless the engine could not make one (worker_log.h).
  if (wire::Receive(w.fd, wire::Clock::time_point::max(), init, &fds, &why) != wire::Received::kOk ||
      (fds.size() != 3 && fds.size() != 4) || init.value("type", "") != "init") {
    std::fprintf(stderr, "ge-plugin-worker: no valid init message on fd %d (%s; got %zu of 3 or 4 descriptors)\n",
                 channel_fd, why.c_str(), fds.size());
    for (int f : fds) ::close(f);
    return 2;
  }
  Json loaded;
  try {
    w.engine_arena = SharedMapping::Map(fds[0]);
    w.own_arena = std::make_shared<SharedArena>(SharedMapping::Map(fds[1]));
    w.page_mapping = SharedMapping::Map(fds[2]);
    if (w.page_mapping->size() < sizeof(page::Page)) {
      throw std::runtime_error("the call page is " + std::to_string(w.page_mapping->size()) + " bytes (this build needs " +
                               std::to_string(sizeof(page::Page)) + ")");
    }
    w.page = reinterpret_cast<page::Page*>(w.page_mapping->base());  // the engine constructed it
    if (fds.size() == 4) {
      // From here on our log lines (the plugin's prints among them) go to the
      // engine's log, and so to its LogSink when it installed one; on a high
      // descriptor number, out of the way of a plugin's own files.
      int log_fd = ::fcntl(fds[3], F_DUPFD_CLOEXEC, kWorkerLogFd);
      if (log_fd >= 0) {
        ::close(fds[3]);
      } else {
        log_fd = fds[3];
      }
      fds[3] = -1;
      SetLogSink(MakeWorkerLogSink(log_fd, &w.page->log_records));
    }
    InstallArenaAsTensorSource(w.own_arena);
    loaded = w.Load(init);
  } catch (const std::exception& e) {
    loaded = Json{{"type", "loaded"}, {"fatal", e.what()}};
  }
  // Our own pidfd goes with the answer: the engine sees our end through it
  // even while a child of ours holds the channel open (Linux 5.3+; without
  // it the engine relies on the channel alone).
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  std::vector<int> mine;
  if (pidfd >= 0) mine.push_back(pidfd);
  const bool sent = wire::Send(w.fd, loaded, mine);
  if (pidfd >= 0) ::close(pidfd);
  if (!sent) return 0;
  if (loaded.contains("fatal")) return 2;
  // Requests come by the page's doorbell (call_page.h); between them the
  // worker spins (SpinPolicy: while the engine's calls come in quick
  // succession), then sleeps on the futex, looking every 100 ms whether the
  // engine closed the channel.
  constexpr std::chrono::milliseconds kSlice{100};
  page::SpinPolicy spin;
  page::Page& pg = *w.page;
  int32_t applied_level = -1;  // the level last taken from the page (-1: init's)
  // The channel broken under the engine's feet (a plugin closed or replaced
  // the descriptor): the worker ends with a code saying so.
  auto channel_lost = [] {
    std::fflush(nullptr);
    ::_exit(kWorkerExitChannelLost);
  };
  auto engine_gone = [&] {
    pollfd p{w.fd, POLLRDHUP, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if ((p.revents & POLLNVAL) != 0) channel_lost();
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  };
  for (uint32_t seq = 1;; ++seq) {
    const auto idle = page::Clock::now();
    if (page::WaitFor(pg.request_seq, pg.worker_waiting, seq, spin.Next(), kSlice, page::Clock::time_point::max(),
                      engine_gone) != page::Wait::kRung) {
      break;
    }
    spin.Observe(page::Clock::now() - idle);
    pg.taken_seq.store(seq, std::memory_order_release);
    // The engine's level in effect for this call (and the lines between
    // calls until the next one).
    if (const int32_t lv = pg.log_level.load(std::memory_order_relaxed); lv != applied_level &&
        lv >= static_cast<int32_t>(LogLevel::kTrace) && lv <= static_cast<int32_t>(LogLevel::kOff)) {
      SetLogLevel(static_cast<LogLevel>(lv));
      applied_level = lv;
    }
    const page::Kind kind = pg.request_kind;
    if (kind == page::Kind::kBye) break;
    Json reply;
    bool in_page = false;
    try {
      if (kind == page::Kind::kExecute) {
        in_page = w.ExecuteInPage(&reply);
      } else if (kind == page::Kind::kSocket) {
        Json req;
        why.clear();
        const wire::Received r = wire::Receive(w.fd, wire::Clock::time_point::max(), req, nullptr, &why);
        // Rung, then no frame, or a read that fails without a malformed frame.
        if (r == wire::Received::kClosed || (r == wire::Received::kError && why.empty())) channel_lost();
        if (r != wire::Received::kOk) {
          std::fprintf(stderr, "ge-plugin-worker: bad request: %s\n", why.c_str());
          return 2;
        }
        reply = w.Handle(req);
      } else {
        throw std::invalid_argument("request kind " + std::to_string(static_cast<uint32_t>(kind)) + " (supported: 1, 2, 3)");
      }
    } catch (const std::exception& e) {
      in_page = false;
      reply = Json{{"rc", GRAPH_FAILED}, {"status", wire::StatusToJson(Status::Error(std::string("worker: ") + e.what()))}};
    }
    // Encoded before the engine is rung: a reply too large for a frame (an
    // output on the heap, the arena too small or full, bigger than a message
    // may be) becomes an error naming the sizes, and its arena outputs are
    // not held for an engine that will never free them.
    std::vector<uint8_t> frame;
    if (!in_page) {
      std::size_t bytes = 0;
      std::optional<std::vector<uint8_t>> encoded = wire::Encode(reply, &bytes);
      if (!encoded) {
        if (reply.contains("outputs") && reply["outputs"].is_array()) {
          for (const auto& o : reply["outputs"]) {
            if (o.is_object() && o.contains("off")) w.held.erase(o["off"].get<uint64_t>());
          }
        }
        reply = Json{{"rc", GRAPH_FAILED},
                     {"status", wire::StatusToJson(Status::Error(
                                    "worker: its reply is " + std::to_string(bytes) + " bytes, more than one message may hold (" +
                                    std::to_string(wire::kMaxFrameBytes) + "): outputs that do not fit the worker's shared arena (" +
                                    std::to_string(w.own_arena->mapping()->size()) + " bytes) travel inside it"))}};
        encoded = wire::Encode(reply, &bytes);
      }
      if (encoded) frame = std::move(*encoded);
    }
    // Rung before a frame is written, as the engine does with its requests.
    pg.reply_kind = in_page ? page::Kind::kExecute : page::Kind::kSocket;
    page::Ring(pg.reply_seq, pg.engine_waiting, seq);
    if (!in_page && !wire::SendFrame(w.fd, frame)) channel_lost();
  }
  // The engine is gone or done: end without running the plugin's atexit
  // handlers or finalizing the interpreter (a plugin's thread cannot hang
  // the end; nothing of the worker's outlives it). A last line printed
  // without a newline is logged first.
  if (w.host) WorkerAccess::FlushPluginOutput(*w.host);
  std::fflush(nullptr);
  ::_exit(0);
}

std::string HostLibraryDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&HostLibraryDir), &info) == 0 || info.dli_fname == nullptr) return {};
  return fs::path(info.dli_fname).parent_path().string();
}

std::string LibexecProgram(const std::string& name) {
  const fs::path lib(HostLibraryDir());
  boost::system::error_code ec;
  const fs::path installed = lib / GE_LIB_TO_LIBEXEC / name;
  if (fs::is_regular_file(installed, ec)) return installed.lexically_normal().string();
  return (lib / ".." / "bin" / name).lexically_normal().string();
}

std::string WorkerExecutable() {
  if (const char* env = std::getenv("GE_PLUGIN_WORKER"); env != nullptr && *env != '\0') return env;
  return LibexecProgram("ge-plugin-worker");
}

pid_t SpawnWorker(const std::string& exe, int* channel) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    throw std::runtime_error(std::string("socketpair for a plugin worker failed: ") + std::strerror(errno));
  }
  constexpr int kChildFd = 3;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 onto the fixed number clears close-on-exec there; when the end already
  // has that number, a dup elsewhere first keeps the rule simple.
  int child_end = sv[1];
  if (child_end == kChildFd) {
    child_end = ::fcntl(sv[1], F_DUPFD_CLOEXEC, kChildFd + 1);
    ::close(sv[1]);
    sv[1] = child_end;
  }
  posix_spawn_file_actions_adddup2(&actions, child_end, kChildFd);
  std::string fd_arg = "--channel-fd=" + std::to_string(kChildFd);
  std::vector<char*> argv{const_cast<char*>(exe.c_str()), fd_arg.data(), nullptr};
  // A plain process, whatever the engine did to its own signals, as the
  // zygote's children are (zygote.cc, RunChild).
  const PlainSpawnAttr attr;
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &actions, attr.get(), argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    throw std::runtime_error("cannot start the plugin worker " + exe + ": " + std::strerror(rc) +
                             " (set GE_PLUGIN_WORKER to its path)");
  }
  *channel = sv[0];
  return pid;
}

}  // namespace ge::host
