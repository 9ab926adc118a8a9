// Isolation "process": plugins loaded in a worker process, their ops called
// through proxies with shared tensor memory; crashes, exits, kills and hangs
// of the worker fail only the call; restarts and the restart limit.
//
// The plugins live under plugins/testing/process/ (proc_faulty: what its
// execute does is chosen by its input's first value).
#define BOOST_TEST_MODULE process_worker
#include <boost/test/unit_test.hpp>

#include "test_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ge/host/plugin_host.h"
#include "ge/log.h"
#include "ge/op/op_registry.h"
#include "shared_arena.h"

namespace fs = std::filesystem;
using namespace ge;
using ge::host::HostOptions;
using ge::host::PluginHost;
using ge::host::PluginReport;
using ge_test::Contains;

namespace {

const std::string kCases = std::string(GE_SOURCE_DIR) + "/plugins/testing/process/";

struct Call {
  graphStatus rc = GRAPH_FAILED;
  Status status;
  std::optional<Tensor> y;
  Tensor x;
};

// Runs `op_type`'s execute on float32 `values` (allocated by the engine),
// with `attrs` as the op's runtime attributes.
Call Exec(const OpRegistry& reg, const std::string& op_type, const std::vector<float>& values,
          RuntimeAttrs attrs = RuntimeAttrs()) {
  Call c;
  auto op = reg.Create(op_type);
  BOOST_REQUIRE_MESSAGE(op, "no op " << op_type);
  auto* ex = CustomOpCast<EagerExecuteOp>(op);
  BOOST_REQUIRE(ex != nullptr);
  const OpSchema& schema = dynamic_cast<CapabilityReportingOp&>(*op).GetSchema();
  if (attrs.GetAttrNum() == 0) {
    std::vector<AttrValue> defaults;
    for (const auto& a : schema.attrs) defaults.push_back(*a.default_value);
    attrs = RuntimeAttrs(defaults);
  }
  c.x = Tensor::Allocate(TensorDesc(Shape{static_cast<int64_t>(values.size())}, DT_FLOAT));
  std::copy(values.begin(), values.end(), c.x.Data<float>());
  EagerOpExecutionContext ctx(schema, {&c.x}, InstanceLayout({1}), attrs, InstanceLayout({1}));
  ctx.SetNodeName("n_" + op_type);
  c.rc = ex->Execute(&ctx);
  c.status = ctx.TakeError();
  auto outs = ctx.TakeOutputs();
  if (!outs.empty()) c.y = outs[0];
  return c;
}

std::vector<float> Floats(const Tensor& t) {
  const float* p = t.Data<float>();
  return std::vector<float>(p, p + t.GetShapeSize());
}

HostOptions Opts(std::vector<std::string> paths, double timeout_s = 60) {
  HostOptions o = ge_test::HostTestOptions(std::move(paths));
  o.call_timeout_s = timeout_s;
  return o;
}

const PluginReport& Only(const std::vector<PluginReport>& reports) {
  BOOST_REQUIRE_EQUAL(reports.size(), 1u);
  BOOST_REQUIRE_MESSAGE(reports[0].ok(), reports[0].error.OneLine() << "\n" << reports[0].error.traceback);
  return reports[0];
}

// Loads the package plugin proc_faulty (an opp path entry is a folder of plugins).
PluginReport LoadFaulty(PluginHost& host) {
  PluginReport r = host.LoadPlugin(kCases + "proc_faulty");
  BOOST_REQUIRE_MESSAGE(r.ok(), r.error.OneLine() << "\n" << r.error.traceback);
  return r;
}

pid_t PidOf(const Call& c) {
  BOOST_REQUIRE_MESSAGE(c.rc == GRAPH_SUCCESS, c.status.message());
  return static_cast<pid_t>(Floats(*c.y)[0]);
}

}  // namespace

namespace {

// In a forked child under RLIMIT_AS = (its address space now + `headroom`):
// the capacity CreateFitting got, or its error text.
std::string ArenaUnderLimit(std::size_t headroom) {
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    std::size_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t now = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
    struct rlimit lim {};
    ::getrlimit(RLIMIT_AS, &lim);
    lim.rlim_cur = now + headroom;
    std::string out;
    if (::setrlimit(RLIMIT_AS, &lim) != 0) {
      out = "setrlimit failed";
    } else {
      try {
        out = "capacity " + std::to_string(ge::host::SharedMapping::CreateFitting("ge-test-arena", std::size_t{1} << 32)->size());
      } catch (const std::exception& e) {
        out = e.what();
      }
    }
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return got;
}

}  // namespace

// Under an address-space limit (ulimit -v), an arena takes what fits (an
// eighth of the limit at most, halved while mmap runs out), and when nothing
// fits the error names the limit.
BOOST_AUTO_TEST_CASE(a_shared_arena_fits_an_address_space_limit_or_names_it) {
#if defined(__SANITIZE_ADDRESS__)
  BOOST_TEST_MESSAGE("skipped: AddressSanitizer's shadow memory needs far more address space than any limit");
  return;
#endif
  const std::string fits = ArenaUnderLimit(std::size_t{600} << 20);
  BOOST_CHECK_MESSAGE(fits.rfind("capacity ", 0) == 0, fits);
  if (fits.rfind("capacity ", 0) == 0) {
    const std::size_t got = std::stoull(fits.substr(9));
    BOOST_CHECK_GE(got, ge::host::kMinArenaBytes);
    BOOST_CHECK_LE(got, std::size_t{512} << 20);
    BOOST_CHECK_EQUAL(got & (got - 1), 0u);  // a power of two
  }
  const std::string none = ArenaUnderLimit(std::size_t{4} << 20);
  BOOST_CHECK_MESSAGE(none.find("cannot make the shared arena ge-test-arena: mmap of a shared arena of 16777216 bytes "
                                "failed: Cannot allocate memory (the address-space limit, ulimit -v / RLIMIT_AS, is ") == 0,
                      none);
}

BOOST_AUTO_TEST_CASE(process_plugin_reports_like_the_same_plugin_in_a_sub_interpreter) {
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  const PluginReport r = LoadFaulty(host);
  BOOST_CHECK_EQUAL(r.isolation, "process");

  // The same package with isolation "subinterpreter": the same record but the isolation.
  ge_test::TempDir tmp;
  fs::copy(kCases + "proc_faulty", tmp.path / "proc_faulty");
  std::ofstream(tmp.path / "proc_faulty" / "pyproject.toml")
      << "[project]\nname = \"proc_faulty\"\nversion = \"0.3.0\"\n"
         "description = \"Process-isolated test ops that crash, exit, hang or raise on request\"\n"
         "[tool.ge-plugin]\nisolation = \"subinterpreter\"\n";
  OpRegistry reg2;
  PluginHost host2(Opts({}), reg2);
  const PluginReport s = host2.LoadPlugin((tmp.path / "proc_faulty").string());
  BOOST_REQUIRE_MESSAGE(s.ok(), s.error.OneLine());
  BOOST_CHECK_EQUAL(s.isolation, "subinterpreter");
  BOOST_CHECK_EQUAL(r.version, s.version);
  BOOST_CHECK_EQUAL(r.description, s.description);
  BOOST_REQUIRE_EQUAL(r.ops.size(), s.ops.size());
  for (std::size_t i = 0; i < r.ops.size(); ++i) {
    BOOST_CHECK_EQUAL(r.ops[i].op_type, s.ops[i].op_type);
    BOOST_CHECK(r.ops[i].capabilities == s.ops[i].capabilities);
    const auto a = reg.Find(r.ops[i].op_type);
    const auto b = reg2.Find(s.ops[i].op_type);
    BOOST_REQUIRE(a && b);
    BOOST_CHECK_EQUAL(a->capabilities, b->capabilities);
    BOOST_CHECK_EQUAL(a->schema->ToString(), b->schema->ToString());
  }
}

BOOST_AUTO_TEST_CASE(execute_and_infer_meta_run_in_the_worker_on_shared_memory) {
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  LoadFaulty(host);

  // execute runs in another process.
  const Call pid = Exec(reg, "ProcFault", {4, 0});
  BOOST_CHECK_NE(PidOf(pid), ::getpid());

  // Attributes cross; the engine's input and the worker's output are shared memory.
  const Call scaled = Exec(reg, "ProcScale", {1, 2, 3}, RuntimeAttrs({AttrValue(3.0f)}));
  BOOST_REQUIRE_MESSAGE(scaled.rc == GRAPH_SUCCESS, scaled.status.message());
  BOOST_CHECK((Floats(*scaled.y) == std::vector<float>{3, 6, 9}));
  BOOST_CHECK(host::EngineArena()->mapping()->Contains(scaled.x.GetAddr(), scaled.x.GetSize()));
  BOOST_CHECK(!host::EngineArena()->mapping()->Contains(scaled.y->GetAddr(), scaled.y->GetSize()));
  BOOST_CHECK(scaled.y->IsOwned());

  // An output aliasing its input is the engine's input tensor itself (no copy).
  const Call ref = Exec(reg, "ProcRef", {7, 8});
  BOOST_REQUIRE_MESSAGE(ref.rc == GRAPH_SUCCESS, ref.status.message());
  BOOST_CHECK_EQUAL(ref.y->GetAddr(), ref.x.GetAddr());

  // A worker output feeding the next call of the same worker is not copied either.
  {
    auto op = reg.Create("ProcRef");
    auto* ex = CustomOpCast<EagerExecuteOp>(op);
    Tensor y = *scaled.y;
    const OpSchema& schema = dynamic_cast<CapabilityReportingOp&>(*op).GetSchema();
    RuntimeAttrs none;
    EagerOpExecutionContext ctx(schema, {&y}, InstanceLayout({1}), none, InstanceLayout({1}));
    BOOST_REQUIRE_EQUAL(ex->Execute(&ctx), GRAPH_SUCCESS);
    auto outs = ctx.TakeOutputs();
    BOOST_CHECK_EQUAL(outs[0]->GetAddr(), y.GetAddr());
  }

  // infer_meta through the worker, and its Python error with the plugin's details.
  auto op = reg.Create("ProcScale");
  auto* im = CustomOpCast<InferMetaOp>(op);
  BOOST_REQUIRE(im != nullptr);
  const OpSchema& schema = dynamic_cast<CapabilityReportingOp&>(*op).GetSchema();
  RuntimeAttrs attrs({AttrValue(2.0f)});
  InferMetaContext ok(schema, {TensorDesc(Shape{2, 5}, DT_FLOAT)}, InstanceLayout({1}), attrs);
  BOOST_REQUIRE_EQUAL(im->InferMeta(&ok), GRAPH_SUCCESS);
  BOOST_REQUIRE(ok.HasOutputs());
  BOOST_CHECK(ok.Outputs()[0] == TensorDesc(Shape{2, 5}, DT_FLOAT));
  InferMetaContext bad(schema, {TensorDesc(Shape{2}, DT_INT32)}, InstanceLayout({1}), attrs);
  BOOST_CHECK_NE(im->InferMeta(&bad), GRAPH_SUCCESS);
  BOOST_CHECK_EQUAL(bad.GetError().info().exception_type, "TypeError");
  BOOST_CHECK_MESSAGE(Contains(bad.GetError().message(), "ProcScale takes float32, got DT_INT32"), bad.GetError().message());
  BOOST_CHECK_EQUAL(bad.GetError().info().plugin, "proc_faulty");

  // A Python exception in execute keeps its type, message, location and traceback.
  const Call raised = Exec(reg, "ProcFault", {5});
  BOOST_CHECK_NE(raised.rc, GRAPH_SUCCESS);
  BOOST_CHECK_EQUAL(raised.status.info().exception_type, "ValueError");
  BOOST_CHECK_MESSAGE(Contains(raised.status.message(), "bad five"), raised.status.message());
  BOOST_CHECK_MESSAGE(Contains(raised.status.info().location, "__init__.py:"), raised.status.info().location);
  BOOST_CHECK(!raised.status.info().traceback.empty());
  BOOST_CHECK(!raised.y);
  // ...and the worker lives on: same pid.
  BOOST_CHECK_EQUAL(PidOf(Exec(reg, "ProcFault", {4})), PidOf(pid));
}

BOOST_AUTO_TEST_CASE(crash_exit_and_hang_fail_only_the_call_then_the_plugin_is_disabled) {
  OpRegistry reg;
  PluginHost host(Opts({}, /*timeout_s=*/1.0), reg);
  LoadFaulty(host);
  const pid_t first = PidOf(Exec(reg, "ProcFault", {4}));

  const Call crash = Exec(reg, "ProcFault", {1, 1});
  BOOST_CHECK_NE(crash.rc, GRAPH_SUCCESS);
  BOOST_CHECK(!crash.y);  // nothing half-written reaches the outputs
  for (const std::string& part : {std::string("plugin 'proc_faulty'"), std::string("execute of op_type 'ProcFault'"),
                                 std::string("died of signal 11"), "(pid " + std::to_string(first) + ")"}) {
    BOOST_CHECK_MESSAGE(Contains(crash.status.message(), part), crash.status.message() << " lacks " << part);
  }
  BOOST_CHECK_EQUAL(crash.status.info().plugin, "proc_faulty");
  const pid_t second = PidOf(Exec(reg, "ProcFault", {4}));  // restarted (1)
  BOOST_CHECK_NE(second, first);

  const Call exited = Exec(reg, "ProcFault", {2});
  BOOST_CHECK_MESSAGE(Contains(exited.status.message(), "exited with code 3"), exited.status.message());
  BOOST_CHECK((Floats(*Exec(reg, "ProcFault", {0, 1.5}).y) == std::vector<float>{0, 3}));  // restarted (2)

  const auto t0 = std::chrono::steady_clock::now();
  const Call hung = Exec(reg, "ProcFault", {3});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_CHECK_MESSAGE(Contains(hung.status.message(), "did not finish within 1 s"), hung.status.message());
  BOOST_CHECK_MESSAGE(Contains(hung.status.message(), "was killed"), hung.status.message());
  BOOST_CHECK_LT(took, 30.0);
  BOOST_CHECK_NE(PidOf(Exec(reg, "ProcFault", {4})), second);  // restarted (3)

  // A fourth failure within the minute: reported, then the plugin is disabled with the reason.
  const Call again = Exec(reg, "ProcFault", {1});
  BOOST_CHECK_MESSAGE(Contains(again.status.message(), "died of signal 11"), again.status.message());
  const Call disabled = Exec(reg, "ProcFault", {0});
  BOOST_CHECK_NE(disabled.rc, GRAPH_SUCCESS);
  for (const char* part : {"plugin 'proc_faulty'", "disabled", "restarted 3 times within 60 s", "died of signal 11"}) {
    BOOST_CHECK_MESSAGE(Contains(disabled.status.message(), part), disabled.status.message() << " lacks " << part);
  }
  // Every op of the plugin shares the verdict.
  BOOST_CHECK(Contains(Exec(reg, "ProcScale", {1}).status.message(), "disabled"));
}

BOOST_AUTO_TEST_CASE(a_worker_killed_between_calls_is_replaced_without_failing_a_call) {
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  LoadFaulty(host);
  const pid_t first = PidOf(Exec(reg, "ProcFault", {4}));
  BOOST_REQUIRE_EQUAL(::kill(first, SIGKILL), 0);
  // The kill lands asynchronously: wait until the worker is a zombie.
  for (int i = 0; i < 500; ++i) {
    std::ifstream stat("/proc/" + std::to_string(first) + "/stat");
    std::string pid, comm, state;
    stat >> pid >> comm >> state;
    if (state == "Z" || !stat) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const Call after = Exec(reg, "ProcFault", {4});
  BOOST_REQUIRE_MESSAGE(after.rc == GRAPH_SUCCESS, after.status.message());
  BOOST_CHECK_NE(PidOf(after), first);
}

// The call page (share/docs/host-design.md, "The call page"): runtime
// attributes are sent once and then named by id, so a node whose attributes
// change between calls, or two nodes alternating, must each get their own.
BOOST_AUTO_TEST_CASE(attributes_named_by_id_follow_every_change) {
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  LoadFaulty(host);
  for (const float scale : {3.0f, 3.0f, 2.0f, 3.0f, 0.5f, 2.0f, 2.0f}) {
    const Call c = Exec(reg, "ProcScale", {1, 2}, RuntimeAttrs({AttrValue(scale)}));
    BOOST_REQUIRE_MESSAGE(c.rc == GRAPH_SUCCESS, c.status.message());
    BOOST_CHECK_MESSAGE((Floats(*c.y) == std::vector<float>{scale, 2 * scale}), "scale " << scale);
  }
  // More distinct sets than the worker keeps ids for: the oldest id is reused, never confused.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 80; ++i) {
      const float scale = static_cast<float>(i) + 0.25f;
      const Call c = Exec(reg, "ProcScale", {1}, RuntimeAttrs({AttrValue(scale)}));
      BOOST_REQUIRE_MESSAGE(c.rc == GRAPH_SUCCESS, c.status.message());
      BOOST_REQUIRE_EQUAL(Floats(*c.y)[0], scale);
    }
  }
}

// A node name longer than the page holds takes the socket; the answer is the same.
BOOST_AUTO_TEST_CASE(a_call_the_page_cannot_hold_goes_by_the_socket) {
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  LoadFaulty(host);
  auto op = reg.Create("ProcScale");
  auto* ex = CustomOpCast<EagerExecuteOp>(op);
  const OpSchema& schema = dynamic_cast<CapabilityReportingOp&>(*op).GetSchema();
  Tensor x = Tensor::Allocate(TensorDesc(Shape{2}, DT_FLOAT));
  x.Data<float>()[0] = 1;
  x.Data<float>()[1] = 4;
  RuntimeAttrs attrs({AttrValue(2.0f)});
  for (const std::size_t len : {std::size_t{8}, std::size_t{1000}, std::size_t{8}}) {
    EagerOpExecutionContext ctx(schema, {&x}, InstanceLayout({1}), attrs, InstanceLayout({1}));
    ctx.SetNodeName(std::string(len, 'n'));
    BOOST_REQUIRE_MESSAGE(ex->Execute(&ctx) == GRAPH_SUCCESS, ctx.GetError().message());
    BOOST_CHECK((Floats(*ctx.TakeOutputs()[0]) == std::vector<float>{2, 8}));
  }
}

// A worker that forks and then crashes: its child still holds the channel,
// yet the crash is seen at once (the worker's pidfd), not at the deadline,
// and the child ends with it (the worker's process group).
BOOST_AUTO_TEST_CASE(a_worker_that_forks_then_crashes_is_a_crash_and_its_child_ends) {
  OpRegistry reg;
  PluginHost host(Opts({}, /*timeout_s=*/60.0), reg);
  LoadFaulty(host);
  const int token = static_cast<int>(::getpid());
  const std::string pid_file = "/tmp/ge-proc-faulty-" + std::to_string(token) + ".pid";
  std::remove(pid_file.c_str());
  const auto t0 = std::chrono::steady_clock::now();
  const Call c = Exec(reg, "ProcFault", {6, static_cast<float>(token)});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_CHECK_NE(c.rc, GRAPH_SUCCESS);
  BOOST_CHECK_MESSAGE(Contains(c.status.message(), "died of signal 11"), c.status.message());
  BOOST_CHECK_LT(took, 20.0);  // the deadline is 60 s
  std::ifstream in(pid_file);
  pid_t child = -1;
  in >> child;
  BOOST_REQUIRE_GT(child, 0);
  std::remove(pid_file.c_str());
  // Gone, or a zombie no one reaps (a container's pid 1 may not).
  bool ended = false;
  for (int i = 0; i < 500 && !ended; ++i) {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, comm, state;
    if (!(stat >> pid >> comm >> state) || state == "Z" || state == "X") {
      ended = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  BOOST_CHECK_MESSAGE(ended, "the worker's child " << child << " outlived it");
  // The next call has a new worker.
  BOOST_CHECK_NE(PidOf(Exec(reg, "ProcFault", {4})), 0);
}

// Once a process plugin loads, Tensor::Allocate takes from the shared
// engine arena, whose allocator has no lock of its own: engine threads
// allocate and free at once (ge/runtime/tensor.h promises it).
BOOST_AUTO_TEST_CASE(engine_threads_allocate_tensors_at_once_after_a_process_plugin_loads) {
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  LoadFaulty(host);
  auto churn = [](int seed) {
    std::vector<Tensor> keep;
    for (int i = 0; i < 40000; ++i) {
      Tensor t = Tensor::Allocate(TensorDesc(Shape{1 + (i * 7 + seed) % 97}, DT_FLOAT));
      t.Data<float>()[0] = static_cast<float>(i);
      if (i % 5 == 0) keep.push_back(t);
      if (keep.size() > 64) keep.erase(keep.begin());
    }
  };
  std::thread a(churn, 1), b(churn, 2), c(churn, 3);
  a.join();
  b.join();
  c.join();
  // The arena is intact: a call still works on memory allocated now.
  BOOST_CHECK((Floats(*Exec(reg, "ProcFault", {0, 1.5}).y) == std::vector<float>{0, 3}));
}

// A stopped worker (SIGSTOP, a debugger) neither holds a call past its
// deadline without saying why, nor the unload for seconds.
BOOST_AUTO_TEST_CASE(a_stopped_worker_is_named_and_does_not_hold_the_unload) {
  OpRegistry reg;
  auto host = std::make_unique<PluginHost>(Opts({}, /*timeout_s=*/1.0), reg);
  LoadFaulty(*host);
  const pid_t first = PidOf(Exec(reg, "ProcFault", {4}));
  BOOST_REQUIRE_EQUAL(::kill(first, SIGSTOP), 0);
  const Call stalled = Exec(reg, "ProcFault", {4});
  BOOST_CHECK_NE(stalled.rc, GRAPH_SUCCESS);
  BOOST_CHECK_MESSAGE(Contains(stalled.status.message(), "did not finish within 1 s"), stalled.status.message());
  BOOST_CHECK_MESSAGE(Contains(stalled.status.message(), "it was stopped"), stalled.status.message());
  const pid_t second = PidOf(Exec(reg, "ProcFault", {4}));
  BOOST_CHECK_NE(second, first);
  BOOST_REQUIRE_EQUAL(::kill(second, SIGSTOP), 0);
  const auto t0 = std::chrono::steady_clock::now();
  host.reset();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_CHECK_LT(took, 3.0);  // was 4.4-5 s: a grace for the bye, then another for the exit
  BOOST_CHECK_NE(::kill(second, 0), 0);  // killed (and reaped)
}

// A plugin that closes its worker's channel is told apart from a plain exit.
BOOST_AUTO_TEST_CASE(a_plugin_that_closes_the_workers_channel_is_named_so) {
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  LoadFaulty(host);
  const Call c = Exec(reg, "ProcFault", {7});
  BOOST_CHECK_NE(c.rc, GRAPH_SUCCESS);
  BOOST_CHECK_MESSAGE(Contains(c.status.message(), "lost its channel to the engine"), c.status.message());
  BOOST_CHECK_NE(PidOf(Exec(reg, "ProcFault", {4})), 0);  // a new worker takes the next call
}

BOOST_AUTO_TEST_CASE(default_isolation_process_and_call_timeout_are_checked) {
  OpRegistry reg;
  HostOptions o = Opts({kCases + "proc_plain"});
  o.default_isolation = "process";
  PluginHost host(o, reg);
  const PluginReport& r = Only(host.LoadAll());
  BOOST_CHECK_EQUAL(r.isolation, "process");
  const Call c = Exec(reg, "ProcNoop", {1, 2});
  BOOST_REQUIRE_MESSAGE(c.rc == GRAPH_SUCCESS, c.status.message());
  BOOST_CHECK_EQUAL(c.y->GetAddr(), c.x.GetAddr());
  BOOST_CHECK_EQUAL(host.PythonCalls(), 1u);

  // Out of range: never a deadline that no call can meet or that overflows.
  for (const double seconds : {0.0, -1.0, 1e-300, 1e10, std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::quiet_NaN()}) {
    OpRegistry reg2;
    HostOptions bad = Opts({});
    bad.call_timeout_s = seconds;
    try {
      PluginHost h(bad, reg2);
      BOOST_ERROR("call_timeout_s " << seconds << " was accepted");
    } catch (const std::invalid_argument& e) {
      BOOST_CHECK_MESSAGE(Contains(e.what(), "call_timeout_s must be from 0.001 to 1e+09 seconds, got "), e.what());
    }
  }
  BOOST_CHECK(ge::host::CallTimeoutProblem(ge::host::kMinCallTimeoutS).empty());
  BOOST_CHECK(ge::host::CallTimeoutProblem(ge::host::kMaxCallTimeoutS).empty());
}

BOOST_AUTO_TEST_CASE(a_worker_that_cannot_start_is_a_load_error_naming_the_worker) {
  ::setenv("GE_PLUGIN_WORKER", "/nonexistent/ge-plugin-worker", 1);
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  const std::vector<PluginReport> reports{host.LoadPlugin(kCases + "proc_faulty")};
  ::unsetenv("GE_PLUGIN_WORKER");
  BOOST_CHECK_EQUAL(ge::plugin::StatusName(reports[0].status), "error");
  BOOST_CHECK_MESSAGE(Contains(reports[0].error.message, "/nonexistent/ge-plugin-worker"), reports[0].error.message);
  BOOST_CHECK_MESSAGE(Contains(reports[0].error.message, "GE_PLUGIN_WORKER"), reports[0].error.message);
  BOOST_CHECK(!reg.Find("ProcFault"));
}

BOOST_AUTO_TEST_CASE(an_import_error_in_the_worker_is_reported_as_in_process) {
  ge_test::TempDir tmp;
  const auto pkg = tmp.path / "proc_broken";
  fs::create_directories(pkg);
  std::ofstream(pkg / "__init__.py") << "x = 1\nimport ge_no_such_module_xyz\n";
  std::ofstream(pkg / "pyproject.toml") << "[tool.ge-plugin]\nisolation = \"process\"\n";
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  const PluginReport r = host.LoadPlugin(pkg.string());
  BOOST_CHECK_EQUAL(ge::plugin::StatusName(r.status), "error");
  BOOST_CHECK_EQUAL(r.isolation, "process");
  BOOST_CHECK(r.error.kind == ge::plugin::ErrorKind::kImport);
  BOOST_CHECK_EQUAL(r.error.exception, "ModuleNotFoundError");
  BOOST_CHECK_MESSAGE(Contains(r.error.message, "ge_no_such_module_xyz"), r.error.message);
  BOOST_CHECK_MESSAGE(Contains(r.error.file, "__init__.py") && r.error.line == 2, r.error.file << ":" << r.error.line);
  BOOST_CHECK(!r.error.traceback.empty());
  BOOST_CHECK(reg.ListOpTypes().empty());
}

// ---- workers forked from the engine's zygote (bindings/host/worker_launcher.h) --------------

namespace {

// The parent pid of `pid` (/proc/PID/stat, the field after the state); -1 when it is gone.
pid_t ParentOf(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 1));
  std::string state;
  pid_t ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

std::string CmdLine(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::replace(s.begin(), s.end(), '\0', ' ');
  return s;
}

// Waits until `pid` is gone or a zombie (a kill lands asynchronously).
void AwaitEnd(pid_t pid) {
  for (int i = 0; i < 1000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (!stat || close == std::string::npos || text.compare(close + 1, 3, " Z ") == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  BOOST_FAIL("process " << pid << " did not end within 10 s");
}

// Checks that `worker` is a child of a `ge-plugin-scan --zygote` that is this process's child; returns the zygote.
pid_t CheckForkedFromZygote(pid_t worker) {
  const pid_t zygote = ParentOf(worker);
  BOOST_CHECK_NE(zygote, ::getpid());
  BOOST_CHECK_MESSAGE(Contains(CmdLine(zygote), "ge-plugin-scan --zygote"), CmdLine(zygote));
  BOOST_CHECK_EQUAL(ParentOf(zygote), ::getpid());  // a helper the engine started, not a fork of it
  return zygote;
}

}  // namespace

BOOST_AUTO_TEST_CASE(workers_are_forked_from_a_zygote_and_a_crash_still_names_the_signal) {
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  LoadFaulty(host);
  const pid_t first = PidOf(Exec(reg, "ProcFault", {4}));
  const pid_t zygote = CheckForkedFromZygote(first);

  const Call crash = Exec(reg, "ProcFault", {1});
  for (const std::string& part : {std::string("died of signal 11 (Segmentation fault)"), "(pid " + std::to_string(first) + ")"}) {
    BOOST_CHECK_MESSAGE(Contains(crash.status.message(), part), crash.status.message() << " lacks " << part);
  }
  const Call exited = Exec(reg, "ProcFault", {2});
  BOOST_CHECK_MESSAGE(Contains(exited.status.message(), "exited with code 3"), exited.status.message());
  // The zygote outlives its workers' faults: the next worker is its child too.
  const pid_t next = PidOf(Exec(reg, "ProcFault", {4}));
  BOOST_CHECK_NE(next, first);
  BOOST_CHECK_EQUAL(ParentOf(next), zygote);
}

BOOST_AUTO_TEST_CASE(a_zygote_killed_between_calls_is_restarted_once_then_workers_are_spawned) {
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  LoadFaulty(host);
  const pid_t w1 = PidOf(Exec(reg, "ProcFault", {4}));
  const pid_t z1 = CheckForkedFromZygote(w1);
  BOOST_REQUIRE_EQUAL(::kill(z1, SIGKILL), 0);
  AwaitEnd(w1);  // its workers die with it (PR_SET_PDEATHSIG)

  // The call that finds the worker gone succeeds, in a worker of a new zygote.
  const Call after = Exec(reg, "ProcFault", {4});
  BOOST_REQUIRE_MESSAGE(after.rc == GRAPH_SUCCESS, after.status.message());
  const pid_t w2 = PidOf(after);
  const pid_t z2 = CheckForkedFromZygote(w2);
  BOOST_CHECK_NE(z2, z1);

  // Gone again: no third zygote; workers are posix_spawn'ed by the engine from now on.
  BOOST_REQUIRE_EQUAL(::kill(z2, SIGKILL), 0);
  AwaitEnd(w2);
  const pid_t w3 = PidOf(Exec(reg, "ProcFault", {4}));
  BOOST_CHECK_EQUAL(ParentOf(w3), ::getpid());
  BOOST_CHECK_MESSAGE(Contains(CmdLine(w3), "ge-plugin-worker"), CmdLine(w3));
  // ...and a spawned worker's crash is named the same way.
  const Call crash = Exec(reg, "ProcFault", {1});
  BOOST_CHECK_MESSAGE(Contains(crash.status.message(), "died of signal 11"), crash.status.message());
}

BOOST_AUTO_TEST_CASE(GE_PLUGIN_WORKER_ZYGOTE_0_spawns_workers) {
  ::setenv("GE_PLUGIN_WORKER_ZYGOTE", "0", 1);
  OpRegistry reg;
  PluginHost host(Opts({}), reg);
  LoadFaulty(host);
  const pid_t w = PidOf(Exec(reg, "ProcFault", {4}));
  ::unsetenv("GE_PLUGIN_WORKER_ZYGOTE");
  BOOST_CHECK_EQUAL(ParentOf(w), ::getpid());
  BOOST_CHECK_MESSAGE(Contains(CmdLine(w), "ge-plugin-worker"), CmdLine(w));
}

// ---- a worker's log lines reach the engine's log and LogSink (worker_log.h) ----

namespace {

class CaptureSink final : public ge::LogSink {
 public:
  void Write(ge::LogLevel, std::string_view component, std::string_view message) override {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(std::string(component), std::string(message));
  }
  bool Has(const std::string& component, const std::string& text) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [c, m] : lines) {
      if (c == component && Contains(m, text)) return true;
    }
    return false;
  }
  std::string All() {
    std::lock_guard<std::mutex> lock(mu);
    std::string s;
    for (const auto& [c, m] : lines) s += "[" + c + "] " + m + "\n";
    return s;
  }
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> lines;
};

// The engine's stderr (fd 2) pointed at a file while alive: what a worker
// (forked or spawned with the engine's fd 2) writes raw lands there.
struct StderrToFile {
  explicit StderrToFile(const fs::path& p) : path(p), saved(::dup(2)) {
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~StderrToFile() {
    ::dup2(saved, 2);
    ::close(saved);
    ge::SetLogSink(nullptr);
    ge::SetLogLevel(ge::LogLevel::kWarn);
  }
  std::string Text() const {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  fs::path path;
  int saved;
};

const char* kTalkative = R"(import os
import struct
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

print("talkative imported")


@register_op(op_type="ProcTalk")
def proto(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="ProcTalk")
class Talk:
    def execute(self, x: Tensor) -> None:
        mode = int(x.data.cast("B").cast("f")[0])
        print(f"talkative executes mode {mode}")
        if mode == 1:
            os.kill(os.getpid(), 11)
        if mode == 2:
            print("x" * 300000)  # more than the log socket holds: the engine drains as it waits
        if mode in (4, 5):
            # Written by hand on the worker's log socket (the plugin shares its process).
            fd = max(int(f) for f in os.listdir("/proc/self/fd") if int(f) >= 1000)
            def s(b):
                return bytes([0xa0 + len(b)]) + b
            if mode == 4:  # a record claiming to be the engine's, with a byte that is not UTF-8
                body = b"\x83" + s(b"level") + b"\x03" + s(b"component") + s(b"engine") + s(b"message") + s(b"spoof \xff!")
                os.write(fd, struct.pack("=I", len(body)) + body)
            else:  # a frame announced and never finished
                os.write(fd, struct.pack("=I", 1 << 20) + b"abc")
        get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
)";

fs::path WriteTalkative(const ge_test::TempDir& tmp) {
  const fs::path pkg = tmp.path / "talkative";
  fs::create_directories(pkg);
  std::ofstream(pkg / "__init__.py") << kTalkative;
  std::ofstream(pkg / "pyproject.toml") << "[tool.ge-plugin]\nisolation = \"process\"\n";
  return pkg;
}

// The talkative process plugin loaded by a fresh host at `level`, the
// engine's stderr in a file, and (with `with_sink`) a capturing LogSink
// installed before the load. Restores the sink and level (StderrToFile).
struct TalkativeHost {
  TalkativeHost(ge::LogLevel level, bool with_sink) : pkg(WriteTalkative(tmp)), err(tmp.path / "stderr.txt") {
    if (with_sink) ge::SetLogSink(sink);
    ge::SetLogLevel(level);
    const PluginReport r = host.LoadPlugin(pkg.string());
    BOOST_REQUIRE_MESSAGE(r.ok(), r.error.OneLine());
  }
  ge_test::TempDir tmp;
  fs::path pkg;
  StderrToFile err;
  std::shared_ptr<CaptureSink> sink = std::make_shared<CaptureSink>();
  OpRegistry reg;
  PluginHost host{Opts({}), reg};
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_workers_log_lines_reach_the_engines_log_sink_not_its_stderr) {
  TalkativeHost t(ge::LogLevel::kDebug, true);  // the worker's own load line is debug (the engine's is info)
  auto& sink = t.sink;
  auto& reg = t.reg;
  auto& host = t.host;
  auto& err = t.err;
  // The import's print and the worker's own load line, by the time the load returns.
  BOOST_CHECK_MESSAGE(sink->Has("plugin", "talkative imported"), sink->All());
  BOOST_CHECK_MESSAGE(sink->Has("host", "in its worker process"), sink->All());
  // A call's print is there when the call returns (drained after its answer).
  const Call c = Exec(reg, "ProcTalk", {0.0f});
  BOOST_REQUIRE_MESSAGE(c.rc == GRAPH_SUCCESS, c.status.message());
  BOOST_CHECK_MESSAGE(sink->Has("plugin", "talkative executes mode 0"), sink->All());
  // A print larger than the socket's buffer does not stall the call.
  const Call big = Exec(reg, "ProcTalk", {2.0f});
  BOOST_REQUIRE_MESSAGE(big.rc == GRAPH_SUCCESS, big.status.message());
  BOOST_CHECK(sink->Has("plugin", std::string(1000, 'x')));
  // The last line before a crash is kept.
  const Call crash = Exec(reg, "ProcTalk", {1.0f});
  BOOST_CHECK(crash.rc != GRAPH_SUCCESS);
  BOOST_CHECK_MESSAGE(sink->Has("plugin", "talkative executes mode 1"), sink->All());
  host.UnloadAll();
  // Nothing of it went to the engine's stderr.
  const std::string raw = err.Text();
  BOOST_CHECK_MESSAGE(!Contains(raw, "talkative"), raw);
}

BOOST_AUTO_TEST_CASE(a_sink_installed_after_the_load_gets_the_workers_later_lines) {
  TalkativeHost t(ge::LogLevel::kInfo, false);
  auto& reg = t.reg;
  auto& host = t.host;
  auto& err = t.err;
  // Without a sink the lines go to the engine's stderr, formatted as its own.
  BOOST_CHECK_MESSAGE(Contains(err.Text(), "[plugin] [info] [talkative] talkative imported"), err.Text());
  auto sink = t.sink;
  ge::SetLogSink(sink);
  const Call c = Exec(reg, "ProcTalk", {0.0f});
  BOOST_REQUIRE_MESSAGE(c.rc == GRAPH_SUCCESS, c.status.message());
  BOOST_CHECK_MESSAGE(sink->Has("plugin", "talkative executes mode 0"), sink->All());
  BOOST_CHECK(!Contains(err.Text(), "talkative executes"));
  // The engine's level applies to the worker's lines too: above info, a print is dropped.
  ge::SetLogLevel(ge::LogLevel::kWarn);
  const Call quiet = Exec(reg, "ProcTalk", {3.0f});
  BOOST_REQUIRE_MESSAGE(quiet.rc == GRAPH_SUCCESS, quiet.status.message());
  BOOST_CHECK(!sink->Has("plugin", "mode 3"));
  host.UnloadAll();
}

// An engine's own signal state (SIGCHLD ignored, signals blocked on the
// loading thread) does not reach its workers, spawned or forked from the zygote.
BOOST_AUTO_TEST_CASE(workers_start_with_default_signals_whatever_the_engine_set) {
  for (const bool spawn : {true, false}) {
    if (spawn) ::setenv("GE_PLUGIN_WORKER_ZYGOTE", "0", 1);
    struct sigaction ign {}, old {};
    ign.sa_handler = SIG_IGN;
    ::sigaction(SIGCHLD, &ign, &old);
    sigset_t block, saved;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGTERM);
    ::pthread_sigmask(SIG_BLOCK, &block, &saved);
    OpRegistry reg;
    PluginHost host(Opts({}), reg);
    LoadFaulty(host);
    const Call c = Exec(reg, "ProcFault", {8, 0});
    // The engine's own state back before anything waits for a worker.
    ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    ::sigaction(SIGCHLD, &old, nullptr);
    ::unsetenv("GE_PLUGIN_WORKER_ZYGOTE");
    BOOST_REQUIRE_MESSAGE(c.rc == GRAPH_SUCCESS, c.status.message());
    const std::vector<float> seen = Floats(*c.y);
    BOOST_CHECK_MESSAGE(seen[0] == 0.0f, (spawn ? "spawned" : "forked") << " worker: SIGCHLD is ignored");
    BOOST_CHECK_MESSAGE(seen[1] == 0.0f, (spawn ? "spawned" : "forked") << " worker: " << seen[1] << " signals blocked");
  }
}

BOOST_AUTO_TEST_CASE(a_level_raised_after_the_load_reaches_the_worker) {
  TalkativeHost t(ge::LogLevel::kWarn, true);
  auto& sink = t.sink;
  auto& reg = t.reg;
  auto& host = t.host;
  BOOST_CHECK(!sink->Has("plugin", "talkative imported"));  // info, below warn
  ge::SetLogLevel(ge::LogLevel::kInfo);  // as an embedding engine may, at any time
  const Call c = Exec(reg, "ProcTalk", {0.0f});
  BOOST_REQUIRE_MESSAGE(c.rc == GRAPH_SUCCESS, c.status.message());
  BOOST_CHECK_MESSAGE(sink->Has("plugin", "talkative executes mode 0"), sink->All());
  host.UnloadAll();
}

BOOST_AUTO_TEST_CASE(what_a_plugin_writes_on_the_log_socket_is_not_believed) {
  TalkativeHost t(ge::LogLevel::kInfo, true);
  auto& sink = t.sink;
  auto& reg = t.reg;
  auto& host = t.host;
  // A record naming another component is filed as the plugin's, tagged with
  // its name; a byte that is not UTF-8 reaches the sink as \xNN.
  const Call spoof = Exec(reg, "ProcTalk", {4.0f});
  BOOST_REQUIRE_MESSAGE(spoof.rc == GRAPH_SUCCESS, spoof.status.message());
  BOOST_CHECK_MESSAGE(sink->Has("plugin", "[talkative] spoof \\xff!"), sink->All());
  BOOST_CHECK(!sink->Has("engine", "spoof"));
  // A frame never finished: reported once when the worker ends, with the plugin named.
  const Call cut = Exec(reg, "ProcTalk", {5.0f});
  BOOST_REQUIRE_MESSAGE(cut.rc == GRAPH_SUCCESS, cut.status.message());
  const Call after = Exec(reg, "ProcTalk", {0.0f});  // the engine goes on
  BOOST_REQUIRE_MESSAGE(after.rc == GRAPH_SUCCESS, after.status.message());
  host.UnloadAll();
  BOOST_CHECK_MESSAGE(sink->Has("host", "plugin 'talkative'") && sink->Has("host", "ended inside a record"),
                      sink->All());
}
