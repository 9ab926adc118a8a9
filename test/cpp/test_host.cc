// The embedded Python host: loading, reports, isolation, teardown, load
// failures, Python errors in callbacks, and concurrent calls from C++ threads.
//
// One executable: CPython initializes once per process. The plugins live under
// plugins/testing/host/<case>/, one folder per case.
#define BOOST_TEST_MODULE host
#include <boost/test/unit_test.hpp>

#include "test_util.h"

#include "ge_run.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>

#include "ge/engine/engine.h"
#include "ge/engine/graph.h"
#include "ge/host/plugin_host.h"
#include "ge/log_spdlog.h"
#include "ge/op/op_registry.h"
#include "interpreter.h"
#include "py_ref.h"

namespace fs = std::filesystem;
using namespace ge;
using ge::host::HostOptions;
using ge::host::PluginHost;
using ge::host::PluginReport;

namespace {

const std::string kSource = GE_SOURCE_DIR;

using ge_test::Contains;

std::string Case(const std::string& name) { return kSource + "/plugins/testing/host/" + name; }
std::string Canon(const std::string& p) { return fs::canonical(p).string(); }

HostOptions Opts(std::vector<std::string> paths) { return ge_test::HostTestOptions(std::move(paths)); }

const PluginReport* FindReport(const std::vector<PluginReport>& reports, const std::string& name) {
  for (const auto& r : reports) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::string Describe(const std::vector<PluginReport>& reports) {
  std::ostringstream os;
  for (const auto& r : reports) os << "\n  " << r.name << " [" << r.status << "] " << r.path << ": " << r.error.OneLine();
  return os.str();
}

// Requires `name` to be reported with `status`; returns the report.
const PluginReport& Expect(const std::vector<PluginReport>& reports, const std::string& name, const std::string& status) {
  const PluginReport* r = FindReport(reports, name);
  BOOST_REQUIRE_MESSAGE(r != nullptr, "no report for " << name << Describe(reports));
  BOOST_CHECK_MESSAGE(ge::plugin::StatusName(r->status) == status, name << ": status " << r->status << ", expected "
                                                                        << status << ": " << r->error.OneLine() << "\n"
                                                                        << r->error.traceback);
  return *r;
}

bool ValidUtf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    if (c < 0x80) n = 0;
    else if ((c >> 5) == 6) n = 1;
    else if ((c >> 4) == 14) n = 2;
    else if ((c >> 3) == 30) n = 3;
    else return false;
    if (i + n >= s.size()) return false;
    if (n == 2 && c == 0xED && (static_cast<unsigned char>(s[i + 1]) & 0xE0) == 0xA0) return false;  // a surrogate
    for (std::size_t k = 1; k <= n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n + 1;
  }
  return true;
}

struct ExecResult {
  Status status;
  std::optional<Tensor> y;
};

// Runs `op_type`'s execute through the registry on a float32 input, as an
// engine would (no Boost.Test assertions: callable from any thread).
ExecResult Execute(const OpRegistry& reg, const std::string& op_type, const std::vector<float>& x_values) {
  ExecResult r;
  auto op = reg.Create(op_type);
  if (!op) {
    r.status = Status::Error("no op " + op_type);
    return r;
  }
  auto* ex = CustomOpCast<EagerExecuteOp>(op);
  if (ex == nullptr) {
    r.status = Status::Error(op_type + " has no execute");
    return r;
  }
  Tensor x = Tensor::Allocate(TensorDesc(Shape{static_cast<int64_t>(x_values.size())}, DT_FLOAT));
  if (!x_values.empty()) std::memcpy(x.GetAddr(), x_values.data(), x_values.size() * sizeof(float));
  RuntimeAttrs attrs;
  EagerOpExecutionContext ctx(*reg.Find(op_type)->schema, {&x}, InstanceLayout({1}), attrs, InstanceLayout({1}));
  const graphStatus code = ex->Execute(&ctx);
  r.status = code == GRAPH_SUCCESS ? Status::Ok()
             : ctx.HasError()     ? ctx.TakeError()
                                  : Status::Error(op_type + " returned graphStatus " + std::to_string(code));
  auto outs = ctx.TakeOutputs();
  if (!outs.empty() && outs[0]) r.y = std::move(*outs[0]);
  return r;
}

std::vector<float> ExecFloats(const OpRegistry& reg, const std::string& op_type, const std::vector<float>& x) {
  ExecResult r = Execute(reg, op_type, x);
  BOOST_REQUIRE_MESSAGE(r.status.ok(), op_type << ": " << r.status.Describe());
  BOOST_REQUIRE(r.y.has_value());
  BOOST_REQUIRE_EQUAL(r.y->GetDataType(), DT_FLOAT);
  return std::vector<float>(r.y->Data<float>(), r.y->Data<float>() + r.y->GetShapeSize());
}

// Loads `paths` into a fresh registry + host.
struct Loaded {
  OpRegistry registry;
  std::unique_ptr<PluginHost> host;
  std::vector<PluginReport> reports;
  explicit Loaded(std::vector<std::string> paths, double join_timeout_s = 0.2) {
    HostOptions o = Opts(std::move(paths));
    o.thread_join_timeout_s = join_timeout_s;
    host = std::make_unique<PluginHost>(o, registry);
    reports = host->LoadAll();
  }
};

// The good pair loads and runs beside a broken plugin.
void CheckGoodStillLoads(const Loaded& l) {
  Expect(l.reports, "add_one", "ok");
  Expect(l.reports, "add_two", "ok");
  BOOST_CHECK((ExecFloats(l.registry, "HostAddOne", {1, 2}) == std::vector<float>{2, 3}));
  BOOST_CHECK((ExecFloats(l.registry, "HostAddTwo", {1, 2}) == std::vector<float>{3, 4}));
}

// A failed plugin: status error, its file named in the error, nothing registered.
const PluginReport& ExpectLoadFailure(const Loaded& l, const std::string& name, const std::string& file,
                                      const std::vector<std::string>& fragments, const std::string& status = "error") {
  const PluginReport& r = Expect(l.reports, name, status);
  const std::string error = r.error.OneLine();
  BOOST_CHECK_MESSAGE(Contains(error, file), name << ": error does not name " << file << ": " << error);
  for (const auto& f : fragments) BOOST_CHECK_MESSAGE(Contains(error, f), name << ": error lacks '" << f << "': " << error);
  // A conflict lists the ops it would have registered (as the registry's
  // record does); any other failure none.
  if (status != "conflict") BOOST_CHECK(r.ops.empty());
  BOOST_CHECK(ValidUtf8(error));
  return r;
}

// Captures what the "plugin" logger writes while alive.
class PluginLogCapture {
 public:
  PluginLogCapture() : logger_(Logger("plugin")), old_level_(logger_->level()) {
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    sink_->set_pattern("%v");
    logger_->sinks().push_back(sink_);
    logger_->set_level(spdlog::level::info);
  }
  ~PluginLogCapture() {
    auto& sinks = logger_->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    logger_->set_level(old_level_);
  }
  std::string Text() {
    logger_->flush();
    return out_.str();
  }

 private:
  std::shared_ptr<spdlog::logger> logger_;
  spdlog::level::level_enum old_level_;
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

std::vector<float> GraphOutput(const RunResult& r, const std::string& ref) {
  const Tensor& t = r.outputs.at(ref);
  BOOST_REQUIRE_EQUAL(t.GetDataType(), DT_FLOAT);
  return std::vector<float>(t.Data<float>(), t.Data<float>() + t.GetShapeSize());
}

const char* kSamplesGraph = R"({
  "inputs": [
    {"name": "x", "dtype": "float32", "shape": [4], "data": [-1.0, 0.0, 0.5, 2.0]},
    {"name": "a", "dtype": "float32", "shape": [2, 2], "data": [[1, 2], [3, 4]]},
    {"name": "b", "dtype": "float32", "shape": [2, 2], "data": [[5, 6], [7, 8]]},
    {"name": "r", "dtype": "float32", "shape": [1, 2], "data": [[3, 4]]}
  ],
  "nodes": [
    {"name": "gelu", "op_type": "GeluCustom", "inputs": ["x"]},
    {"name": "relu", "op_type": "ReluCpp", "inputs": ["gelu:0"]},
    {"name": "mm", "op_type": "MatMulCustom", "inputs": ["a", "b"]},
    {"name": "rms", "op_type": "RmsNormCustom", "inputs": ["r", null], "attrs": {"epsilon": 0.0}}
  ],
  "outputs": ["gelu:0", "relu:0", "mm:0", "rms:0"]
})";

// Runs kSamplesGraph and checks every output.
void RunSamplesGraph(const OpRegistry& reg) {
  Graph g = ParseGraph(kSamplesGraph, "samples.json", ".");
  Engine engine(reg);
  CompiledGraph cg = engine.Compile(g);
  RunResult r = engine.Run(cg, 2);
  const std::vector<float> x{-1.0f, 0.0f, 0.5f, 2.0f};
  const std::vector<float> gelu = GraphOutput(r, "gelu:0");
  const std::vector<float> relu = GraphOutput(r, "relu:0");
  BOOST_REQUIRE_EQUAL(gelu.size(), 4u);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double want = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    BOOST_CHECK_CLOSE_FRACTION(gelu[i] + 1.0, want + 1.0, 1e-5);
    BOOST_CHECK_EQUAL(relu[i], gelu[i] > 0 ? gelu[i] : 0.0f);
  }
  BOOST_CHECK((GraphOutput(r, "mm:0") == std::vector<float>{19, 22, 43, 50}));
  const std::vector<float> rms = GraphOutput(r, "rms:0");
  BOOST_CHECK_CLOSE_FRACTION(rms[0], 3.0 / std::sqrt(12.5), 1e-5);
  BOOST_CHECK_CLOSE_FRACTION(rms[1], 4.0 / std::sqrt(12.5), 1e-5);
  for (const auto& n : cg.nodes) {
    BOOST_CHECK_EQUAL(n.stats.python, n.stats.op_type != "ReluCpp");
    BOOST_CHECK_EQUAL(n.stats.execute_calls, 2u);
  }
}

}  // namespace

// ---- the samples ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(samples_load_report_and_run) {
  OpRegistry reg;
  BOOST_REQUIRE(RegisterBuiltinOps(reg).ok());
  PluginHost host(Opts({kSource + "/plugins/samples"}), reg);
  const auto& reports = host.LoadAll();

  const PluginReport& gelu = Expect(reports, "gelu", "ok");
  BOOST_CHECK_EQUAL(gelu.isolation, "subinterpreter");
  BOOST_CHECK_EQUAL(gelu.path, Canon(kSource + "/plugins/samples/gelu.py"));
  BOOST_CHECK((gelu.OpTypes() == std::vector<std::string>{"GeluCustom"}));
  BOOST_REQUIRE_EQUAL(gelu.ops.size(), 1u);
  BOOST_CHECK_EQUAL(gelu.ops[0].op_type, "GeluCustom");
  BOOST_CHECK((gelu.ops[0].capabilities == std::vector<std::string>{"eager_execute", "infer_meta"}));
  BOOST_CHECK(gelu.error.empty());

  const PluginReport& rms = Expect(reports, "rms_norm", "ok");
  BOOST_CHECK_EQUAL(rms.isolation, "subinterpreter");
  BOOST_CHECK_EQUAL(rms.version, "1.0.0");
  BOOST_CHECK(!rms.description.empty());
  BOOST_CHECK((rms.OpTypes() == std::vector<std::string>{"RmsNormCustom"}));

  const PluginReport& att = Expect(reports, "attention_np", "ok");
  BOOST_CHECK_EQUAL(att.isolation, "main");
  for (const char* op : {"MatMulCustom", "SoftmaxCustom", "ConcatCustom"}) {
    BOOST_CHECK_MESSAGE(ge_test::HasOp(att, op), op);
  }

  // Python ops are registry peers of C++ ops.
  auto reg_gelu = reg.Find("GeluCustom");
  BOOST_REQUIRE(reg_gelu);
  BOOST_CHECK_EQUAL(reg_gelu->plugin, "gelu");
  BOOST_CHECK_EQUAL(reg_gelu->source, gelu.path);
  BOOST_CHECK_EQUAL(reg_gelu->capabilities, CustomOpCapability::kEagerExecute | CustomOpCapability::kInferMeta);
  auto op = reg.Create("GeluCustom");
  BOOST_REQUIRE(op);
  BOOST_CHECK(CustomOpCast<EagerExecuteOp>(op) != nullptr);
  BOOST_CHECK(CustomOpCast<InferMetaOp>(op) != nullptr);
  // The adapter inherits every interface but reports only what the class defines.
  BOOST_CHECK(dynamic_cast<CompilableOp*>(op.get()) != nullptr);
  BOOST_CHECK(CustomOpCast<CompilableOp>(op) == nullptr);
  BOOST_CHECK(CustomOpCast<AnnotatedArgsOp>(op) == nullptr);
  BOOST_CHECK(CustomOpCast<ShapeInferOp>(op) == nullptr);
  BOOST_CHECK_EQUAL(OpCapabilities(*op), reg_gelu->capabilities);
  const auto* reporting = dynamic_cast<const CapabilityReportingOp*>(op.get());
  BOOST_REQUIRE(reporting != nullptr);
  BOOST_CHECK_EQUAL(reporting->GetSchema().op_type, "GeluCustom");
  BOOST_REQUIRE_EQUAL(reporting->GetSchema().attrs.size(), 1u);
  BOOST_CHECK_EQUAL(reporting->GetSchema().attrs[0].name, "approximate");

  const uint64_t calls_before = host.PythonCalls();
  RunSamplesGraph(reg);
  // 3 Python nodes: one infer_meta each, two executes each.
  BOOST_CHECK_EQUAL(host.PythonCalls() - calls_before, 9u);

  // LoadAll again is idempotent: nothing new, no conflicts.
  const std::size_t n_reports = host.Reports().size();
  host.LoadAll();
  BOOST_CHECK_EQUAL(host.Reports().size(), n_reports);
  // Version and description: pyproject.toml for packages, __version__ and the
  // docstring's first line for single files.
  for (const auto& r : host.Reports()) {
    if (r.name == "gelu") {
      BOOST_CHECK_EQUAL(r.version, "1.0.0");
      BOOST_CHECK_MESSAGE(Contains(r.description, "GELU"), r.description);
    }
    if (r.name == "rms_norm") BOOST_CHECK_EQUAL(r.version, "1.0.0");
  }
}

// ---- isolation ------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(isolation_util_modules_and_globals) {
  Loaded l({Case("isolation_a") + "/plug_iso_a.py", Case("isolation_b") + "/plug_iso_b.py"});
  Expect(l.reports, "plug_iso_a", "ok");
  Expect(l.reports, "plug_iso_b", "ok");
  // [util.bump(), builtins marker untouched by the other plugin, other plugin not in sys.modules]
  BOOST_CHECK((ExecFloats(l.registry, "HostIsoA", {0}) == std::vector<float>{101, 1, 0}));
  BOOST_CHECK((ExecFloats(l.registry, "HostIsoA", {0}) == std::vector<float>{102, 1, 0}));
  BOOST_CHECK((ExecFloats(l.registry, "HostIsoB", {0}) == std::vector<float>{201, 1, 0}));
  BOOST_CHECK((ExecFloats(l.registry, "HostIsoA", {0}) == std::vector<float>{103, 1, 0}));
  BOOST_CHECK((ExecFloats(l.registry, "HostIsoB", {0}) == std::vector<float>{202, 1, 0}));
}

// Sub-interpreters do not run `site`: they start with a copy of the main
// interpreter's sys.path as `site` computed it, so a pure-Python module from a
// site folder, or from a folder a .pth file there names, imports in a plugin;
// the builtins `site` adds (exit, help, ...) are the main interpreter's only
// (share/docs/host-design.md, "Interpreters"; plugin-authors.md, "Isolation").
BOOST_AUTO_TEST_CASE(subinterpreter_plugin_imports_from_the_main_site_path) {
  ge_test::TempDir dir;
  const fs::path site_dir = dir.path / "site", pth_target = dir.path / "pth_target";
  fs::create_directories(site_dir);
  fs::create_directories(pth_target);
  std::ofstream(site_dir / "ge_site_probe_mod.py") << "VALUE = 10.0\n";
  std::ofstream(pth_target / "ge_pth_probe_mod.py") << "VALUE = 5.0\n";
  std::ofstream(site_dir / "ge_site_probe.pth") << pth_target.string() << "\n";
  // Without the main interpreter's path the plugin cannot import them.
  {
    Loaded before({Case("site_path")});
    ExpectLoadFailure(before, "site_probe", Canon(Case("site_path") + "/site_probe.py"), {"ge_pth_probe_mod"});
  }
  auto runtime = ge::host::PythonRuntime::Current();
  BOOST_REQUIRE(runtime);
  // The main interpreter's sys.path before, restored at the end. A raw
  // reference: released inside the main interpreter (leaked if a check fails
  // in between, never released without the GIL).
  PyObject* saved = nullptr;
  auto main_path = [&](bool add) {  // site.addsitedir(site_dir) in the main interpreter, or undo it
    ge::host::InterpreterGuard guard(*runtime->Main());
    PyObject* path = PySys_GetObject("path");  // borrowed
    BOOST_REQUIRE(path != nullptr && PyList_Check(path));
    if (add) {
      saved = PyList_GetSlice(path, 0, PyList_GET_SIZE(path));
      const auto site = ge::py::OwnedRef::Steal(PyImport_ImportModule("site"));
      const auto done = ge::py::OwnedRef::Steal(
          site ? PyObject_CallMethod(site.get(), "addsitedir", "s", site_dir.c_str()) : nullptr);
      if (!done) PyErr_Print();
      BOOST_REQUIRE(done);
    } else {
      BOOST_REQUIRE(PyList_SetSlice(path, 0, PyList_GET_SIZE(path), saved) == 0);
      Py_CLEAR(saved);
    }
  };
  main_path(true);
  {
    Loaded l({Case("site_path")});
    Expect(l.reports, "site_probe", "ok");
    // [x0 + 10 + 5, hasattr(builtins, "exit"), sys.flags.no_site]
    BOOST_CHECK((ExecFloats(l.registry, "HostSiteProbe", {1, 0, 0}) == std::vector<float>{16, 0, 1}));
  }
  main_path(false);
}

// ---- teardown -------------------------------------------------------------------------------

// ge-run as a library function: called in-process, it runs the graph and
// returns, and arms nothing that could end the caller's process later (the exit
// watchdog is the command's, passed by its main).
BOOST_AUTO_TEST_CASE(ge_run_as_a_library_function_runs_in_process) {
  ge_test::TempDir dir;
  const std::string graph = (dir.path / "g.json").string();
  std::ofstream(graph) << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2], "data": [1, -1]}],
    "nodes": [{"name": "g", "op_type": "GeluCustom", "inputs": ["x"]}], "outputs": ["g:0"]})";
  const std::string opp = kSource + "/plugins/samples", out = (dir.path / "out").string();
  const char* argv[] = {"ge-run", graph.c_str(), "--opp-path", opp.c_str(), "--output-dir", out.c_str()};
  std::ostringstream summary, errors;
  int called_with = -1;
  BOOST_CHECK_EQUAL(ge::tools::RunGeRun(6, argv, summary, errors), 0);
  BOOST_CHECK_EQUAL(ge::tools::RunGeRun(6, argv, summary, errors, [&](int rc) { called_with = rc; }), 0);
  BOOST_CHECK_EQUAL(called_with, 0);
  BOOST_CHECK(fs::exists(dir.path / "out" / "g_0.npy"));
  BOOST_CHECK_MESSAGE(Contains(summary.str(), "GeluCustom"), summary.str() + errors.str());
}

BOOST_AUTO_TEST_CASE(teardown_ends_interpreters_and_reload_works) {
  const fs::path marker = fs::temp_directory_path() / ("ge_host_atexit_" + std::to_string(::getpid()));
  fs::remove(marker);
  BOOST_REQUIRE_EQUAL(::setenv("GE_TEST_ATEXIT_FILE", marker.c_str(), 1), 0);

  OpRegistry reg;
  std::vector<PluginReport> first;
  {
    PluginHost host(Opts({Case("teardown"), kSource + "/plugins/samples"}), reg);
    first = host.LoadAll();
    Expect(first, "at_exit", "ok");
    ExecFloats(reg, "HostAtExit", {1});
    ExecFloats(reg, "HostAtExit", {2});
    BOOST_CHECK(reg.Find("GeluCustom"));
    BOOST_CHECK(!fs::exists(marker));  // the interpreter is alive
  }
  // The host's destructor unregistered its ops and ended the sub-interpreter
  // (its atexit handlers ran).
  BOOST_CHECK_EQUAL(reg.Size(), 0u);
  BOOST_REQUIRE_MESSAGE(fs::exists(marker), "the plugin's sub-interpreter was not ended");
  {
    std::ifstream in(marker);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    BOOST_CHECK_EQUAL(text, "ended 2");
  }
  fs::remove(marker);

  // A second host in the same process loads the same plugins again.
  BOOST_REQUIRE(RegisterBuiltinOps(reg).ok());
  {
    PluginHost host(Opts({Case("teardown"), kSource + "/plugins/samples"}), reg);
    const auto& second = host.LoadAll();
    BOOST_REQUIRE_EQUAL(second.size(), first.size());
    for (const auto& r1 : first) {
      const PluginReport& r2 = Expect(second, r1.name, std::string(ge::plugin::StatusName(r1.status)));
      BOOST_CHECK_MESSAGE(r2.OpTypes() == r1.OpTypes(), r1.name << ": op_types differ on reload");
    }
    ExecFloats(reg, "HostAtExit", {1});  // a fresh interpreter: its counter restarts
    RunSamplesGraph(reg);
  }
  BOOST_CHECK_EQUAL(reg.Size(), 1u);  // only ReluCpp is left
  BOOST_REQUIRE(fs::exists(marker));
  std::ifstream in(marker);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_CHECK_EQUAL(text, "ended 1");
  fs::remove(marker);
  ::unsetenv("GE_TEST_ATEXIT_FILE");
}

BOOST_AUTO_TEST_CASE(lingering_plugin_thread_does_not_block_teardown) {
  auto l = std::make_unique<Loaded>(std::vector<std::string>{Case("thread_left"), Case("good")}, 0.2);
  Expect(l->reports, "lingering", "ok");
  CheckGoodStillLoads(*l);
  ExecFloats(l->registry, "HostLinger", {1});

  // Destroy the host on another thread and wait for it, bounded.
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread destroyer([&] {
    l->host.reset();
    done.set_value();
  });
  if (finished.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::cerr << "PluginHost destruction blocked on a plugin thread for 60 s" << std::endl;
    std::_Exit(1);  // cannot unwind past a blocked destructor
  }
  destroyer.join();
  BOOST_CHECK_EQUAL(l->registry.Size(), 0u);
  l.reset();

  // The process keeps working: a new host loads and runs.
  Loaded again({Case("good")});
  CheckGoodStillLoads(again);
}

// ---- load failures ----------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(load_failures)

BOOST_AUTO_TEST_CASE(syntax_error_with_file_and_line) {
  Loaded l({Case("syntax_error"), Case("good")});
  const std::string file = Canon(Case("syntax_error") + "/bad_syntax.py");
  ExpectLoadFailure(l, "bad_syntax", file, {"SyntaxError", "bad_syntax.py:3"});
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_CASE(import_error) {
  Loaded l({Case("import_error"), Case("good")});
  const std::string file = Canon(Case("import_error") + "/bad_import.py");
  ExpectLoadFailure(l, "bad_import", file, {"ModuleNotFoundError", "ge_no_such_module_for_tests"});
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_CASE(exception_inside_decorator) {
  Loaded l({Case("decorator_error"), Case("good")});
  const std::string file = Canon(Case("decorator_error") + "/bad_decorator.py");
  ExpectLoadFailure(l, "bad_decorator", file, {"TypeError", "register_op op_type 'HostBadDecorator' failed"});
  BOOST_CHECK(!l.registry.Find("HostBadDecorator"));
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_CASE(invalid_execute_signature) {
  Loaded l({Case("bad_signature"), Case("good")});
  const std::string file = Canon(Case("bad_signature") + "/bad_sig.py");
  const PluginReport& r = ExpectLoadFailure(l, "bad_sig", file, {"HostBadSig", "execute", "expected", "actual"});
  // The message ends with where the method is defined; no frame of the host's
  // own ge package (the validator) is named as the location.
  const std::string site = "(at " + file + ":12)";
  const std::string error = r.error.OneLine();
  BOOST_CHECK_MESSAGE(error.size() >= site.size() && error.compare(error.size() - site.size(), site.size(), site) == 0,
                      "error does not end with " << site << ": " << error);
  BOOST_CHECK_MESSAGE(!Contains(error, "_validate.py"), "error names the validator: " << error);
  BOOST_CHECK(!l.registry.Find("HostBadSig"));  // all or nothing
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_CASE(op_type_conflict_first_in_path_order_wins) {
  const std::string a = Canon(Case("conflict") + "/a_first.py");
  const std::string b = Canon(Case("conflict") + "/b_second.py");
  {
    Loaded l({Case("conflict"), Case("good")});  // folder: name order
    Expect(l.reports, "a_first", "ok");
    const PluginReport& r = ExpectLoadFailure(l, "b_second", b, {a, "HostConflict"}, "conflict");
    BOOST_CHECK_EQUAL(r.error.op_type, "HostConflict");
    BOOST_CHECK_EQUAL(r.conflicts_with, a);
    BOOST_REQUIRE_EQUAL(r.ops.size(), 1u);  // what it would have registered, not registered
    BOOST_CHECK_EQUAL(r.ops[0].op_type, "HostConflict");
    auto winner = l.registry.Find("HostConflict");
    BOOST_REQUIRE(winner);
    BOOST_CHECK_EQUAL(winner->source, a);
    BOOST_CHECK((ExecFloats(l.registry, "HostConflict", {0}) == std::vector<float>{1}));
    CheckGoodStillLoads(l);
  }
  {
    Loaded l({b, a});  // explicit files: the given order
    Expect(l.reports, "b_second", "ok");
    ExpectLoadFailure(l, "a_first", a, {b, "HostConflict"}, "conflict");
    BOOST_CHECK((ExecFloats(l.registry, "HostConflict", {0}) == std::vector<float>{2}));
  }
}

// Main-interpreter plugins load first, but the first plugin in path order still
// wins a conflict; the loser's registrations leave the main interpreter.
BOOST_AUTO_TEST_CASE(path_order_wins_over_main_isolation_load_order) {
  const std::string a = Canon(Case("conflict") + "/a_first.py");
  const std::string c = Canon(Case("conflict_main") + "/c_main_later");
  {
    Loaded l({a, Case("conflict_main")});
    Expect(l.reports, "a_first", "ok");
    const PluginReport& r = Expect(l.reports, "c_main_later", "conflict");
    BOOST_CHECK_EQUAL(r.isolation, "main");
    BOOST_CHECK_MESSAGE(Contains(r.error.message, a) && Contains(r.error.message, c), r.error.message);
    BOOST_CHECK((ExecFloats(l.registry, "HostConflict", {0}) == std::vector<float>{1}));
  }
  {
    // Reversed path order: the main-isolation plugin is first and wins.
    Loaded l({Case("conflict_main"), a});
    Expect(l.reports, "c_main_later", "ok");
    Expect(l.reports, "a_first", "conflict");
    BOOST_CHECK((ExecFloats(l.registry, "HostConflict", {0}) == std::vector<float>{3}));
  }
}

BOOST_AUTO_TEST_CASE(host_options_default_isolation_and_log_level) {
  for (const std::string iso : {"subinterpreter", "main"}) {
    OpRegistry reg;
    HostOptions o = Opts({Case("default_main")});
    o.default_isolation = iso;
    o.log_level = "warn";
    PluginHost host(o, reg);
    const PluginReport& r = Expect(host.LoadAll(), "dm_single", "ok");
    BOOST_CHECK_EQUAL(r.isolation, iso);
    BOOST_CHECK((ExecFloats(reg, "HostWhichInterp", {0}) == std::vector<float>{iso == "main" ? 1.0f : 0.0f}));
  }
  OpRegistry reg;
  HostOptions bad = Opts({});
  bad.default_isolation = "thread";
  BOOST_CHECK_THROW(PluginHost(bad, reg), std::invalid_argument);
  HostOptions bad_level = Opts({});
  bad_level.log_level = "loud";
  BOOST_CHECK_THROW(PluginHost(bad_level, reg), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(missing_opp_path_entry) {
  const std::string missing = "/nonexistent/ge_missing_entry";
  Loaded l({missing, Case("good")});
  const PluginReport& r = Expect(l.reports, "ge_missing_entry", "missing");
  BOOST_CHECK_MESSAGE(Contains(r.error.message, missing), r.error.message);
  BOOST_CHECK_EQUAL(r.path, missing);
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_CASE(system_exit_at_import_is_reported) {
  Loaded l({Case("system_exit"), Case("good")});
  const std::string file = Canon(Case("system_exit") + "/exits.py");
  ExpectLoadFailure(l, "exits", file, {"SystemExit", "3"});
  // Still here, and the plugins after it in path order loaded.
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_CASE(exception_whose_str_raises) {
  Loaded l({Case("bad_str"), Case("good")});
  const std::string file = Canon(Case("bad_str") + "/bad_str.py");
  ExpectLoadFailure(l, "bad_str", file, {"UnprintableError"});
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_CASE(exception_message_with_lone_surrogate) {
  Loaded l({Case("surrogate"), Case("good")});
  const std::string file = Canon(Case("surrogate") + "/surrogate.py");
  const PluginReport& r = ExpectLoadFailure(l, "surrogate", file, {"ValueError", "lone surrogate", "in the message"});
  BOOST_CHECK_MESSAGE(Contains(r.error.message, "\\udc80"), r.error.message);  // escaped, not dropped
  BOOST_CHECK(ValidUtf8(r.error.traceback));
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_CASE(numpy_in_subinterpreter_names_isolation_main) {
  Loaded l({Case("numpy_sub"), Case("good")});
  const std::string file = Canon(Case("numpy_sub") + "/uses_numpy.py");
  ExpectLoadFailure(l, "uses_numpy", file, {"isolation = \"main\"", "numpy"});
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_CASE(numpy_with_isolation_main_loads_and_runs) {
  Loaded l({Case("numpy_main"), Case("good")});
  const PluginReport& r = Expect(l.reports, "np_main_op", "ok");
  BOOST_CHECK_EQUAL(r.isolation, "main");
  BOOST_CHECK_EQUAL(r.version, "0.3.0");
  BOOST_CHECK_EQUAL(r.description, "numpy in the main interpreter");
  BOOST_CHECK((r.OpTypes() == std::vector<std::string>{"HostNpAddOne"}));
  BOOST_CHECK((ExecFloats(l.registry, "HostNpAddOne", {1.5f, -2}) == std::vector<float>{2.5f, -1}));
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_CASE(plugin_stdout_is_captured) {
  PluginLogCapture capture;
  Loaded l({Case("prints"), Case("good")});
  Expect(l.reports, "printer", "ok");
  BOOST_CHECK((ExecFloats(l.registry, "HostPrint", {1, 2, 3}) == std::vector<float>{1, 2, 3}));
  const std::string text = capture.Text();
  BOOST_CHECK_MESSAGE(Contains(text, "[printer] printer plugin says hello at import"), text);
  BOOST_CHECK_MESSAGE(Contains(text, "[printer] printer plugin warns on stderr"), text);
  BOOST_CHECK_MESSAGE(Contains(text, "[printer] printer plugin execute 3"), text);
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_CASE(bad_pyproject_isolation_names_the_field) {
  Loaded l({Case("bad_pyproject"), Case("good")});
  const std::string pkg = Canon(Case("bad_pyproject") + "/bad_iso_pkg");
  ExpectLoadFailure(l, "bad_iso_pkg", pkg + "/pyproject.toml", {"tool.ge-plugin.isolation", "threads"});
  CheckGoodStillLoads(l);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- Python errors in callbacks -----------------------------------------------------------

BOOST_AUTO_TEST_CASE(execute_raising_gives_a_full_status) {
  Loaded l({Case("execute_raises"), Case("good")});
  Expect(l.reports, "raiser", "ok");
  const std::string file = Canon(Case("execute_raises") + "/raiser.py");
  ExecResult r = Execute(l.registry, "HostRaise", {1});
  BOOST_REQUIRE(!r.status.ok());
  const ErrorInfo& e = r.status.info();
  BOOST_CHECK_EQUAL(e.exception_type, "ValueError");
  BOOST_CHECK_MESSAGE(Contains(e.message, "boom 42"), e.message);
  BOOST_CHECK_EQUAL(e.plugin, "raiser");
  BOOST_CHECK_EQUAL(e.file, file);
  BOOST_CHECK_EQUAL(e.call_site, "execute");
  BOOST_CHECK_MESSAGE(Contains(e.location, "raiser.py:"), e.location);
  BOOST_CHECK_MESSAGE(Contains(e.traceback, "Traceback"), e.traceback);
  BOOST_CHECK_MESSAGE(Contains(e.traceback, "raiser.py"), e.traceback);
  BOOST_CHECK_MESSAGE(Contains(e.traceback, "_fail"), e.traceback);
  BOOST_CHECK_MESSAGE(Contains(r.status.Describe(), "plugin 'raiser'"), r.status.Describe());
  // The host and the other plugins keep working, and so does the op.
  BOOST_CHECK((ExecFloats(l.registry, "HostAddOne", {1}) == std::vector<float>{2}));
  BOOST_CHECK(!Execute(l.registry, "HostRaise", {1}).status.ok());

  // Through the engine: the error names the node and carries the traceback.
  Graph g = ParseGraph(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1]}],
                           "nodes": [{"name": "n0", "op_type": "HostAddOne", "inputs": ["x"]},
                                     {"name": "bad", "op_type": "HostRaise", "inputs": ["n0:0"]}],
                           "outputs": ["bad:0"]})",
                       "raise.json", ".");
  Engine engine(l.registry);
  CompiledGraph cg = engine.Compile(g);
  try {
    engine.Run(cg);
    BOOST_ERROR("Run did not fail");
  } catch (const EngineError& err) {
    BOOST_CHECK_EQUAL(err.node(), "bad");
    BOOST_CHECK_MESSAGE(Contains(err.what(), "ValueError: boom 42"), err.what());
    BOOST_CHECK_MESSAGE(Contains(err.details(), "Traceback"), err.details());
  }
}

BOOST_AUTO_TEST_CASE(execute_returning_non_none) {
  Loaded l({Case("returns_value")});
  Expect(l.reports, "returns", "ok");
  ExecResult r = Execute(l.registry, "HostReturns", {1});
  BOOST_REQUIRE(!r.status.ok());
  BOOST_CHECK_MESSAGE(Contains(r.status.message(), "execute must return None"), r.status.message());
  BOOST_CHECK_EQUAL(r.status.info().exception_type, "TypeError");
  BOOST_CHECK_EQUAL(r.status.info().plugin, "returns");
}

// The host keeps a call's Tensor and context views for the next call of the
// same op and re-points them, but only those nobody else references
// (bindings/native/dispatch.h, ExecuteFrame): a view a plugin kept (strongly,
// weakly, through a contextvars copy) stays expired and is never handed out
// again, an attribute set on a view does not reach the next call, and every
// call reads its own input.
BOOST_AUTO_TEST_CASE(views_kept_by_a_plugin_stay_expired) {
  Loaded l({Case("view_reuse")});
  Expect(l.reports, "keeper", "ok");
  enum Mode { kKeep = 0, kWeak = 1, kTag = 2, kNothing = 3, kCopyContext = 4 };
  // Returns y: expired, alive, held, tagged, value (plugins/testing/host/view_reuse/keeper.py).
  using V = std::vector<float>;
  auto call = [&](int mode, float value) {
    V y = ExecFloats(l.registry, "HostKeepView", {float(mode), value, 0, 0, 0});
    BOOST_TEST_MESSAGE("mode " << mode << ": " << y[0] << " " << y[1] << " " << y[2] << " " << y[3] << " " << y[4]);
    return y;
  };
  BOOST_CHECK((call(kNothing, 1) == V{0, 0, 0, 0, 1}));
  BOOST_CHECK((call(kNothing, 2) == V{0, 0, 0, 0, 2}));  // a re-used view reads the new input
  BOOST_CHECK((call(kKeep, 3) == V{0, 0, 0, 0, 3}));
  // The kept x and context: expired, and neither is this call's x or context.
  BOOST_CHECK((call(kNothing, 4) == V{2, 0, 0, 0, 4}));
  BOOST_CHECK((call(kNothing, 5) == V{2, 0, 0, 0, 5}));
  BOOST_CHECK((call(kWeak, 6) == V{2, 0, 0, 0, 6}));
  // Weakly referenced views are not re-used: the host lets them go, so the weak
  // references die (nothing else held them) instead of seeing a live view.
  BOOST_CHECK((call(kNothing, 7) == V{2, 0, 0, 0, 7}));
  BOOST_CHECK((call(kTag, 8) == V{2, 0, 0, 0, 8}));
  BOOST_CHECK((call(kNothing, 9) == V{2, 0, 0, 0, 9}));  // the tagged view is not this call's
  BOOST_CHECK((call(kCopyContext, 10) == V{2, 0, 0, 0, 10}));
  // A context copied inside the callback sees no active execute context afterwards.
  BOOST_CHECK((call(kNothing, 11) == V{3, 0, 0, 0, 11}));
  BOOST_CHECK((call(kNothing, 12) == V{3, 0, 0, 0, 12}));
}

// The host runs each op's execute in the op's own contextvars.Context, made
// once as a copy of the context current at its first call, with the execute
// context bound in it (bindings/native/frame_context.h): the plugin sees what
// it set in the main context at import, threads running a copy of the context
// see the execute context during the call, nested calls restore the outer
// binding, copies kept after the call (also a copy that shares parts of the
// Context's mapping) never see a later call's context, a second thread inside
// the same op while the first one sleeps gets its own, and (the documented
// difference, share/docs/plugin-authors.md) a ContextVar set inside execute is
// still set at the op's next call.
BOOST_AUTO_TEST_CASE(execute_runs_in_the_op_context) {
  Loaded l({Case("frame_ctx")});
  Expect(l.reports, "frame_ctx", "ok");
  using V = std::vector<float>;
  // y per mode: plugins/testing/host/frame_ctx/frame_ctx.py.
  auto call = [&](float mode, float value) {
    V y = ExecFloats(l.registry, "HostFrameCtx", {mode, value, 0, 0, 0});
    BOOST_TEST_MESSAGE("mode " << mode << ": " << y[0] << " " << y[1] << " " << y[2] << " " << y[3] << " " << y[4]);
    return y;
  };
  BOOST_CHECK((call(0, 0) == V{11, 7, 1, 1, -1}));
  BOOST_CHECK((call(0, 0) == V{11, 7, 1, 1, -1}));
  BOOST_CHECK((call(1, 5) == V{0, 0, 0, 0, 5}));
  BOOST_CHECK((call(0, 0) == V{11, 7, 1, 1, 5}));  // set inside execute: kept for the op's later calls
  BOOST_CHECK((call(2, 0) == V{1, 1, 1, 0, 0}));   // nested: the outer context is bound again
  BOOST_CHECK((call(4, 3) == V{0, 0, 0, 0, 0}));
  BOOST_CHECK((call(6, 0) == V{0, 1, 0, 0, 0}));  // the changed copy shares the mapping's nodes
  BOOST_CHECK((call(6, 0) == V{0, 1, 0, 0, 0}));
  BOOST_CHECK((call(5, 0) == V{0, 1, 0, 0, 0}));
  BOOST_CHECK((call(6, 0) == V{0, 2, 0, 0, 0}));
  BOOST_CHECK((call(6, 0) == V{0, 2, 0, 0, 0}));
  BOOST_CHECK((call(0, 0) == V{11, 7, 1, 1, 5}));
  // Two threads in the op at once (the first sleeps with the GIL released):
  // each reads its own input through get_execute_ctx().
  std::vector<V> got(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      ExecResult r = Execute(l.registry, "HostFrameCtx", {3, float(t + 20), 0, 0, 0});
      if (r.status.ok() && r.y) got[t] = V(r.y->Data<float>(), r.y->Data<float>() + r.y->GetShapeSize());
    });
  }
  for (auto& th : threads) th.join();
  BOOST_CHECK((got[0] == V{20, 1, 0, 0, 0}));
  BOOST_CHECK((got[1] == V{21, 1, 0, 0, 0}));
  BOOST_CHECK((call(0, 0) == V{11, 7, 1, 1, 5}));
}

BOOST_AUTO_TEST_CASE(python_calls_are_counted) {
  Loaded l({Case("good")});
  const uint64_t before = l.host->PythonCalls();
  for (int i = 0; i < 5; ++i) ExecFloats(l.registry, "HostAddOne", {1});
  BOOST_CHECK_EQUAL(l.host->PythonCalls() - before, 5u);
  ExecFloats(l.registry, "HostAddTwo", {1});
  BOOST_CHECK_EQUAL(l.host->PythonCalls() - before, 6u);
  // C++ ops make no Python calls.
  BOOST_REQUIRE(RegisterBuiltinOps(l.registry).ok());
  Graph g = ParseGraph(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1]}],
                           "nodes": [{"name": "n0", "op_type": "ReluCpp", "inputs": ["x"]}], "outputs": ["n0:0"]})",
                       "relu.json", ".");
  Engine engine(l.registry);
  CompiledGraph cg = engine.Compile(g);
  engine.Run(cg, 3);
  BOOST_CHECK_EQUAL(l.host->PythonCalls() - before, 6u);
}

// ---- concurrency ----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(concurrent_execute_from_cpp_threads) {
  Loaded l({Case("good")});
  Expect(l.reports, "add_one", "ok");
  Expect(l.reports, "add_two", "ok");
  constexpr int kThreads = 4;
  constexpr int kCalls = 200;
  const uint64_t before = l.host->PythonCalls();
  std::atomic<int> wrong{0}, failed{0}, wrong_thread{0}, ready{0};
  std::mutex first_error_mu;
  std::string first_error;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < kCalls; ++i) {
        const bool two = (i + t) % 2 == 1;  // alternate between the two sub-interpreters
        const float v = static_cast<float>(t * 1000 + i);
        ExecResult r = Execute(l.registry, two ? "HostAddTwo" : "HostAddOne", {v, -v});
        if (!r.status.ok() || !r.y) {
          failed.fetch_add(1);
          std::lock_guard<std::mutex> lock(first_error_mu);
          if (first_error.empty()) first_error = r.status.Describe();
          continue;
        }
        const float add = two ? 2.0f : 1.0f;
        if (r.y->Data<float>()[0] != v + add || r.y->Data<float>()[1] != -v + add) wrong.fetch_add(1);
      }
      // Python runs on the calling OS thread (its own thread state there).
      ExecResult id = Execute(l.registry, "HostThreadId", {0});
      if (!id.status.ok() || !id.y || id.y->Data<uint64_t>()[0] != static_cast<uint64_t>(::pthread_self())) {
        wrong_thread.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  BOOST_CHECK_MESSAGE(failed.load() == 0, failed.load() << " calls failed; first: " << first_error);
  BOOST_CHECK_EQUAL(wrong.load(), 0);
  BOOST_CHECK_EQUAL(wrong_thread.load(), 0);
  BOOST_CHECK_EQUAL(l.host->PythonCalls() - before, static_cast<uint64_t>(kThreads * (kCalls + 1)));
  // Still consistent afterwards from this thread.
  BOOST_CHECK((ExecFloats(l.registry, "HostAddOne", {41}) == std::vector<float>{42}));
}
