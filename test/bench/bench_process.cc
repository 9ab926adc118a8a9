// Isolation "process" beside its peer, in one run (share/docs/host-design.md,
// "Process isolation"): a no-op eager execute (1 input aliased to the output,
// as an engine calls it through the registry) of the same plugin loaded in a
// sub-interpreter and in a worker process; the ratio (goal: at most 5x); and
// the memory of the worker process (goal: RSS at most 20 MiB per
// process-isolated plugin), with its PSS (shared pages divided among their
// users). For scale, the floor of any design that wakes another process per
// call: an 8-byte round trip over a unix socketpair to a child doing nothing
// else (forked before anything else starts). Figures, not pass/fail.
// Worker start-up: a load of the plugin in a new worker, forked from the
// engine's zygote (the default) beside posix_spawn'ed (GE_PLUGIN_WORKER_ZYGOTE=0),
// and the RSS/PSS of both kinds of worker.
// Usage: ge-bench-process [--rounds N] [--calls N] [--loads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "ge/host/plugin_host.h"
#include "ge/op/op_registry.h"

namespace {

struct Loaded {
  ge::OpRegistry registry;
  std::unique_ptr<ge::host::PluginHost> host;
  std::shared_ptr<ge::BaseCustomOp> op;
  explicit Loaded(const std::string& isolation) {
    ge::host::HostOptions opts;
    opts.opp_paths = {std::string(GE_SOURCE_DIR) + "/plugins/testing/process/proc_plain"};
    opts.use_env_opp_path = false;
    opts.default_isolation = isolation;
    host = std::make_unique<ge::host::PluginHost>(opts, registry);
    for (const auto& r : host->LoadAll()) {
      if (!r.ok()) throw std::runtime_error(r.error.OneLine());
    }
    op = registry.Create("ProcNoop");
    if (!op) throw std::runtime_error("ProcNoop did not load (" + isolation + ")");
  }
};

// Median nanoseconds per call over `rounds` rounds of `calls` calls.
double NsPerCall(Loaded& l, int rounds, int calls) {
  auto* ex = ge::CustomOpCast<ge::EagerExecuteOp>(l.op);
  const ge::OpSchema& schema = l.registry.Find("ProcNoop")->schema.operator*();
  ge::Tensor x = ge::Tensor::Allocate(ge::TensorDesc(ge::Shape{16}, ge::DT_FLOAT));
  ge::RuntimeAttrs attrs;
  std::vector<double> per;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      ge::EagerOpExecutionContext ctx(schema, {&x}, ge::InstanceLayout({1}), attrs, ge::InstanceLayout({1}));
      if (ex->Execute(&ctx) != ge::GRAPH_SUCCESS) throw std::runtime_error(ctx.TakeError().message());
    }
    per.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls);
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

// kB of `field` ("VmRSS:", "Pss:") in a /proc file.
long Kb(const std::string& file, const std::string& field) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + field.size());
  }
  return -1;
}

// The children of `pid` (/proc/PID/task/*/children).
std::vector<int> Children(int pid) {
  std::vector<int> out;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(task.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(task + "/" + e->d_name + "/children");
    for (int child = 0; in >> child;) out.push_back(child);
  }
  ::closedir(d);
  return out;
}

std::string Comm(int pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  comm >> name;
  return name;
}

// The plugin workers: spawned ones are this process's children named
// ge-plugin-work*; forked ones are the children of its zygote (a child named
// ge-plugin-scan), whose pid goes to *zygote.
struct WorkerPids {
  std::vector<int> spawned, forked;
  int zygote = -1;
};
WorkerPids Workers() {
  WorkerPids w;
  for (int pid : Children(::getpid())) {
    const std::string name = Comm(pid);
    if (name.rfind("ge-plugin-work", 0) == 0) w.spawned.push_back(pid);
    if (name == "ge-plugin-scan") {
      w.zygote = pid;
      w.forked = Children(pid);
    }
  }
  return w;
}

// Prints RSS and PSS of each of `pids` and their mean.
void PrintMemory(const char* what, const std::vector<int>& pids, const char* goal = " (goal: at most 20 MiB)") {
  double rss = 0, pss = 0;
  for (int pid : pids) {
    const std::string p = "/proc/" + std::to_string(pid);
    const double r = Kb(p + "/status", "VmRSS:") / 1024.0, s = Kb(p + "/smaps_rollup", "Pss:") / 1024.0;
    std::printf("%s pid %d: RSS %.1f MiB%s, PSS %.1f MiB\n", what, pid, r, goal, s);
    rss += r;
    pss += s;
  }
  if (pids.size() > 1) {
    std::printf("%s mean of %zu: RSS %.1f MiB, PSS %.1f MiB\n", what, pids.size(), rss / pids.size(), pss / pids.size());
  }
}

// Median milliseconds of `n` loads of the plugin in a new worker each (the
// worker's start and the plugin's import); the hosts are kept in *keep, so
// their workers stay for the memory figures.
double LoadMs(int n, std::vector<std::unique_ptr<Loaded>>* keep) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    keep->push_back(std::make_unique<Loaded>("process"));
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Median nanoseconds of one 8-byte round trip to an echoing child process.
double SocketRoundTripNs(int rounds, int calls) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(sv[0]);
    char b[8];
    while (::read(sv[1], b, sizeof(b)) == static_cast<ssize_t>(sizeof(b))) {
      if (::write(sv[1], b, sizeof(b)) != static_cast<ssize_t>(sizeof(b))) break;
    }
    ::_exit(0);
  }
  ::close(sv[1]);
  char b[8] = {};
  std::vector<double> per;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      if (::write(sv[0], b, sizeof(b)) != static_cast<ssize_t>(sizeof(b)) ||
          ::read(sv[0], b, sizeof(b)) != static_cast<ssize_t>(sizeof(b))) {
        break;
      }
    }
    per.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls);
  }
  ::close(sv[0]);
  ::waitpid(child, nullptr, 0);
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, calls = 2000, loads = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--calls") calls = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--loads") loads = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "ge-bench-process: unknown option %s (supported: --rounds N, --calls N, --loads N)\n", a.c_str());
      return 2;
    }
  }
  // Before any thread exists (the fork is this benchmark's, never the host's).
  const double ns_socket = SocketRoundTripNs(rounds, calls);
  try {
    Loaded sub("subinterpreter");
    Loaded proc("process");
    NsPerCall(sub, 1, calls / 10 + 1);  // warm-up: the first call binds the method
    NsPerCall(proc, 1, calls / 10 + 1);
    const double ns_sub = NsPerCall(sub, rounds, calls);
    const double ns_proc = NsPerCall(proc, rounds, calls);
    std::printf("eager no-op execute, sub-interpreter: %10.0f ns/call\n", ns_sub);
    std::printf("eager no-op execute, process worker:  %10.0f ns/call\n", ns_proc);
    std::printf("ratio process / sub-interpreter:      %10.2fx (goal: at most 5x)\n", ns_proc / ns_sub);
    std::printf("socketpair round trip to a child:     %10.0f ns (%.2fx the sub-interpreter call: a wake-up each\n"
                "                                      way; the worker call is %.2fx it)\n",
                ns_socket, ns_socket / ns_sub, ns_proc / ns_socket);
    // Worker start-up, forked from the zygote (the default; `proc` keeps the
    // zygote) against posix_spawn'ed (GE_PLUGIN_WORKER_ZYGOTE=0, the peer).
    std::vector<std::unique_ptr<Loaded>> forked, spawned;
    const double ms_forked = LoadMs(loads, &forked);
    ::setenv("GE_PLUGIN_WORKER_ZYGOTE", "0", 1);
    const double ms_spawned = LoadMs(loads, &spawned);
    ::unsetenv("GE_PLUGIN_WORKER_ZYGOTE");
    std::printf("process plugin load (worker start + import), forked from the zygote: %8.1f ms (median of %d)\n",
                ms_forked, loads);
    std::printf("process plugin load (worker start + import), posix_spawn:           %8.1f ms (median of %d)\n",
                ms_spawned, loads);
    std::printf("ratio forked / spawned:                                              %8.2fx\n", ms_forked / ms_spawned);
    const WorkerPids w = Workers();
    if (w.zygote > 0) PrintMemory("zygote", {w.zygote}, "");
    PrintMemory("forked worker", w.forked);
    PrintMemory("spawned worker", w.spawned);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ge-bench-process: %s\n", e.what());
    return 1;
  }
  return 0;
}
