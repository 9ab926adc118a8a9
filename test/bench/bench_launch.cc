// Annotated-args benchmarks (share/docs/host-design.md, "Targets": 0 Python calls per run; host overhead
// per launch <= 1 us on top of the kernel):
//  * KernelDirect: the kernel function called directly from C++.
//  * ReplayLaunch: what the engine does per launch of a cached task plan:
//    patch the argument words, run block_dim=1 through the BlockPool (with its
//    crash guard). Same kernel, same run.
//  * SampleGraph/TaskPlan vs SampleGraph/Eager: Engine::Run of
//    share/examples/kernel_block.json and of its all-eager twin.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "ge/engine/cpu_backend.h"
#include "ge/engine/engine.h"
#include "ge/host/plugin_host.h"

namespace {

const char* kKernelSource = R"(#include <stdint.h>
void axpy16(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  const float* x = (const float*)(uintptr_t)args[0];
  float* z = (float*)(uintptr_t)args[1];
  for (int i = 0; i < 16; ++i) z[i] = 2.0f * x[i] + 1.0f;
}
)";

std::string BuildKernel() {
  char dir[] = "/tmp/ge-bench-kernel-XXXXXX";
  if (mkdtemp(dir) == nullptr) return {};
  const std::string src = std::string(dir) + "/k.c", lib = std::string(dir) + "/k.so";
  std::ofstream(src) << kKernelSource;
  const std::string cmd = "cc -O2 -shared -fPIC -o " + lib + " " + src;
  std::string bytes;
  if (std::system(cmd.c_str()) == 0) {
    std::ifstream in(lib, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  std::remove(src.c_str());
  std::remove(lib.c_str());
  rmdir(dir);
  return bytes;
}

struct KernelFixture {
  ge::KernelCache cache;
  ge::BlockPool pool;
  ge::CpuKernelFn fn = nullptr;
  alignas(64) float x[16] = {};
  alignas(64) float z[16] = {};
  KernelFixture() {
    const std::string bin = BuildKernel();
    if (!bin.empty()) fn = cache.Resolve(bin, "axpy16");
  }
};

KernelFixture& Kernel() {
  static KernelFixture f;
  return f;
}

void BM_KernelDirect(benchmark::State& state) {
  auto& k = Kernel();
  if (!k.fn) return state.SkipWithError("cannot build the kernel with cc");
  uint64_t args[2] = {reinterpret_cast<uintptr_t>(k.x), reinterpret_cast<uintptr_t>(k.z)};
  for (auto _ : state) {
    k.fn(0, 1, args);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_KernelDirect)->Repetitions(5)->ReportAggregatesOnly(true)->DisplayAggregatesOnly(true);

void BM_ReplayLaunch(benchmark::State& state) {
  auto& k = Kernel();
  if (!k.fn) return state.SkipWithError("cannot build the kernel with cc");
  std::vector<ge::KernelArgSlot> slots{{ge::KernelArgSlot::Kind::kInput, 0}, {ge::KernelArgSlot::Kind::kOutput, 0}};
  std::vector<uint64_t> words(2);
  void* in_addr = k.x;
  void* out_addr = k.z;
  for (auto _ : state) {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      words[i] = reinterpret_cast<uintptr_t>(slots[i].kind == ge::KernelArgSlot::Kind::kInput ? in_addr : out_addr);
    }
    auto crash = k.pool.Run(k.fn, 1, words.data());
    benchmark::DoNotOptimize(crash);
  }
}
BENCHMARK(BM_ReplayLaunch)->Repetitions(5)->ReportAggregatesOnly(true)->DisplayAggregatesOnly(true);

void BM_PoolLaunch4Blocks(benchmark::State& state) {
  auto& k = Kernel();
  if (!k.fn) return state.SkipWithError("cannot build the kernel with cc");
  uint64_t args[2] = {reinterpret_cast<uintptr_t>(k.x), reinterpret_cast<uintptr_t>(k.z)};
  for (auto _ : state) {
    auto crash = k.pool.Run(k.fn, 4, args);
    benchmark::DoNotOptimize(crash);
  }
  state.counters["pool_threads"] = k.pool.Threads();
}
BENCHMARK(BM_PoolLaunch4Blocks)->Repetitions(3)->ReportAggregatesOnly(true)->DisplayAggregatesOnly(true);

struct GraphFixture {
  ge::OpRegistry registry;
  std::unique_ptr<ge::host::PluginHost> host;
  GraphFixture() {
    ge::RegisterBuiltinOps(registry);
    ge::host::HostOptions opts;
    opts.opp_paths = {std::string(GE_SOURCE_DIR) + "/plugins/samples"};
    opts.use_env_opp_path = false;
    host = std::make_unique<ge::host::PluginHost>(opts, registry);
    host->LoadAll();
  }
};

GraphFixture& Graphs() {
  static GraphFixture f;
  return f;
}

void RunSampleGraph(benchmark::State& state, const char* file) {
  auto& g = Graphs();
  ge::Graph graph = ge::LoadGraph(std::string(GE_SOURCE_DIR) + "/share/examples/" + file);
  ge::Engine engine(g.registry);
  ge::CompiledGraph compiled = engine.Compile(graph);
  const uint64_t calls0 = g.host->PythonCalls();
  for (auto _ : state) {
    auto result = engine.Run(compiled, 1);
    benchmark::DoNotOptimize(result);
  }
  state.counters["python_calls_per_run"] =
      static_cast<double>(g.host->PythonCalls() - calls0) / static_cast<double>(state.iterations());
}

void BM_SampleGraph_TaskPlan(benchmark::State& state) { RunSampleGraph(state, "kernel_block.json"); }
void BM_SampleGraph_Eager(benchmark::State& state) { RunSampleGraph(state, "kernel_block_eager.json"); }
BENCHMARK(BM_SampleGraph_TaskPlan)->Unit(benchmark::kMicrosecond)->Repetitions(3)->ReportAggregatesOnly(true)->DisplayAggregatesOnly(true);
BENCHMARK(BM_SampleGraph_Eager)->Unit(benchmark::kMicrosecond)->Repetitions(3)->ReportAggregatesOnly(true)->DisplayAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
