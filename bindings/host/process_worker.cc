// process_worker.cc: the worker side of isolation "process" (RunWorker) and the one place workers are spawned.
#include "process_worker.h"

#include <boost/filesystem.hpp>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <spawn.h>
#include <stdexcept>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ge/host/plugin_host.h"
#include "ge/op/launch.h"
#include "ge/op/op_registry.h"
#include "ge/platform/platform_info.h"
#include "ge/plugin/record.h"
#include "shared_arena.h"
#include "worker_access.h"
#include "worker_wire.h"

extern char** environ;

#ifndef GE_LIB_TO_LIBEXEC
#define GE_LIB_TO_LIBEXEC "../libexec/ge-plugin"
#endif

namespace fs = boost::filesystem;

namespace ge::host {

namespace {

using wire::Json;

// The worker's state between requests: the plugin's ops, the two arenas, and
// the output blocks the engine still holds (by offset in the worker arena).
struct Worker {
  int fd = -1;
  std::shared_ptr<SharedMapping> engine_arena;
  std::shared_ptr<SharedArena> own_arena;
  OpRegistry registry;
  std::unique_ptr<PluginHost> host;
  std::map<std::string, std::shared_ptr<BaseCustomOp>> ops;
  std::map<uint64_t, std::shared_ptr<void>> held;  // outputs handed to the engine

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
      ops.emplace(rec.op_type, std::move(op));
    }
    return Json{{"type", "loaded"}, {"report", plugin::ToJson(report)}, {"ops", ops_json}, {"pid", ::getpid()}};
  }

  // A tensor of the request: a block of the engine arena or of ours, by offset.
  Tensor InputTensor(const Json& j) {
    const TensorDesc desc = wire::DescFromJson(j.at("d"));
    const int arena = j.at("a").get<int>();
    if (arena < 0) return Tensor::Borrow(desc, nullptr, 0, true);
    const uint64_t off = j.at("off").get<uint64_t>();
    const std::size_t size = j.at("size").get<std::size_t>();
    const SharedMapping& m = arena == 0 ? *engine_arena : *own_arena->mapping();
    if (off > m.size() || size > m.size() - off) {
      throw std::out_of_range("input block [" + std::to_string(off) + ", +" + std::to_string(size) +
                              ") outside the shared arena of " + std::to_string(m.size()) + " bytes");
    }
    return Tensor::Borrow(desc, m.base() + off, size, j.at("ro").get<bool>());
  }

  Json Execute(const Json& req) {
    BaseCustomOp* op = Op(req.at("op_type").get<std::string>());
    auto* ex = CustomOpCast<EagerExecuteOp>(op);
    if (ex == nullptr) throw std::invalid_argument("op_type has no execute");
    const RuntimeAttrs attrs = wire::AttrsFromJson(req.at("attrs"));
    std::vector<Tensor> inputs;
    const Json& in = req.at("inputs");
    inputs.reserve(in.size());
    for (const auto& t : in) inputs.push_back(InputTensor(t));
    std::vector<Tensor*> ptrs;
    for (auto& t : inputs) ptrs.push_back(&t);
    EagerOpExecutionContext ctx(SchemaOf(op), ptrs, InstanceLayout(req.at("in").get<std::vector<std::size_t>>()), attrs,
                                InstanceLayout(req.at("out").get<std::vector<std::size_t>>()));
    ctx.SetNodeName(req.at("node").get<std::string>());
    graphStatus rc = GRAPH_FAILED;
    try {
      rc = ex->Execute(&ctx);
    } catch (const std::exception& e) {
      ctx.SetError(Status::Error(std::string("C++ exception: ") + e.what()));
    }
    Json reply{{"rc", rc}, {"status", wire::StatusToJson(ctx.TakeError())}};
    std::vector<std::optional<Tensor>> outputs = ctx.TakeOutputs();
    if (rc != GRAPH_SUCCESS) return reply;  // nothing half-written reaches the engine
    Json outs = Json::array();
    for (auto& o : outputs) {
      if (!o) {
        outs.push_back(nullptr);
        continue;
      }
      Json j{{"d", wire::DescToJson(o->Desc())}};
      std::optional<std::size_t> ref;
      for (std::size_t i = 0; i < inputs.size() && o->GetAddr() != nullptr; ++i) {
        if (inputs[i].GetAddr() == o->GetAddr()) ref = i;
      }
      const SharedMapping& own = *own_arena->mapping();
      if (ref) {
        j["ref"] = *ref;
      } else if (o->GetAddr() != nullptr && o->IsOwned() && own.Contains(o->GetAddr(), o->GetSize())) {
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

  Json InferMeta(const Json& req) {
    BaseCustomOp* op = Op(req.at("op_type").get<std::string>());
    auto* im = CustomOpCast<InferMetaOp>(op);
    if (im == nullptr) throw std::invalid_argument("op_type has no infer_meta");
    const RuntimeAttrs attrs = wire::AttrsFromJson(req.at("attrs"));
    std::vector<TensorDesc> descs;
    for (const auto& d : req.at("inputs")) descs.push_back(wire::DescFromJson(d));
    InferMetaContext ctx(SchemaOf(op), std::move(descs), InstanceLayout(req.at("in").get<std::vector<std::size_t>>()), attrs);
    ctx.SetNodeName(req.at("node").get<std::string>());
    graphStatus rc = GRAPH_FAILED;
    try {
      rc = im->InferMeta(&ctx);
    } catch (const std::exception& e) {
      ctx.SetError(Status::Error(std::string("C++ exception: ") + e.what()));
    }
    Json reply{{"rc", rc}, {"status", wire::StatusToJson(ctx.TakeError())}, {"set", ctx.HasOutputs()}};
    if (rc == GRAPH_SUCCESS && ctx.HasOutputs()) {
      Json outs = Json::array();
      for (const auto& d : ctx.Outputs()) outs.push_back(wire::DescToJson(d));
      reply["outputs"] = std::move(outs);
      reply["layout"] = ctx.OutputLayout().Counts();
    }
    return reply;
  }

  // Metadata-only tensors of a compile or declare_launch_args request.
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
    graphStatus rc = GRAPH_FAILED;
    try {
      rc = comp->Compile(&ctx);
    } catch (const std::exception& e) {
      ctx.SetError(Status::Error(std::string("C++ exception: ") + e.what()));
    }
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
    graphStatus rc = GRAPH_FAILED;
    try {
      rc = ann->DeclareLaunchArgs(ctx);
    } catch (const std::exception& e) {
      ctx.SetError(Status::Error(std::string("C++ exception: ") + e.what()));
    }
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
  Worker w;
  w.fd = channel_fd;
  Json init;
  std::vector<int> fds;
  std::string why;
  if (wire::Receive(w.fd, wire::Clock::time_point::max(), init, &fds, &why) != wire::Received::kOk || fds.size() != 2 ||
      init.value("type", "") != "init") {
    std::fprintf(stderr, "ge-plugin-worker: no valid init message on fd %d (%s)\n", channel_fd, why.c_str());
    for (int f : fds) ::close(f);
    return 2;
  }
  Json loaded;
  try {
    w.engine_arena = SharedMapping::Map(fds[0]);
    w.own_arena = std::make_shared<SharedArena>(SharedMapping::Map(fds[1]));
    InstallArenaAsTensorSource(w.own_arena);
    loaded = w.Load(init);
  } catch (const std::exception& e) {
    loaded = Json{{"type", "loaded"}, {"fatal", e.what()}};
  }
  if (!wire::Send(w.fd, loaded)) return 0;
  if (loaded.contains("fatal")) return 2;
  for (;;) {
    Json req;
    const wire::Received r = wire::Receive(w.fd, wire::Clock::time_point::max(), req, nullptr, &why);
    if (r == wire::Received::kClosed) break;
    if (r != wire::Received::kOk) {
      std::fprintf(stderr, "ge-plugin-worker: bad request: %s\n", why.c_str());
      return 2;
    }
    Json reply;
    try {
      reply = w.Handle(req);
    } catch (const std::exception& e) {
      reply = Json{{"rc", GRAPH_FAILED}, {"status", wire::StatusToJson(Status::Error(std::string("worker: ") + e.what()))}};
    }
    if (!wire::Send(w.fd, reply)) break;
  }
  // The engine is gone or done: end without running the plugin's atexit
  // handlers or finalizing the interpreter (a plugin's thread cannot hang
  // the end; nothing of the worker's outlives it).
  std::fflush(nullptr);
  ::_exit(0);
}

namespace {

std::string LibraryDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&LibraryDir), &info) == 0 || info.dli_fname == nullptr) return {};
  return fs::path(info.dli_fname).parent_path().string();
}

}  // namespace

std::string LibexecProgram(const std::string& name) {
  const fs::path lib(LibraryDir());
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
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
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
