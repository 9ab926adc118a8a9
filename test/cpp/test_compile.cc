// The compile capability from C++: PlatformInfos (shipped ini files against
// their text, malformed and missing configs, the measured host), OpCompileContext
// (options, lazy and sticky platform), the engine's compile phase with a C++
// CompilableOp, and Python compiles through ge::host::PluginHost (test plugins
// under plugins/testing/compile/<case>/).
#define BOOST_TEST_MODULE compile
#include <boost/test/unit_test.hpp>

#include "test_util.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "ge/engine/engine.h"
#include "ge/engine/graph.h"
#include "ge/host/plugin_host.h"
#include "ge/op/contexts.h"
#include "ge/op/op_registry.h"
#include "ge/platform/platform_info.h"

namespace fs = std::filesystem;
using namespace ge;
using ge::host::HostOptions;
using ge::host::PluginHost;
using ge::host::PluginReport;

namespace {

const std::string kSource = GE_SOURCE_DIR;
const std::string kPlatformDir = kSource + "/share/platform";

using ge_test::Contains;
using ge_test::FailWith;

using ge_test::TempDir;

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The test's own reading of an ini file: [section] lines, key=value lines,
// ';' and '#' comments. Independent of Boost.PropertyTree.
std::map<std::string, PlatformInfos::Group> ReadIniText(const std::string& path) {
  std::map<std::string, PlatformInfos::Group> groups;
  std::ifstream in(path);
  BOOST_REQUIRE_MESSAGE(in, "cannot open " << path);
  std::string section;
  for (std::string line; std::getline(in, line);) {
    line = Trim(line);
    if (line.empty() || line[0] == ';' || line[0] == '#') continue;
    if (line.front() == '[') {
      BOOST_REQUIRE(line.back() == ']');
      section = line.substr(1, line.size() - 2);
      groups[section];
      continue;
    }
    const auto eq = line.find('=');
    BOOST_REQUIRE_MESSAGE(eq != std::string::npos && !section.empty(), path << ": " << line);
    groups[section][Trim(line.substr(0, eq))] = Trim(line.substr(eq + 1));
  }
  return groups;
}

std::vector<std::string> ShippedInis() {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(kPlatformDir)) {
    if (e.path().extension() == ".ini") v.push_back(e.path().string());
  }
  std::sort(v.begin(), v.end());
  return v;
}

// Expects f() to throw PlatformError whose message holds every fragment.
template <typename F>
void ExpectPlatformError(F&& f, const std::vector<std::string>& fragments) {
  try {
    f();
    BOOST_ERROR("no PlatformError");
  } catch (const PlatformError& e) {
    for (const auto& part : fragments) BOOST_CHECK_MESSAGE(Contains(e.what(), part), "lacks '" << part << "': " << e.what());
  }
}

long AffinityCores() {
  cpu_set_t set;
  BOOST_REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  return CPU_COUNT(&set);
}

}  // namespace

// ---- PlatformInfos ----------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(platform_infos)

BOOST_AUTO_TEST_CASE(each_shipped_ini_matches_its_file) {
  const auto files = ShippedInis();
  BOOST_REQUIRE_GE(files.size(), 4u);
  bool saw_910b = false, saw_310p = false;
  for (const auto& path : files) {
    BOOST_TEST_CONTEXT(path) {
      const auto text = ReadIniText(path);
      const PlatformInfos p = PlatformInfos::LoadIni(path);
      BOOST_CHECK(p.Groups() == text);
      BOOST_CHECK_EQUAL(p.Source(), path);
      const std::string stem = fs::path(path).stem().string();
      BOOST_CHECK_EQUAL(p.SocVersion(), stem);
      BOOST_CHECK_EQUAL(p.SocVersion(), text.at("version").at("SoC_version"));
      saw_910b |= Contains(stem, "910B");
      saw_310p |= Contains(stem, "310P");
      const auto& soc = text.at("SoCInfo");
      const std::map<std::string, std::string> keys{
          {"AiCore", "ai_core_cnt"}, {"VectorCore", "vector_core_cnt"}, {"CubeCore", "cube_core_cnt"}, {"AiCpu", "ai_cpu_cnt"}};
      for (const auto& [type, key] : keys) {
        auto n = p.CoreNum(type);
        BOOST_REQUIRE_MESSAGE(n.has_value(), type);
        BOOST_CHECK_EQUAL(*n, std::stoll(soc.at(key)));
      }
      BOOST_CHECK_EQUAL(p.DefaultCoreType(), soc.at("core_type_list").substr(0, soc.at("core_type_list").find(',')));
      BOOST_CHECK(!p.CoreNum("NoSuchCore").has_value());
      for (const auto& [group, values] : text) {
        auto g = p.GetGroup(group);
        BOOST_REQUIRE(g.has_value());
        BOOST_CHECK(*g == values);
        for (const auto& [k, v] : values) BOOST_CHECK_EQUAL(p.Get(group, k).value_or("<missing>"), v);
      }
      BOOST_CHECK(!p.Get("SoCInfo", "no_such_key").has_value());
      BOOST_CHECK(!p.GetGroup("NoSuchGroup").has_value());
      // ForSoc by name reads the same file.
      BOOST_CHECK(PlatformInfos::ForSoc(stem, kPlatformDir).Groups() == p.Groups());
    }
  }
  BOOST_CHECK(saw_910b);
  BOOST_CHECK(saw_310p);
}

BOOST_AUTO_TEST_CASE(missing_ini) {
  TempDir d;
  const std::string path = (d.path / "Nope.ini").string();
  ExpectPlatformError([&] { PlatformInfos::LoadIni(path); }, {path, "does not exist"});
  ExpectPlatformError([&] { PlatformInfos::ForSoc("Nope", d.path.string()); }, {path});
}

BOOST_AUTO_TEST_CASE(malformed_ini) {
  TempDir d;
  const std::string path = d.Write("Bad.ini", "[version]\nSoC_version=Bad\n[SoCInfo\nai_core_cnt=2\n");
  ExpectPlatformError([&] { PlatformInfos::LoadIni(path); }, {path, "malformed", "line 3"});
}

BOOST_AUTO_TEST_CASE(ini_without_soc_version) {
  TempDir d;
  const std::string path = d.Write("NoVer.ini", "[version]\nShort_SoC_version=X\n[SoCInfo]\nai_core_cnt=2\n");
  ExpectPlatformError([&] { PlatformInfos::LoadIni(path); }, {path, "SoC_version"});
  const std::string empty = d.Write("Empty.ini", "");
  ExpectPlatformError([&] { PlatformInfos::LoadIni(empty); }, {empty, "SoC_version"});
}

BOOST_AUTO_TEST_CASE(key_outside_any_section) {
  TempDir d;
  const std::string path = d.Write("Top.ini", "ai_core_cnt=2\n[version]\nSoC_version=Top\n");
  ExpectPlatformError([&] { PlatformInfos::LoadIni(path); }, {path, "ai_core_cnt"});
}

BOOST_AUTO_TEST_CASE(non_numeric_core_count_is_absent) {
  TempDir d;
  const std::string path =
      d.Write("Odd.ini", "[version]\nSoC_version=Odd\n[SoCInfo]\nai_core_cnt=many\nvector_core_cnt=-3\ncube_core_cnt=4x\n");
  const PlatformInfos p = PlatformInfos::LoadIni(path);
  BOOST_CHECK(!p.CoreNum("AiCore").has_value());
  BOOST_CHECK(!p.CoreNum("VectorCore").has_value());
  BOOST_CHECK(!p.CoreNum("CubeCore").has_value());
  BOOST_CHECK(!p.CoreNum("AiCpu").has_value());
  BOOST_CHECK_EQUAL(p.DefaultCoreType(), "AiCore");
}

BOOST_AUTO_TEST_CASE(bad_soc_names_are_refused) {
  for (const std::string name : {"", "../Ascend910B1", "sub/Ascend910B1", "..", "a..b"}) {
    ExpectPlatformError([&] { PlatformInfos::ForSoc(name, kPlatformDir); }, {"bad SoC name"});
  }
}

BOOST_AUTO_TEST_CASE(host_is_measured) {
  const PlatformInfos h = PlatformInfos::Host();
  BOOST_CHECK_EQUAL(h.SocVersion(), "host");
  auto ai = h.CoreNum("AiCore");
  BOOST_REQUIRE(ai.has_value());
  BOOST_CHECK_GE(*ai, 1);
  BOOST_CHECK_EQUAL(*ai, AffinityCores());
  BOOST_CHECK_EQUAL(h.CoreNum("VectorCore").value_or(-1), *ai);
  BOOST_CHECK_EQUAL(h.DefaultCoreType(), "AiCore");
  const long long mem = std::stoll(h.Get("SoCInfo", "memory_size").value_or("0"));
  BOOST_CHECK_EQUAL(mem, static_cast<long long>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE));
  BOOST_CHECK_GT(mem, 0);
  BOOST_CHECK(PlatformInfos::ForSoc("host", "/nonexistent").Groups() == h.Groups());
}

BOOST_AUTO_TEST_SUITE_END()

// ---- OpCompileContext ---------------------------------------------------------------------------

namespace {

std::shared_ptr<OpSchema> UnarySchema(const std::string& op_type) {
  auto s = std::make_shared<OpSchema>();
  s->op_type = op_type;
  s->inputs = {{"x", IrInputKind::kRequired}};
  s->outputs = {{"y", IrOutputKind::kRequired}};
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(op_compile_context)

BOOST_AUTO_TEST_CASE(options_tensors_and_lazy_platform) {
  auto schema = UnarySchema("Ctx");
  RuntimeAttrs attrs;
  const std::map<std::string, std::string> options{{"a", "1"}, {"empty", ""}};
  int loads = 0;
  OpCompileContext ctx(*schema, {TensorDesc(Shape{2, 3}, DT_FLOAT16)}, InstanceLayout({1}),
                       {TensorDesc(Shape{6}, DT_INT32)}, InstanceLayout({1}), attrs, options, [&loads]() {
                         ++loads;
                         return std::make_shared<const PlatformInfos>(PlatformInfos::ForSoc("Ascend310P3", kPlatformDir));
                       });
  BOOST_CHECK_EQUAL(ctx.GetOption("a").value_or("<none>"), "1");
  BOOST_CHECK_EQUAL(ctx.GetOption("empty").value_or("<none>"), "");
  BOOST_CHECK(!ctx.GetOption("missing").has_value());
  BOOST_REQUIRE_EQUAL(ctx.GetInputNum(), 1u);
  BOOST_REQUIRE_EQUAL(ctx.GetOutputNum(), 1u);
  BOOST_CHECK(ctx.GetInputTensor(0)->GetStorageShape() == Shape({2, 3}));
  BOOST_CHECK_EQUAL(ctx.GetInputTensor(0)->GetDataType(), DT_FLOAT16);
  BOOST_CHECK(!ctx.GetInputTensor(0)->HasData());  // metadata only
  BOOST_CHECK(ctx.GetOutputTensor(0)->GetStorageShape() == Shape({6}));
  BOOST_CHECK(!ctx.GetOutputTensor(0)->HasData());
  BOOST_CHECK(ctx.GetInputTensor(1) == nullptr);
  BOOST_CHECK(ctx.GetOutputTensor(1) == nullptr);
  BOOST_CHECK_EQUAL(loads, 0);  // lazily: nothing read yet
  auto p1 = ctx.Platform();
  auto p2 = ctx.Platform();
  BOOST_CHECK_EQUAL(loads, 1);  // once per context
  BOOST_CHECK(p1 == p2);
  BOOST_CHECK_EQUAL(p1->SocVersion(), "Ascend310P3");
}

BOOST_AUTO_TEST_CASE(platform_failure_is_sticky) {
  auto schema = UnarySchema("Sticky");
  RuntimeAttrs attrs;
  const std::map<std::string, std::string> options;
  TempDir d;
  int loads = 0;
  OpCompileContext ctx(*schema, {TensorDesc(Shape{1}, DT_FLOAT)}, InstanceLayout({1}), {TensorDesc(Shape{1}, DT_FLOAT)},
                       InstanceLayout({1}), attrs, options, [&]() {
                         ++loads;
                         return std::make_shared<const PlatformInfos>(PlatformInfos::ForSoc("Late", d.path.string()));
                       });
  std::string first;
  try {
    ctx.Platform();
    BOOST_ERROR("Platform() succeeded without Late.ini");
  } catch (const PlatformError& e) {
    first = e.what();
  }
  BOOST_CHECK(Contains(first, "Late.ini"));
  d.Write("Late.ini", "[version]\nSoC_version=Late\n");  // would load now
  for (int i = 0; i < 3; ++i) {
    try {
      ctx.Platform();
      BOOST_ERROR("a later Platform() call succeeded after a failure");
    } catch (const PlatformError& e) {
      BOOST_CHECK_EQUAL(std::string(e.what()), first);
    }
  }
  BOOST_CHECK_EQUAL(loads, 1);
  // A new context (a new compile) reads again.
  OpCompileContext again(*schema, {TensorDesc(Shape{1}, DT_FLOAT)}, InstanceLayout({1}),
                         {TensorDesc(Shape{1}, DT_FLOAT)}, InstanceLayout({1}), attrs, options, [&]() {
                           return std::make_shared<const PlatformInfos>(PlatformInfos::ForSoc("Late", d.path.string()));
                         });
  BOOST_CHECK_EQUAL(again.Platform()->SocVersion(), "Late");
}

BOOST_AUTO_TEST_CASE(no_loader_is_a_platform_error) {
  auto schema = UnarySchema("NoLoader");
  RuntimeAttrs attrs;
  const std::map<std::string, std::string> options;
  OpCompileContext ctx(*schema, {TensorDesc(Shape{1}, DT_FLOAT)}, InstanceLayout({1}), {TensorDesc(Shape{1}, DT_FLOAT)},
                       InstanceLayout({1}), attrs, options, nullptr);
  BOOST_CHECK_THROW(ctx.Platform(), PlatformError);
  BOOST_CHECK_THROW(ctx.Platform(), PlatformError);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- the engine's compile phase with a C++ op ----------------------------------------------------

namespace {

// What every CountingCompileOp instance saw, shared through the registry's creator.
struct CompileLog {
  std::mutex mu;
  int compiles = 0;
  int executes = 0;
  std::vector<std::string> seen;  // "<soc>|<option a>|<option b>|<input dims>"
  std::string fail_with;          // non-empty: Compile fails with this message
};

// y = x * (number of Compile calls this op saw): execute uses what compile prepared.
class CountingCompileOp final : public CapabilityReportingOp, public EagerExecuteOp, public CompilableOp, public InferMetaOp {
 public:
  CountingCompileOp(std::shared_ptr<const OpSchema> s, std::shared_ptr<CompileLog> log)
      : schema_(std::move(s)), log_(std::move(log)) {}
  uint32_t GetCapabilities() const noexcept override {
    return CustomOpCapability::kEagerExecute | CustomOpCapability::kCompilable | CustomOpCapability::kInferMeta;
  }
  const OpSchema& GetSchema() const noexcept override { return *schema_; }
  graphStatus InferMeta(InferMetaContext* ctx) override {
    ctx->SetOutputs({*ctx->GetInputDesc(0)}, InstanceLayout({1}));
    return GRAPH_SUCCESS;
  }
  graphStatus Compile(gert::OpCompileContext* ctx) override {
    std::lock_guard<std::mutex> lock(log_->mu);
    ++log_->compiles;
    ++factor_;
    if (!log_->fail_with.empty()) return FailWith(*ctx, log_->fail_with);
    std::string soc;
    try {
      soc = ctx->Platform()->SocVersion();
    } catch (const PlatformError& e) {
      return FailWith(*ctx, std::string("Failed to get platform infos: ") + e.what());
    }
    log_->seen.push_back(soc + "|" + ctx->GetOption("a").value_or("-") + "|" + ctx->GetOption("b").value_or("-") + "|" +
                         ctx->GetInputTensor(0)->GetStorageShape().ToString());
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    {
      std::lock_guard<std::mutex> lock(log_->mu);
      ++log_->executes;
    }
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->Desc().shape, DT_FLOAT);
    for (int64_t i = 0; i < x->GetShapeSize(); ++i) y->Data<float>()[i] = x->Data<float>()[i] * static_cast<float>(factor_);
    return GRAPH_SUCCESS;
  }

 private:
  std::shared_ptr<const OpSchema> schema_;
  std::shared_ptr<CompileLog> log_;
  int factor_ = 0;
};

struct CppFixture {
  OpRegistry registry;
  std::shared_ptr<CompileLog> log = std::make_shared<CompileLog>();
  CppFixture() {
    BOOST_REQUIRE(RegisterBuiltinOps(registry).ok());
    auto s = UnarySchema("CountCompileCpp");
    auto op = std::make_shared<CountingCompileOp>(s, log);  // one instance, like a Python adapter
    OpRegistration r;
    r.op_type = s->op_type;
    r.schema = s;
    r.source = "test_compile.cc";
    r.capabilities = op->GetCapabilities();
    r.creator = [op]() { return op; };
    BOOST_REQUIRE(registry.Register(r).ok());
  }
};

const char* kCppGraph = R"({
  "options": {"a": "graph-a", "b": "graph-b"},
  "inputs": [{"name": "x", "dtype": "float32", "shape": [2], "data": [1.5, -2]}],
  "nodes": [{"name": "n0", "op_type": "CountCompileCpp", "inputs": ["x"]},
            {"name": "r", "op_type": "ReluCpp", "inputs": ["n0:0"]}],
  "outputs": ["n0:0", "r:0"]
})";

}  // namespace

BOOST_AUTO_TEST_SUITE(engine_compile)

BOOST_FIXTURE_TEST_CASE(compiling_twice_calls_compile_twice, CppFixture) {
  Graph g = ParseGraph(kCppGraph, "cpp.json", ".");
  Engine engine(registry);
  CompileOptions opts;
  opts.options = {{"b", "cli-b"}};
  opts.soc = "Ascend910B1";
  opts.platform_dir = kPlatformDir;
  CompiledGraph first = engine.Compile(g, opts);
  BOOST_CHECK_EQUAL(log->compiles, 1);
  CompiledGraph second = engine.Compile(g, opts);
  BOOST_CHECK_EQUAL(log->compiles, 2);
  for (const CompiledGraph* cg : {&first, &second}) {
    BOOST_REQUIRE_EQUAL(cg->nodes.size(), 2u);
    for (const auto& n : cg->nodes) BOOST_CHECK_EQUAL(n.stats.compile_calls, n.stats.op_type == "ReluCpp" ? 0u : 1u);
    BOOST_CHECK_EQUAL(cg->options.at("a"), "graph-a");
    BOOST_CHECK_EQUAL(cg->options.at("b"), "cli-b");  // the caller's options override the graph's
  }
  BOOST_CHECK((log->seen == std::vector<std::string>{"Ascend910B1|graph-a|cli-b|[2]", "Ascend910B1|graph-a|cli-b|[2]"}));
  // Running never compiles.
  RunResult r = engine.Run(second, 3);
  BOOST_CHECK_EQUAL(log->compiles, 2);
  BOOST_CHECK_EQUAL(log->executes, 3);
  const Tensor& y = r.outputs.at("n0:0");
  BOOST_CHECK_EQUAL(y.Data<float>()[0], 3.0f);  // 1.5 * 2 compiles
  BOOST_CHECK_EQUAL(y.Data<float>()[1], -4.0f);
  for (const auto& n : second.nodes) BOOST_CHECK_EQUAL(n.stats.compile_calls, n.stats.op_type == "ReluCpp" ? 0u : 1u);
}

BOOST_FIXTURE_TEST_CASE(default_platform_is_host, CppFixture) {
  Graph g = ParseGraph(kCppGraph, "cpp.json", ".");
  Engine engine(registry);
  engine.Compile(g);
  BOOST_CHECK((log->seen == std::vector<std::string>{"host|graph-a|graph-b|[2]"}));
}

BOOST_FIXTURE_TEST_CASE(unknown_soc_fails_the_node_that_reads_it, CppFixture) {
  Graph g = ParseGraph(kCppGraph, "cpp.json", ".");
  Engine engine(registry);
  CompileOptions opts;
  opts.soc = "NoSuchSoc";
  opts.platform_dir = kPlatformDir;
  try {
    engine.Compile(g, opts);
    BOOST_ERROR("Compile accepted an unknown SoC");
  } catch (const EngineError& e) {
    BOOST_CHECK_EQUAL(e.node(), "n0");
    BOOST_CHECK_MESSAGE(Contains(e.what(), "Failed to get platform infos"), e.what());
    BOOST_CHECK_MESSAGE(Contains(e.what(), kPlatformDir + "/NoSuchSoc.ini"), e.what());
    BOOST_CHECK_MESSAGE(Contains(e.what(), "CountCompileCpp"), e.what());
  }
  BOOST_CHECK_EQUAL(log->executes, 0);
}

BOOST_FIXTURE_TEST_CASE(failing_compile_names_the_node_and_nothing_runs, CppFixture) {
  log->fail_with = "no tiling fits 17";
  Graph g = ParseGraph(kCppGraph, "cpp.json", ".");
  Engine engine(registry);
  try {
    engine.Compile(g);
    BOOST_ERROR("Compile did not fail");
  } catch (const EngineError& e) {
    BOOST_CHECK_EQUAL(e.node(), "n0");
    BOOST_CHECK_MESSAGE(Contains(e.what(), "'n0'"), e.what());
    BOOST_CHECK_MESSAGE(Contains(e.what(), "CountCompileCpp"), e.what());
    BOOST_CHECK_MESSAGE(Contains(e.what(), "no tiling fits 17"), e.what());
    BOOST_CHECK_MESSAGE(Contains(e.what(), "test_compile.cc"), e.what());  // the op's source
  }
  BOOST_CHECK_EQUAL(log->compiles, 1);
  BOOST_CHECK_EQUAL(log->executes, 0);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- Python compile through the plugin host -------------------------------------------------------

namespace {

std::string Case(const std::string& name) { return kSource + "/plugins/testing/compile/" + name; }

HostOptions Opts(std::vector<std::string> paths) { return ge_test::HostTestOptions(std::move(paths)); }

std::string Describe(const std::vector<PluginReport>& reports) {
  std::ostringstream os;
  for (const auto& r : reports) os << "\n  " << r.name << " [" << r.status << "] " << r.path << ": " << r.error.OneLine();
  return os.str();
}

struct HostFixture {
  OpRegistry registry;
  std::unique_ptr<PluginHost> host;
  HostFixture() {
    BOOST_REQUIRE(RegisterBuiltinOps(registry).ok());
    host = std::make_unique<PluginHost>(
        Opts({Case("keep"), Case("failing"), Case("bad_signature"), Case("swap")}), registry);
    const auto& reports = host->LoadAll();
    for (const std::string name : {"compile_keep", "compile_fails", "compile_swap"}) {
      auto it = std::find_if(reports.begin(), reports.end(), [&](const PluginReport& r) { return r.name == name; });
      BOOST_REQUIRE_MESSAGE(it != reports.end() && it->ok(), name << Describe(reports));
    }
  }
};

const char* kKeepGraph = R"({
  "inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1]}],
  "nodes": [{"name": "k", "op_type": "CmpKeep", "inputs": ["x"]}],
  "outputs": ["k:0"]
})";

}  // namespace

BOOST_AUTO_TEST_SUITE(python_compile)

BOOST_FIXTURE_TEST_CASE(compiled_twice_sees_two_calls_and_expired_objects, HostFixture) {
  Graph g = ParseGraph(kKeepGraph, "keep.json", ".");
  Engine engine(registry);
  const uint64_t before = host->PythonCalls();
  CompiledGraph first = engine.Compile(g);
  BOOST_CHECK_EQUAL(host->PythonCalls() - before, 2u);  // infer_meta + compile
  // The second compile checks that all 6 objects kept by the first expired
  // (CmpKeep raises otherwise, and Compile throws).
  CompiledGraph second;
  try {
    second = engine.Compile(g);
  } catch (const EngineError& e) {
    BOOST_FAIL("second compile failed: " << e.what() << "\n" << e.details());
  }
  BOOST_CHECK_EQUAL(host->PythonCalls() - before, 4u);
  BOOST_CHECK_EQUAL(second.nodes.at(0).stats.compile_calls, 1u);
  RunResult r = engine.Run(second, 2);
  BOOST_CHECK_EQUAL(host->PythonCalls() - before, 6u);  // execute never compiles
  BOOST_CHECK_EQUAL(r.outputs.at("k:0").Data<float>()[0], 1.0f + 2 * 1000 + 6);  // 2 calls, 6 expired objects
}

BOOST_FIXTURE_TEST_CASE(python_compile_exception_is_a_full_error, HostFixture) {
  Graph g = ParseGraph(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1]}],
                          "nodes": [{"name": "bad", "op_type": "CmpFails", "inputs": ["x"]}],
                          "outputs": ["bad:0"]})",
                       "fails.json", ".");
  Engine engine(registry);
  try {
    engine.Compile(g);
    BOOST_ERROR("Compile did not fail");
  } catch (const EngineError& e) {
    BOOST_CHECK_EQUAL(e.node(), "bad");
    BOOST_CHECK_MESSAGE(Contains(e.what(), "CmpFails"), e.what());
    BOOST_CHECK_MESSAGE(Contains(e.what(), "compile_fails.py"), e.what());
    BOOST_CHECK_MESSAGE(Contains(e.what(), "ValueError: compile exploded 31"), e.what());
    BOOST_CHECK_MESSAGE(Contains(e.details(), "Traceback"), e.details());
    BOOST_CHECK_MESSAGE(Contains(e.details(), "_explode"), e.details());
  }
  // The host keeps working: the other plugin still compiles.
  Graph ok = ParseGraph(kKeepGraph, "keep.json", ".");
  BOOST_CHECK_NO_THROW(engine.Compile(ok));
}

BOOST_FIXTURE_TEST_CASE(legacy_compile_signature_fails_at_load, HostFixture) {
  BOOST_CHECK(!registry.Find("CmpBadSig").has_value());
  const auto& reports = host->Reports();
  auto it = std::find_if(reports.begin(), reports.end(), [](const PluginReport& r) { return r.name == "compile_bad_sig"; });
  BOOST_REQUIRE_MESSAGE(it != reports.end(), Describe(reports));
  BOOST_CHECK_EQUAL(it->status, ge::plugin::PluginStatus::kError);
  BOOST_CHECK(it->error.kind == ge::plugin::ErrorKind::kValidation);
  for (const std::string part : {"CmpBadSig", "compile", "expected 2 positional", "actual"}) {
    BOOST_CHECK_MESSAGE(Contains(it->error.message, part), "lacks '" << part << "': " << it->error.message);
  }
}

BOOST_FIXTURE_TEST_CASE(compile_is_validated_again_on_every_call, HostFixture) {
  Graph g = ParseGraph(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1]}],
                          "nodes": [{"name": "s", "op_type": "CmpSwap", "inputs": ["x"]}],
                          "outputs": ["s:0"]})",
                       "swap.json", ".");
  Engine engine(registry);
  BOOST_REQUIRE_NO_THROW(engine.Compile(g));  // valid; swaps in compile(self, ctx)
  try {
    engine.Compile(g);
    BOOST_ERROR("the swapped-in legacy compile was accepted");
  } catch (const EngineError& e) {
    BOOST_CHECK_EQUAL(e.node(), "s");
    BOOST_CHECK_MESSAGE(Contains(e.what(), "expected 2 positional"), e.what());
    BOOST_CHECK_MESSAGE(!Contains(e.what(), "legacy compile ran"), e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()
