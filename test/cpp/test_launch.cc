// Annotated launch args from C++: AnnotatedArgsContext (workspaces, launches and
// their errors), KernelCache (in-memory ELF loading, one load per distinct binary,
// specific errors), BlockPool (every block once, crash reporting without killing
// the process), and the engine replaying a C++ AnnotatedArgsOp's plan with the
// addresses of each run. Kernels are built with the system `cc` into bytes.
//
// Boost.Test's own signal handling is turned off in this binary (see main at the
// end): its execution monitor re-installs SIGSEGV/SIGABRT handlers around every
// test case, which would replace the BlockPool crash guard under test.
#define BOOST_TEST_MODULE launch
#define BOOST_TEST_NO_MAIN
#include <boost/test/unit_test.hpp>

#include "test_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "ge/engine/cpu_backend.h"
#include "ge/engine/engine.h"
#include "ge/engine/graph.h"
#include "ge/op/contexts.h"
#include "ge/op/custom_op.h"
#include "ge/op/launch.h"
#include "ge/op/op_registry.h"

namespace fs = std::filesystem;
using namespace ge;

namespace {

using ge_test::Contains;

using ge_test::TempDir;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Builds C source with the system compiler; returns the output's bytes.
std::string BuildC(const std::string& source, const std::string& flags = "-O2 -shared -fPIC") {
  TempDir d;
  std::ofstream(d.path / "k.c") << source;
  const fs::path out = d.path / "k.out";
  const std::string cmd = "cc " + flags + " -o '" + out.string() + "' '" + (d.path / "k.c").string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  if (rc != 0 || !fs::exists(out)) throw std::runtime_error("cc failed: " + cmd);
  return ReadFile(out);
}

const char* kValueSource = R"(
#include <stdint.h>
/* Writes VALUE into *(int*)args[0]. */
void k(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) { *(int*)(uintptr_t)args[0] = VALUE; }
void other(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) { *(int*)(uintptr_t)args[0] = -VALUE; }
)";

// y = 3 * x + 1 (float, chunked by blocks); block 0 appends (x, y, workspace) of
// the call to the record at args[4]: rec[0] = count, then triples.
const char* kRecordSource = R"(
#include <stdint.h>
void record(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  const float* x = (const float*)(uintptr_t)args[0];
  float* y = (float*)(uintptr_t)args[1];
  const uint64_t n = args[3];
  uint64_t* rec = (uint64_t*)(uintptr_t)args[4];
  const uint64_t chunk = (n + block_dim - 1) / block_dim, b = block_idx * chunk, e = b + chunk < n ? b + chunk : n;
  for (uint64_t i = b; i < e; ++i) y[i] = 3.0f * x[i] + 1.0f;
  if (block_idx == 0) {
    const uint64_t r = rec[0]++;
    rec[1 + 3 * r] = args[0];
    rec[2 + 3 * r] = args[1];
    rec[3 + 3 * r] = args[2];
  }
}
void boom(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  volatile int* p = (volatile int*)(uintptr_t)(args[3] * 0 + 8);
  *p = 1;
}
)";

std::string ValueSource(int v) {
  std::string s = kValueSource;
  for (std::size_t pos; (pos = s.find("VALUE")) != std::string::npos;) s.replace(pos, 5, std::to_string(v));
  return s;
}

// The kernels, built once for the whole binary.
struct Kernels {
  std::string value1, value2, record, reloc;
  Kernels()
      : value1(BuildC(ValueSource(1))),
        value2(BuildC(ValueSource(2))),
        record(BuildC(kRecordSource, "-O1 -shared -fPIC")),
        reloc(BuildC(ValueSource(3), "-O2 -c -fPIC")) {}
};
const Kernels& K() {
  static const Kernels k;
  return k;
}

std::shared_ptr<OpSchema> Schema(const std::string& op_type, std::vector<IrInput> in, std::vector<IrOutput> out) {
  auto s = std::make_shared<OpSchema>();
  s->op_type = op_type;
  s->inputs = std::move(in);
  s->outputs = std::move(out);
  return s;
}

KernelLaunch Launch(std::string name = "k", uint32_t block_dim = 1, int64_t stream = 0,
                    std::vector<KernelArgSlot> args = {}) {
  KernelLaunch l;
  l.kernel_name = std::move(name);
  l.kernel_bin = std::make_shared<const std::string>("\x7f" "ELF bytes");
  l.block_dim = block_dim;
  l.stream_id = stream;
  l.args = std::move(args);
  return l;
}

template <typename F>
std::string ThrowsInvalid(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    BOOST_ERROR("expected std::invalid_argument, got " << e.what());
    return "";
  }
  BOOST_ERROR("expected std::invalid_argument, nothing thrown");
  return "";
}

template <typename F>
std::string ThrowsKernelError(F&& f) {
  try {
    f();
  } catch (const KernelError& e) {
    return e.what();
  } catch (const std::exception& e) {
    BOOST_ERROR("expected KernelError, got " << e.what());
    return "";
  }
  BOOST_ERROR("expected KernelError, nothing thrown");
  return "";
}

using Slot = KernelArgSlot;
using Kind = KernelArgSlot::Kind;

}  // namespace

// ---- AnnotatedArgsContext ------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(annotated_args_context)

// x, xs (dynamic: 3 instances), opt (absent) -> ys (dynamic: 2), z
struct CtxFixture {
  std::shared_ptr<OpSchema> schema = Schema(
      "CtxOp", {{"x", IrInputKind::kRequired}, {"xs", IrInputKind::kDynamic}, {"opt", IrInputKind::kOptional}},
      {{"ys", IrOutputKind::kDynamic}, {"z", IrOutputKind::kRequired}});
  RuntimeAttrs attrs;
  AnnotatedArgsContext ctx{*schema,
                           {TensorDesc(Shape{2}, DT_FLOAT), TensorDesc(Shape{3}, DT_FLOAT), TensorDesc(Shape{4}, DT_INT8),
                            TensorDesc(Shape{5}, DT_FLOAT)},
                           InstanceLayout({1, 3, 0}),
                           {TensorDesc(Shape{6}, DT_FLOAT), TensorDesc(Shape{7}, DT_FLOAT), TensorDesc(Shape{8}, DT_INT32)},
                           InstanceLayout({2, 1}),
                           attrs,
                           /*stream_id=*/5};
};

BOOST_FIXTURE_TEST_CASE(flattened_metadata_only_tensors, CtxFixture) {
  BOOST_CHECK_EQUAL(ctx.GetInputNum(), 4u);
  BOOST_CHECK_EQUAL(ctx.GetOutputNum(), 3u);
  BOOST_CHECK_EQUAL(ctx.GetStreamId(), 5u);
  BOOST_CHECK_EQUAL(ctx.InputLayout().Start(1), 1u);
  BOOST_CHECK_EQUAL(ctx.InputLayout().Count(2), 0u);
  BOOST_CHECK_EQUAL(ctx.OutputLayout().Start(1), 2u);
  BOOST_CHECK(ctx.GetInputTensor(2)->GetStorageShape() == Shape({4}));
  BOOST_CHECK_EQUAL(ctx.GetInputTensor(2)->GetDataType(), DT_INT8);
  BOOST_CHECK(ctx.GetOutputTensor(2)->GetStorageShape() == Shape({8}));
  for (std::size_t i = 0; i < 4; ++i) BOOST_CHECK(!ctx.GetInputTensor(i)->HasData());
  for (std::size_t i = 0; i < 3; ++i) BOOST_CHECK(!ctx.GetOutputTensor(i)->HasData());
  BOOST_CHECK(ctx.GetInputTensor(4) == nullptr);
  BOOST_CHECK(ctx.GetOutputTensor(3) == nullptr);
}

BOOST_FIXTURE_TEST_CASE(workspaces, CtxFixture) {
  const gert::WorkspaceAddr none = ctx.MallocWorkSpace(0);
  BOOST_CHECK(none.addr == nullptr);
  BOOST_CHECK_EQUAL(none.index, std::numeric_limits<uint32_t>::max());
  BOOST_CHECK(Contains(ctx.TakeError().message(), "workspace size must be positive"));
  BOOST_CHECK_EQUAL(ctx.WorkspaceCount(), 0u);
  const gert::WorkspaceAddr w0 = ctx.MallocWorkSpace(100);
  const gert::WorkspaceAddr w1 = ctx.MallocWorkSpace(1);
  BOOST_CHECK_EQUAL(w0.index, 0u);
  BOOST_CHECK_EQUAL(w1.index, 1u);
  BOOST_CHECK_EQUAL(w0.addr, ctx.WorkspaceAddress(0));
  BOOST_CHECK_EQUAL(w1.addr, ctx.WorkspaceAddress(1));
  BOOST_CHECK(w0.addr != nullptr && w0.addr != w1.addr);
  BOOST_CHECK_EQUAL(ctx.WorkspaceCount(), 2u);
  BOOST_CHECK((ctx.Plan().workspace_sizes == std::vector<std::size_t>{100, 1}));
}

BOOST_FIXTURE_TEST_CASE(add_launch_errors_leave_the_plan_unchanged, CtxFixture) {
  ctx.MallocWorkSpace(8);
  BOOST_CHECK(Contains(ThrowsInvalid([&] { ctx.AddLaunch(Launch("k", 1, 0)); }), "stream"));
  BOOST_CHECK(Contains(ThrowsInvalid([&] { ctx.AddLaunch(Launch("k", 1, 6)); }), "stream"));
  BOOST_CHECK(Contains(ThrowsInvalid([&] { ctx.AddLaunch(Launch("", 1, 5)); }), "kernel_name"));
  BOOST_CHECK(Contains(ThrowsInvalid([&] { ctx.AddLaunch(Launch("k", 0, 5)); }), "block_dim"));
  KernelLaunch no_bin = Launch("k", 1, 5);
  no_bin.kernel_bin = nullptr;
  BOOST_CHECK(Contains(ThrowsInvalid([&] { ctx.AddLaunch(no_bin); }), "kernel_bin"));
  KernelLaunch empty_bin = Launch("k", 1, 5);
  empty_bin.kernel_bin = std::make_shared<const std::string>();
  BOOST_CHECK(Contains(ThrowsInvalid([&] { ctx.AddLaunch(empty_bin); }), "kernel_bin"));
  BOOST_CHECK(Contains(ThrowsInvalid([&] { ctx.AddLaunch(Launch("k", 1, 5, {{Kind::kInput, 4}})); }), "input"));
  BOOST_CHECK(Contains(ThrowsInvalid([&] { ctx.AddLaunch(Launch("k", 1, 5, {{Kind::kOutput, 3}})); }), "output"));
  BOOST_CHECK(Contains(ThrowsInvalid([&] { ctx.AddLaunch(Launch("k", 1, 5, {{Kind::kWorkspace, 1}})); }), "workspace"));
  BOOST_CHECK(ctx.Plan().launches.empty());
}

BOOST_FIXTURE_TEST_CASE(launches_are_kept_in_order, CtxFixture) {
  const std::size_t w = ctx.MallocWorkSpace(16).index;
  ctx.AddLaunch(Launch("first", 2, 5, {{Kind::kInput, 3}, {Kind::kWorkspace, w}, {Kind::kScalar, ~uint64_t{0}}}));
  ctx.AddLaunch(Launch("second", 7, 5, {{Kind::kWorkspace, w}, {Kind::kOutput, 2}}));
  ctx.AddLaunch(Launch("third", 1, 5));
  TaskPlan plan = ctx.TakePlan();
  BOOST_REQUIRE_EQUAL(plan.launches.size(), 3u);
  BOOST_CHECK_EQUAL(plan.launches[0].kernel_name, "first");
  BOOST_CHECK_EQUAL(plan.launches[1].kernel_name, "second");
  BOOST_CHECK_EQUAL(plan.launches[2].kernel_name, "third");
  BOOST_CHECK_EQUAL(plan.launches[1].block_dim, 7u);
  BOOST_REQUIRE_EQUAL(plan.launches[0].args.size(), 3u);
  BOOST_CHECK(plan.launches[0].args[0].kind == Kind::kInput && plan.launches[0].args[0].value == 3);
  BOOST_CHECK(plan.launches[0].args[2].kind == Kind::kScalar && plan.launches[0].args[2].value == ~uint64_t{0});
  BOOST_CHECK(plan.launches[1].args[1].kind == Kind::kOutput && plan.launches[1].args[1].value == 2);
  BOOST_CHECK((plan.workspace_sizes == std::vector<std::size_t>{16}));
}

BOOST_AUTO_TEST_SUITE_END()

// ---- KernelCache -------------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(kernel_cache)

BOOST_AUTO_TEST_CASE(bytes_that_are_not_elf) {
  KernelCache cache;
  for (const std::string& bin : {std::string("not an ELF object at all"), std::string("\x7f" "EL"), std::string()}) {
    BOOST_CHECK_MESSAGE(Contains(ThrowsKernelError([&] { cache.Resolve(bin, "k"); }), "not an ELF shared object"),
                        "bytes of size " << bin.size());
  }
  // ELF magic, but a relocatable object: refused before dlopen.
  BOOST_CHECK(Contains(ThrowsKernelError([&] { cache.Resolve(K().reloc, "k"); }), "not a shared object"));
  // ELF magic followed by garbage: not a 64-bit little-endian object.
  BOOST_CHECK(Contains(ThrowsKernelError([&] { cache.Resolve(std::string("\x7f" "ELF") + std::string(200, 'x'), "k"); }),
                       "64-bit little-endian"));
  BOOST_CHECK_EQUAL(cache.LoadedBinaries(), 0u);
}

BOOST_AUTO_TEST_CASE(missing_symbol) {
  KernelCache cache;
  const std::string msg = ThrowsKernelError([&] { cache.Resolve(K().value1, "no_such_kernel"); });
  BOOST_CHECK_MESSAGE(Contains(msg, "kernel 'no_such_kernel' not found"), msg);
  BOOST_CHECK_EQUAL(cache.LoadedBinaries(), 1u);  // the binary itself loaded
  BOOST_CHECK(cache.Resolve(K().value1, "k") != nullptr);
  BOOST_CHECK_EQUAL(cache.LoadedBinaries(), 1u);
}

BOOST_AUTO_TEST_CASE(same_bytes_load_once) {
  KernelCache cache;
  const std::string copy1 = K().value1, copy2 = K().value1;  // equal bytes, distinct strings
  CpuKernelFn a = cache.Resolve(copy1, "k");
  CpuKernelFn b = cache.Resolve(copy2, "k");
  CpuKernelFn o = cache.Resolve(copy1, "other");
  BOOST_CHECK(a == b);
  BOOST_CHECK(a != o);
  BOOST_CHECK_EQUAL(cache.LoadedBinaries(), 1u);
  int out = 0;
  const uint64_t args[] = {reinterpret_cast<uintptr_t>(&out)};
  a(0, 1, args);
  BOOST_CHECK_EQUAL(out, 1);
  o(0, 1, args);
  BOOST_CHECK_EQUAL(out, -1);
}

// Loading runs guarded on the calling thread, which needs an alternate signal
// stack: a thread that has one (an embedding program's, a sanitizer's) keeps
// it; a thread without one gets ours only while it lives, and its setting
// (none) is what the next owner of the thread would see.
BOOST_AUTO_TEST_CASE(a_thread_keeps_its_own_alternate_signal_stack) {
  std::vector<char> mine(1 << 16);
  void* seen_sp = nullptr;
  int seen_flags = -1;
  std::thread t([&] {
    stack_t ss{};
    ss.ss_sp = mine.data();
    ss.ss_size = mine.size();
    BOOST_REQUIRE_EQUAL(sigaltstack(&ss, nullptr), 0);
    KernelCache cache;
    cache.Resolve(K().value1, "k");
    stack_t now{};
    sigaltstack(nullptr, &now);
    seen_sp = now.ss_sp;
    seen_flags = now.ss_flags;
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, nullptr);
  });
  t.join();
  BOOST_CHECK(seen_sp == mine.data());
  BOOST_CHECK_EQUAL(seen_flags & SS_DISABLE, 0);
}

BOOST_AUTO_TEST_CASE(a_thread_without_an_alternate_stack_gets_one_while_guarded_code_may_run) {
  bool had_before = true, had_after = false;
  std::thread t([&] {
    stack_t before{};
    sigaltstack(nullptr, &before);
    had_before = !(before.ss_flags & SS_DISABLE);
    KernelCache cache;
    cache.Resolve(K().value1, "k");
    stack_t after{};
    sigaltstack(nullptr, &after);
    had_after = !(after.ss_flags & SS_DISABLE) && after.ss_size >= (1u << 16);
  });
  t.join();  // at the thread's exit ours is restored to "none" and freed (make sanitize checks the free)
  if (!had_before) BOOST_CHECK(had_after);
}

BOOST_AUTO_TEST_CASE(concurrent_resolves_of_the_same_bytes_load_once) {
  KernelCache cache;
  std::vector<std::thread> threads;
  std::vector<CpuKernelFn> fns(8);
  for (int i = 0; i < 8; ++i) threads.emplace_back([&, i] { fns[i] = cache.Resolve(K().value2, "k"); });
  for (auto& t : threads) t.join();
  for (CpuKernelFn f : fns) BOOST_CHECK(f == fns[0]);
  BOOST_CHECK_EQUAL(cache.LoadedBinaries(), 1u);
}

BOOST_AUTO_TEST_CASE(different_binaries_with_the_same_kernel_name) {
  KernelCache cache;
  CpuKernelFn one = cache.Resolve(K().value1, "k");
  CpuKernelFn two = cache.Resolve(K().value2, "k");
  BOOST_CHECK(one != two);
  BOOST_CHECK_EQUAL(cache.LoadedBinaries(), 2u);
  int out = 0;
  const uint64_t args[] = {reinterpret_cast<uintptr_t>(&out)};
  one(0, 1, args);
  BOOST_CHECK_EQUAL(out, 1);
  two(0, 1, args);
  BOOST_CHECK_EQUAL(out, 2);
  // A second cache loads its own copies.
  KernelCache other;
  other.Resolve(K().value1, "k");
  BOOST_CHECK_EQUAL(other.LoadedBinaries(), 1u);
  BOOST_CHECK_EQUAL(cache.LoadedBinaries(), 2u);
}

BOOST_AUTO_TEST_CASE(loaded_from_memory_without_files) {
  K();  // build the kernels before watching the directories
  TempDir tmp, cwd;
  const char* old_tmp = std::getenv("TMPDIR");
  const std::string saved_tmp = old_tmp ? old_tmp : "";
  const fs::path saved_cwd = fs::current_path();
  ::setenv("TMPDIR", tmp.path.c_str(), 1);
  fs::current_path(cwd.path);
  std::string maps;
  {
    KernelCache cache;
    CpuKernelFn f = cache.Resolve(K().value1 + std::string(16, '\0'), "k");  // fresh bytes: a new load
    BOOST_CHECK(f != nullptr);
    maps = ReadFile("/proc/self/maps");
  }
  fs::current_path(saved_cwd);
  if (old_tmp) ::setenv("TMPDIR", saved_tmp.c_str(), 1); else ::unsetenv("TMPDIR");
  BOOST_CHECK(tmp.List().empty());
  BOOST_CHECK(cwd.List().empty());
  BOOST_CHECK_MESSAGE(Contains(maps, "memfd:ge-kernel"), "no memfd mapping in /proc/self/maps");
  BOOST_CHECK(!Contains(maps, tmp.path.string()));
}

BOOST_AUTO_TEST_SUITE_END()

// ---- BlockPool ---------------------------------------------------------------------------------------

namespace {

// args[0]: std::atomic<int>[block_dim] counters; args[1]: the block that
// crashes (or ~0); args[2]: 1 = SIGSEGV, 2 = SIGABRT; args[3]: a null address;
// args[4]: std::atomic<uint32_t> holding the block_dim seen.
// Crashes on purpose (a null store or abort in the chosen block): UBSan's null
// check is off here so that `make sanitize` sees the crash the guard reports.
__attribute__((no_sanitize("null"))) void CountingKernel(uint32_t block_idx, uint32_t block_dim,
                                                           const uint64_t* args) {
  auto* counts = reinterpret_cast<std::atomic<int>*>(args[0]);
  reinterpret_cast<std::atomic<uint32_t>*>(args[4])->store(block_dim);
  if (block_idx == args[1]) {
    if (args[2] == 1) *reinterpret_cast<volatile int*>(args[3]) = 1;
    if (args[2] == 2) std::abort();
  }
  counts[block_idx].fetch_add(1);
}

struct PoolRun {
  std::vector<std::atomic<int>> counts;
  std::atomic<uint32_t> dim_seen{0};
  std::optional<std::string> crash;
  uint64_t args[5];  // a member: blocks of an abandoned pool may still read it after Run returns
  PoolRun(BlockPool& pool, uint32_t block_dim, uint64_t crash_block = ~uint64_t{0}, uint64_t how = 0)
      : counts(block_dim),
        args{reinterpret_cast<uintptr_t>(counts.data()), crash_block, how, 0, reinterpret_cast<uintptr_t>(&dim_seen)} {
    for (auto& c : counts) c.store(0);
    crash = pool.Run(&CountingKernel, block_dim, args);
  }
  // Every block ran exactly once, except `skip`, which ran zero times.
  bool EachOnce(uint64_t skip = ~uint64_t{0}) const {
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (counts[i].load() != (i == skip ? 0 : 1)) return false;
    }
    return true;
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(block_pool)

BOOST_AUTO_TEST_CASE(every_block_runs_exactly_once) {
  BlockPool machine;  // sized to the machine
  BlockPool four(4);
  BOOST_CHECK_GE(machine.Threads(), 1u);
  BOOST_CHECK_EQUAL(four.Threads(), 4u);
  for (BlockPool* pool : {&machine, &four}) {
    for (uint32_t dim : {1u, 2u, 7u, 64u}) {
      for (int rep = 0; rep < 3; ++rep) {
        PoolRun r(*pool, dim);
        BOOST_CHECK_MESSAGE(!r.crash, "unexpected crash: " << r.crash.value_or(""));
        BOOST_CHECK_MESSAGE(r.EachOnce(), "block_dim " << dim << " on " << pool->Threads() << " thread(s)");
        BOOST_CHECK_EQUAL(r.dim_seen.load(), dim);
      }
    }
  }
}

// After a crash the pool is abandoned (the crashed block may have held a lock
// the others wait for): the crash is reported at once, later runs are refused,
// and a new pool works.
BOOST_AUTO_TEST_CASE(crashing_blocks_are_reported_and_the_pool_is_abandoned) {
  struct Case {
    uint32_t dim;
    uint64_t block;
    uint64_t how;
    const char* signal;
  };
  for (const Case& c : {Case{1, 0, 1, "SIGSEGV"}, Case{1, 0, 2, "SIGABRT"}, Case{7, 3, 1, "SIGSEGV"},
                        Case{7, 6, 2, "SIGABRT"}, Case{64, 0, 1, "SIGSEGV"}, Case{64, 41, 2, "SIGABRT"}}) {
    BlockPool pool(4);
    PoolRun good(pool, c.dim);
    BOOST_CHECK(!good.crash);
    BOOST_CHECK(good.EachOnce());
    // The crashed run is kept for the process's life: the abandoned pool's other
    // blocks may still be running with its arguments and counters.
    static std::vector<std::unique_ptr<PoolRun>> abandoned_runs;
    abandoned_runs.push_back(std::make_unique<PoolRun>(pool, c.dim, c.block, c.how));
    const PoolRun& bad = *abandoned_runs.back();
    BOOST_REQUIRE_MESSAGE(bad.crash.has_value(), "no crash reported for " << c.signal << " in block " << c.block);
    BOOST_CHECK_MESSAGE(Contains(*bad.crash, c.signal), *bad.crash);
    BOOST_CHECK_MESSAGE(Contains(*bad.crash, "block " + std::to_string(c.block)), *bad.crash);
    BOOST_CHECK(pool.Abandoned());
    PoolRun after(pool, c.dim);
    BOOST_CHECK_MESSAGE(after.crash && Contains(*after.crash, "abandoned"), "a run after a crash must be refused");
  }
}

BOOST_AUTO_TEST_CASE(a_crash_outside_a_kernel_still_kills_the_process) {
  BlockPool pool(2);  // handlers installed
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    // The address is read through a volatile pointer: the compiler cannot see
    // (nor warn about) the write to page zero.
    volatile int* volatile bad = reinterpret_cast<volatile int*>(static_cast<uintptr_t>(8));
    *bad = 1;  // not in a kernel
    ::_exit(0);
  }
  int status = 0;
  BOOST_REQUIRE_EQUAL(::waitpid(pid, &status, 0), pid);
  BOOST_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- the engine with a C++ AnnotatedArgsOp -------------------------------------------------------

namespace {

struct PlanLog {
  int declares = 0;
  std::string kernel = "record";
  std::string bin;
  bool declare_nothing = false;
  std::vector<uint64_t> record = std::vector<uint64_t>(1 + 3 * 64, 0);
};

// y = 3x + 1 through the `record` kernel; slots: x, y, a 32-byte workspace, n, the record.
class PlanOp final : public CapabilityReportingOp, public AnnotatedArgsOp, public InferMetaOp {
 public:
  PlanOp(std::shared_ptr<const OpSchema> s, std::shared_ptr<PlanLog> log) : schema_(std::move(s)), log_(std::move(log)) {}
  uint32_t GetCapabilities() const noexcept override {
    return CustomOpCapability::kAnnotatedArgs | CustomOpCapability::kInferMeta;
  }
  const OpSchema& GetSchema() const noexcept override { return *schema_; }
  graphStatus InferMeta(InferMetaContext* ctx) override {
    ctx->SetOutputs({*ctx->GetInputDesc(0)}, InstanceLayout({1}));
    return GRAPH_SUCCESS;
  }
  graphStatus DeclareLaunchArgs(gert::AnnotatedArgsContext& ctx) override {
    ++log_->declares;
    if (log_->declare_nothing) return GRAPH_SUCCESS;
    // Declared through GE's API: MallocWorkSpace, AnnotatedKernelArgs, AddLaunch.
    const gert::WorkspaceAddr w = ctx.MallocWorkSpace(32);
    if (w.addr == nullptr) return GRAPH_FAILED;
    gert::AnnotatedKernelArgs args(gert::InputAddr{0, nullptr}, gert::OutputAddr{0, nullptr}, w,
                                   static_cast<uint64_t>(ctx.GetInputTensor(0)->GetShapeSize()),
                                   static_cast<uint64_t>(reinterpret_cast<uintptr_t>(log_->record.data())));
    gert::AnnotatedKernelLaunchInfo info;
    info.kernel_name = log_->kernel.c_str();
    info.kernel_bin = log_->bin.data();
    info.kernel_bin_size = log_->bin.size();
    info.block_dim = 3;
    info.stream_id = ctx.GetStreamId();
    return ctx.AddLaunch(info, std::move(args));  // a refusal leaves its reason in the error slot
  }

 private:
  std::shared_ptr<const OpSchema> schema_;
  std::shared_ptr<PlanLog> log_;
};

struct EngineFixture {
  OpRegistry registry;
  std::shared_ptr<PlanLog> log = std::make_shared<PlanLog>();
  EngineFixture() {
    BOOST_REQUIRE(RegisterBuiltinOps(registry).ok());
    log->bin = K().record;
    auto s = Schema("PlanCpp", {{"x", IrInputKind::kRequired}}, {{"y", IrOutputKind::kRequired}});
    auto op = std::make_shared<PlanOp>(s, log);
    OpRegistration r;
    r.op_type = s->op_type;
    r.schema = s;
    r.source = "test_launch.cc";
    r.capabilities = op->GetCapabilities();
    r.creator = [op]() { return op; };
    BOOST_REQUIRE(registry.Register(r).ok());
  }
};

const char* kPlanGraph = R"({
  "inputs": [{"name": "x", "dtype": "float32", "shape": [7], "data": [0, 1, 2, 3, -4, 5.5, 6]}],
  "nodes": [{"name": "n0", "op_type": "PlanCpp", "inputs": ["x"]},
            {"name": "n1", "op_type": "PlanCpp", "inputs": ["n0:0"]},
            {"name": "r", "op_type": "ReluCpp", "inputs": ["n1:0"]}],
  "outputs": ["n0:0", "n1:0", "r:0"]
})";

const CompiledNode& NodeNamed(const CompiledGraph& cg, const std::string& name) {
  for (const auto& n : cg.nodes) {
    if (n.stats.name == name) return n;
  }
  throw std::runtime_error("no node " + name);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(engine_plan)

BOOST_FIXTURE_TEST_CASE(plan_is_declared_once_and_replayed_with_each_runs_addresses, EngineFixture) {
  Graph g = ParseGraph(kPlanGraph, "plan.json", ".");
  Engine engine(registry);
  CompiledGraph cg = engine.Compile(g);
  BOOST_CHECK_EQUAL(log->declares, 2);  // once per node
  BOOST_CHECK_EQUAL(cg.kernels->LoadedBinaries(), 1u);  // both nodes share the binary
  const float xs[] = {0, 1, 2, 3, -4, 5.5f, 6};
  int runs = 0;
  for (int repeat : {4, 1, 3}) {
    const uint64_t before = log->record[0];
    RunResult r = engine.Run(cg, repeat);
    runs += repeat;
    BOOST_CHECK_EQUAL(log->declares, 2);  // runs never declare
    BOOST_REQUIRE_EQUAL(log->record[0], before + 2 * repeat);
    const CompiledNode& n0 = NodeNamed(cg, "n0");
    const CompiledNode& n1 = NodeNamed(cg, "n1");
    BOOST_CHECK_EQUAL(n0.stats.kernel_launches, static_cast<uint64_t>(runs));
    BOOST_CHECK_EQUAL(n1.stats.kernel_launches, static_cast<uint64_t>(runs));
    BOOST_CHECK_EQUAL(n0.stats.declare_calls, 1u);
    BOOST_CHECK_EQUAL(n0.stats.execute_calls, 0u);
    // Each run: n1 reads the address n0 wrote; the workspaces are per node and kept.
    const uint64_t* rec = log->record.data() + 1;
    for (uint64_t i = before; i < before + 2 * repeat; i += 2) {
      const uint64_t *a = rec + 3 * i, *b = rec + 3 * (i + 1);
      BOOST_CHECK(a[0] != 0 && a[1] != 0 && a[2] != 0);
      BOOST_CHECK_EQUAL(b[0], a[1]);
      BOOST_CHECK(a[2] != b[2]);
      BOOST_CHECK_EQUAL(a[2], rec[0 + 2]);      // n0's workspace: the same in every run
      BOOST_CHECK_EQUAL(b[2], rec[3 + 2]);      // n1's too
      BOOST_CHECK_EQUAL(a[2] % 64, 0u);
    }
    // The last run's output addresses are the tensors returned.
    const uint64_t* last0 = rec + 3 * (before + 2 * repeat - 2);
    const uint64_t* last1 = rec + 3 * (before + 2 * repeat - 1);
    BOOST_CHECK_EQUAL(last0[1], reinterpret_cast<uintptr_t>(r.outputs.at("n0:0").GetAddr()));
    BOOST_CHECK_EQUAL(last1[1], reinterpret_cast<uintptr_t>(r.outputs.at("n1:0").GetAddr()));
    for (int i = 0; i < 7; ++i) {
      const float y0 = 3 * xs[i] + 1, y1 = 3 * y0 + 1;
      BOOST_CHECK_EQUAL(r.outputs.at("n0:0").Data<float>()[i], y0);
      BOOST_CHECK_EQUAL(r.outputs.at("n1:0").Data<float>()[i], y1);
      BOOST_CHECK_EQUAL(r.outputs.at("r:0").Data<float>()[i], y1 > 0 ? y1 : 0.0f);
    }
  }
  // A new compilation declares again (one task-plan lifecycle per compilation).
  CompiledGraph again = engine.Compile(g);
  BOOST_CHECK_EQUAL(log->declares, 4);
  engine.Run(again, 1);
  BOOST_CHECK_EQUAL(log->declares, 4);
}

BOOST_FIXTURE_TEST_CASE(missing_kernel_fails_the_compile_naming_node_and_kernel, EngineFixture) {
  log->kernel = "not_there";
  Graph g = ParseGraph(kPlanGraph, "plan.json", ".");
  Engine engine(registry);
  try {
    engine.Compile(g);
    BOOST_ERROR("Compile accepted a missing kernel");
  } catch (const EngineError& e) {
    BOOST_CHECK_EQUAL(e.node(), "n0");
    BOOST_CHECK_MESSAGE(Contains(e.what(), "'n0'") && Contains(e.what(), "kernel 'not_there'") &&
                            Contains(e.what(), "not found"),
                        e.what());
  }
}

BOOST_FIXTURE_TEST_CASE(bytes_that_are_not_elf_fail_the_compile, EngineFixture) {
  log->bin = "definitely not a shared object";
  Graph g = ParseGraph(kPlanGraph, "plan.json", ".");
  Engine engine(registry);
  try {
    engine.Compile(g);
    BOOST_ERROR("Compile accepted bytes that are not ELF");
  } catch (const EngineError& e) {
    BOOST_CHECK_EQUAL(e.node(), "n0");
    BOOST_CHECK_MESSAGE(Contains(e.what(), "not an ELF shared object") && Contains(e.what(), "kernel 'record'"),
                        e.what());
  }
}

// A crashing kernel fails the run with a fatal error naming the node and the
// kernel; that engine's pool is abandoned (later runs are refused), and a new
// engine works.
BOOST_FIXTURE_TEST_CASE(crashing_kernel_is_fatal_for_its_engine, EngineFixture) {
  log->kernel = "boom";
  Graph g = ParseGraph(kPlanGraph, "plan.json", ".");
  Engine engine(registry);
  CompiledGraph bad = engine.Compile(g);
  try {
    engine.Run(bad, 2);
    BOOST_ERROR("Run survived a crashing kernel without an error");
  } catch (const EngineError& e) {
    BOOST_CHECK_EQUAL(e.node(), "n0");
    BOOST_CHECK(e.fatal());
    BOOST_CHECK_MESSAGE(Contains(e.what(), "kernel 'boom' crashed") && Contains(e.what(), "SIGSEGV"), e.what());
  }
  try {
    engine.Run(bad, 1);
    BOOST_ERROR("an abandoned pool ran again");
  } catch (const EngineError& e) {
    BOOST_CHECK_MESSAGE(Contains(e.what(), "abandoned"), e.what());
  }
  log->kernel = "record";
  Engine fresh(registry);
  CompiledGraph good = fresh.Compile(g);
  RunResult r = fresh.Run(good, 2);
  BOOST_CHECK_EQUAL(r.outputs.at("n0:0").Data<float>()[1], 4.0f);
}

BOOST_FIXTURE_TEST_CASE(a_declaration_without_launch_is_an_error, EngineFixture) {
  log->declare_nothing = true;
  Graph g = ParseGraph(kPlanGraph, "plan.json", ".");
  Engine engine(registry);
  try {
    engine.Compile(g);
    BOOST_ERROR("Compile accepted a task plan without launches (its outputs would never be written)");
  } catch (const EngineError& e) {
    BOOST_CHECK_EQUAL(e.node(), "n0");
    BOOST_CHECK_MESSAGE(Contains(e.what(), "no launch"), e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()

// Boost.Test's signal handlers would replace the crash guard under test.
int main(int argc, char* argv[]) {
  std::vector<char*> args(argv, argv + argc);
  static char no_catch[] = "--catch_system_errors=no";
  args.push_back(no_catch);
  return boost::unit_test::unit_test_main(&init_unit_test, static_cast<int>(args.size()), args.data());
}
