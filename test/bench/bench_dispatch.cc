// Dispatch benchmarks. Their goals are ratios to a peer measured in the same
// run (share/docs/host-design.md, "Targets"); `make bench` prints them through
// test/bench/bench_dispatch_ratios.py:
//  * EagerDispatch: C++ -> Python execute of a no-op op (2 inputs, 1 output,
//    1 int attr) through the registry's op object, as an engine calls it.
//    Goals: at most 4x BarePythonCall, and at least 3x faster than the same
//    no-op as a torch.library op with a Python kernel (test/bench/bench_torch_peer.py).
//  * BarePythonCall: the same execute function called from C++ with
//    PyObject_Call on prebuilt arguments, in the same run: the floor.
//  * InterpreterSwitch: entering and leaving a sub-interpreter (guard only).
//  * SubinterpreterPlugin: wall time and RSS per loaded sub-interpreter plugin
//    (goal: at most 1.76 MiB).
// Figures, not pass/fail.
#include <benchmark/benchmark.h>

#include <boost/filesystem.hpp>
#include <fstream>
#include <unistd.h>

#include "ge/host/plugin_host.h"
#include "ge/op/op_registry.h"
#include "interpreter.h"

namespace fs = boost::filesystem;

namespace {

struct Fixture {
  ge::OpRegistry registry;
  std::unique_ptr<ge::host::PluginHost> host;
  std::shared_ptr<ge::BaseCustomOp> op;
  std::shared_ptr<const ge::OpSchema> schema;
  Fixture() {
    ge::host::HostOptions opts;
    opts.opp_paths = {std::string(GE_SOURCE_DIR) + "/plugins/bench"};
    opts.use_env_opp_path = false;
    host = std::make_unique<ge::host::PluginHost>(opts, registry);
    host->LoadAll();
    op = registry.Create("NoopCustom");
    if (!op) throw std::runtime_error("NoopCustom did not load");
    schema = registry.Find("NoopCustom")->schema;
  }
};

Fixture& Get() {
  static Fixture f;
  return f;
}

void BM_EagerDispatch(benchmark::State& state) {
  Fixture& f = Get();
  auto* ex = ge::CustomOpCast<ge::EagerExecuteOp>(f.op);
  ge::Tensor a = ge::Tensor::Allocate(ge::TensorDesc(ge::Shape{4}, ge::DT_FLOAT));
  ge::Tensor b = ge::Tensor::Allocate(ge::TensorDesc(ge::Shape{4}, ge::DT_FLOAT));
  ge::RuntimeAttrs attrs({ge::AttrValue(int64_t{3})});
  // The node's layouts are built once, as the engine builds them per node
  // (framework/src/engine/engine.cc); each call's context copies them.
  const ge::InstanceLayout in_layout({1, 1}), out_layout({1});
  const uint64_t calls0 = f.host->PythonCalls();
  for (auto _ : state) {
    ge::EagerOpExecutionContext ctx(*f.schema, {&a, &b}, in_layout, attrs, out_layout);
    if (ex->Execute(&ctx) != ge::GRAPH_SUCCESS) {
      state.SkipWithError(ctx.TakeError().message().c_str());
      break;
    }
  }
  state.counters["python_calls"] = static_cast<double>(f.host->PythonCalls() - calls0);
}
BENCHMARK(BM_EagerDispatch)->Repetitions(5)->ReportAggregatesOnly(true)->DisplayAggregatesOnly(true);

void BM_CompileDispatch(benchmark::State& state) {
  Fixture& f = Get();
  auto* comp = ge::CustomOpCast<ge::CompilableOp>(f.op);
  const ge::TensorDesc d(ge::Shape{4}, ge::DT_FLOAT);
  ge::RuntimeAttrs attrs({ge::AttrValue(int64_t{3})});
  std::map<std::string, std::string> options{{"k", "v"}};
  auto platform = std::make_shared<const ge::PlatformInfos>(ge::PlatformInfos::Host());
  for (auto _ : state) {
    ge::OpCompileContext ctx(*f.schema, {d, d}, ge::InstanceLayout({1, 1}), {d}, ge::InstanceLayout({1}), attrs,
                             options, [platform]() { return platform; });
    if (comp->Compile(&ctx) != ge::GRAPH_SUCCESS) {
      state.SkipWithError(ctx.TakeError().message().c_str());
      break;
    }
  }
}
BENCHMARK(BM_CompileDispatch)->Repetitions(3)->ReportAggregatesOnly(true)->DisplayAggregatesOnly(true);

void BM_BarePythonCall(benchmark::State& state) {
  Get();
  auto rt = ge::host::PythonRuntime::Current();
  // The same plugin, imported the way the host imports it, into a
  // sub-interpreter of its own; then execute is called with prebuilt args.
  auto sub = ge::host::Interpreter::NewSub(rt, "bench-bare");
  {
    ge::host::InterpreterGuard guard(*sub);
    const std::string path = std::string(GE_SOURCE_DIR) + "/plugins/bench/noop";
    PyObject* loader = PyImport_ImportModule("ge._loader");
    PyObject* mod = loader ? PyObject_CallMethod(loader, "import_plugin", "sssO", "noop", "noop", path.c_str(), Py_True)
                           : nullptr;
    PyObject* cls = mod ? PyObject_GetAttrString(mod, "Noop") : nullptr;
    PyObject* inst = cls ? PyObject_CallNoArgs(cls) : nullptr;
    PyObject* method = inst ? PyObject_GetAttrString(inst, "execute") : nullptr;
    if (method == nullptr) {
      PyErr_Print();
      state.SkipWithError("cannot import the noop plugin");
    } else {
      PyObject* args = Py_BuildValue("(OO)", Py_None, Py_None);
      PyObject* kwargs = Py_BuildValue("{s:i}", "alpha", 3);
      for (auto _ : state) {
        PyObject* res = PyObject_Call(method, args, kwargs);
        benchmark::DoNotOptimize(res);
        Py_XDECREF(res);
      }
      Py_XDECREF(args);
      Py_XDECREF(kwargs);
    }
    for (PyObject* o : {method, inst, cls, mod, loader}) Py_XDECREF(o);
  }
  sub->End();
}
BENCHMARK(BM_BarePythonCall)->Repetitions(5)->ReportAggregatesOnly(true)->DisplayAggregatesOnly(true);

void BM_InterpreterSwitch(benchmark::State& state) {
  Get();
  auto sub = ge::host::Interpreter::NewSub(ge::host::PythonRuntime::Current(), "bench-switch");
  for (auto _ : state) {
    ge::host::InterpreterGuard g(*sub);
    benchmark::ClobberMemory();
  }
  sub->End();
}
BENCHMARK(BM_InterpreterSwitch)->Repetitions(3)->ReportAggregatesOnly(true)->DisplayAggregatesOnly(true);

long RssKiB() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Loads N copies of the noop plugin (distinct names) in sub-interpreters and
// reports time and RSS growth per plugin.
void BM_SubinterpreterPlugin(benchmark::State& state) {
  Get();  // runtime and first-time imports already paid
  const int n = static_cast<int>(state.range(0));
  fs::path dir = fs::temp_directory_path() / fs::unique_path("ge-bench-%%%%%%");
  fs::create_directories(dir);
  for (int i = 0; i < n; ++i) {
    fs::path pkg = dir / ("noop_copy_" + std::to_string(i));
    fs::create_directories(pkg);
    std::ifstream src(std::string(GE_SOURCE_DIR) + "/plugins/bench/noop/__init__.py");
    std::ofstream dst((pkg / "__init__.py").string());
    std::string text((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
    const std::string from = "op_type=\"NoopCustom\"", to = "op_type=\"NoopCustom" + std::to_string(i) + "\"";
    for (std::size_t p; (p = text.find(from)) != std::string::npos;) text.replace(p, from.size(), to);
    dst << text;
  }
  double seconds = 0, rss_kib = 0;
  for (auto _ : state) {
    ge::OpRegistry registry;
    ge::host::HostOptions opts;
    opts.opp_paths = {dir.string()};
    opts.use_env_opp_path = false;
    const long rss0 = RssKiB();
    const auto t0 = std::chrono::steady_clock::now();
    ge::host::PluginHost host(opts, registry);
    const auto& reports = host.LoadAll();
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rss_kib = static_cast<double>(RssKiB() - rss0);
    for (const auto& r : reports) {
      if (!r.ok()) state.SkipWithError(("plugin failed: " + r.error.OneLine()).c_str());
    }
  }
  fs::remove_all(dir);
  state.counters["ms_per_plugin"] = 1e3 * seconds / n;
  state.counters["MiB_RSS_per_plugin"] = rss_kib / 1024.0 / n;
}
BENCHMARK(BM_SubinterpreterPlugin)->Arg(20)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
