// GE's C++ custom op API (graph/custom_op.h, exe_graph/runtime/*.h) as GE code
// uses it: classes written the way GE's examples write them (no addition of
// ours), registered with REG_AUTO_MAPPING_OP, run in the engine; their
// capabilities come from their interfaces; failures without details and
// escaping exceptions are reported naming op, node and call; IMPL_OP infer
// functions carried on a registration; ge::AscendString.
#define BOOST_TEST_MODULE upstream_cpp_api
#include <boost/test/unit_test.hpp>

#include "test_util.h"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

// Only GE's headers for the op classes below, as GE op code includes them.
#include "graph/custom_op.h"

#include "ge/engine/engine.h"
#include "ge/engine/graph.h"
#include "ge/op/custom_op.h"
#include "ge/op/library_registrations.h"
#include "ge/op/op_registry.h"

namespace {

// What the ops below saw, for the tests to check.
struct Seen {
  std::vector<std::string> node_names;  // GetNodeName() at each Execute
  std::vector<std::string> node_types;  // GetNodeType() at each Execute
  int compiles = 0;
};
Seen& Log() {
  static Seen seen;
  return seen;
}

constexpr size_t kInputX = 0U;
constexpr size_t kInputY = 1U;
constexpr size_t kOutputZ = 0U;

}  // namespace

// ---- ops written as GE's examples write them ------------------------------------------------

namespace ge {

// z = x + alpha * y (float32), eagerly; alpha is the node's first attribute.
class UpEagerAdd : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus Execute(gert::EagerOpExecutionContext *ctx) override {
    const gert::Tensor *input_x = ctx->GetInputTensor(kInputX);
    const gert::Tensor *input_y = ctx->GetRequiredInputTensor(kInputY);
    if (input_x == nullptr || input_y == nullptr) {
      return GRAPH_FAILED;
    }
    gert::Tensor *output_z =
        ctx->MallocOutputTensor(kOutputZ, input_x->GetShape(), input_x->GetFormat(), input_x->GetDataType());
    if (output_z == nullptr) {
      return GRAPH_FAILED;
    }
    const float *alpha = ctx->GetAttrs()->GetFloat(0);
    float *scratch = static_cast<float *>(ctx->MallocWorkSpace(sizeof(float)));
    if (alpha == nullptr || scratch == nullptr) {
      return GRAPH_FAILED;
    }
    *scratch = *alpha;
    const float *x = input_x->GetData<float>();
    const float *y = input_y->GetData<float>();
    float *z = output_z->GetData<float>();
    for (int64_t i = 0; i < input_x->GetShapeSize(); ++i) {
      z[i] = x[i] + *scratch * y[i];
    }
    Log().node_names.emplace_back(ctx->GetNodeName());
    Log().node_types.emplace_back(ctx->GetNodeType());
    return GRAPH_SUCCESS;
  }

  graphStatus InferShape(gert::InferShapeContext *ctx) override {
    const auto *input_shape = ctx->GetInputShape(kInputX);
    auto *output_shape = ctx->GetOutputShape(kOutputZ);
    if (input_shape == nullptr || output_shape == nullptr) {
      return GRAPH_FAILED;
    }
    output_shape->SetDimNum(input_shape->GetDimNum());
    for (size_t i = 0; i < input_shape->GetDimNum(); ++i) {
      output_shape->SetDim(i, input_shape->GetDim(i));
    }
    return GRAPH_SUCCESS;
  }

  graphStatus InferDataType(gert::InferDataTypeContext *ctx) override {
    return ctx->SetOutputDataType(kOutputZ, ctx->GetInputDataType(kInputX));
  }
};

REG_AUTO_MAPPING_OP(UpEagerAdd);

// z = x + y through a kernel: Compile reads the kernel binary named by the
// compile option "test.kernel_so"; DeclareLaunchArgs declares one launch.
class UpAnnotatedAdd : public CompilableOp, public AnnotatedArgsOp, public ShapeInferOp {
 public:
  graphStatus Compile(gert::OpCompileContext *ctx) override {
    AscendString path;
    if (ctx->GetOption(AscendString("test.kernel_so"), path) != GRAPH_SUCCESS) {
      return GRAPH_FAILED;
    }
    std::ifstream in(path.GetString(), std::ios::binary);
    binary_.assign(std::istreambuf_iterator<char>(in), {});
    ++Log().compiles;
    return binary_.empty() ? GRAPH_FAILED : GRAPH_SUCCESS;
  }

  graphStatus DeclareLaunchArgs(gert::AnnotatedArgsContext &ctx) override {
    const gert::Tensor *input_x = ctx.GetInputTensor(kInputX);
    const gert::Tensor *input_y = ctx.GetInputTensor(kInputY);
    const gert::Tensor *output_z = ctx.GetOutputTensor(kOutputZ);
    if (input_x == nullptr || input_y == nullptr || output_z == nullptr || binary_.empty()) {
      return GRAPH_FAILED;
    }
    gert::AnnotatedKernelArgs args(gert::InputAddr{kInputX, input_x->GetAddr()},
                                   gert::InputAddr{kInputY, input_y->GetAddr()},
                                   gert::OutputAddr{kOutputZ, output_z->GetAddr()});
    if (args.AppendArg(static_cast<uint64_t>(input_x->GetShapeSize())) != GRAPH_SUCCESS) {
      return GRAPH_FAILED;
    }
    gert::AnnotatedKernelLaunchInfo launch_info;
    launch_info.kernel_name = "add_kernel";
    launch_info.kernel_bin = binary_.data();
    launch_info.kernel_bin_size = binary_.size();
    launch_info.block_dim = 2;
    return ctx.AddLaunch(launch_info, std::move(args));
  }

  graphStatus InferShape(gert::InferShapeContext *ctx) override {
    *ctx->GetOutputShape(kOutputZ) = *ctx->GetInputShape(kInputX);
    return GRAPH_SUCCESS;
  }

  graphStatus InferDataType(gert::InferDataTypeContext *ctx) override {
    return ctx->SetOutputDataType(kOutputZ, ctx->GetInputDataType(kInputX));
  }

 private:
  std::vector<uint8_t> binary_;
};

REG_AUTO_MAPPING_OP(UpAnnotatedAdd);

// Fails without details.
class UpFailing : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus Execute(gert::EagerOpExecutionContext *) override { return GRAPH_FAILED; }
  graphStatus InferShape(gert::InferShapeContext *ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(gert::InferDataTypeContext *ctx) override {
    return ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
  }
};

REG_AUTO_MAPPING_OP(UpFailing);

// Throws out of Execute.
class UpThrowing : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus Execute(gert::EagerOpExecutionContext *) override { throw std::runtime_error("boom in Execute"); }
  graphStatus InferShape(gert::InferShapeContext *ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(gert::InferDataTypeContext *ctx) override {
    return ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
  }
};

REG_AUTO_MAPPING_OP(UpThrowing);

// InferShape refuses with GE's invalid-parameter code.
class UpBadInfer : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus Execute(gert::EagerOpExecutionContext *) override { return GRAPH_SUCCESS; }
  graphStatus InferShape(gert::InferShapeContext *) override { return GRAPH_PARAM_INVALID; }
  graphStatus InferDataType(gert::InferDataTypeContext *) override { return GRAPH_SUCCESS; }
};

REG_AUTO_MAPPING_OP(UpBadInfer);

// Execute only: its inference comes from IMPL_OP functions on the registration.
class UpExecuteOnly : public EagerExecuteOp {
 public:
  graphStatus Execute(gert::EagerOpExecutionContext *ctx) override {
    const gert::Tensor *x = ctx->GetInputTensor(0);
    gert::Tensor *y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetFormat(), ge::DT_INT32);
    if (y == nullptr) {
      return GRAPH_FAILED;
    }
    for (int64_t i = 0; i < x->GetShapeSize(); ++i) {
      y->GetData<int32_t>()[i] = static_cast<int32_t>(x->GetData<float>()[i]);
    }
    return GRAPH_SUCCESS;
  }
};

REG_AUTO_MAPPING_OP(UpExecuteOnly);

}  // namespace ge

// ---- helpers ----------------------------------------------------------------------------------

namespace {

using namespace ge;
using ge_test::Contains;

// What this executable registered at static initialization (taken once).
const LibraryRegistrations& StaticRegistrations() {
  static const LibraryRegistrations taken = TakeRegistrations();
  return taken;
}

const RegisteredCustomOp* FindCustomOp(const std::string& op_type) {
  for (const auto& op : StaticRegistrations().custom_ops) {
    if (op.op_type == op_type) return &op;
  }
  return nullptr;
}

std::shared_ptr<OpSchema> Schema(const std::string& op_type, std::size_t inputs) {
  auto s = std::make_shared<OpSchema>();
  s->op_type = op_type;
  for (std::size_t i = 0; i < inputs; ++i) s->inputs.push_back({i == 0 ? "x" : "y", IrInputKind::kRequired});
  s->outputs = {{"z", IrOutputKind::kRequired}};
  return s;
}

// The IMPL_OP-style infer functions of UpExecuteOnly: y has x's shape, int32.
graphStatus CopyShape(gert::InferShapeContext *ctx) {
  *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
  return GRAPH_SUCCESS;
}
graphStatus Int32Output(gert::InferDataTypeContext *ctx) { return ctx->SetOutputDataType(0, DT_INT32); }

// Registers a REG_AUTO_MAPPING_OP class with a schema the test gives it.
void Add(OpRegistry &registry, std::shared_ptr<OpSchema> schema, InferShapeKernelFunc infer_shape = nullptr,
         InferDataTypeKernelFunc infer_datatype = nullptr) {
  const RegisteredCustomOp *custom = FindCustomOp(schema->op_type);
  BOOST_REQUIRE_MESSAGE(custom != nullptr, schema->op_type << " was not registered by REG_AUTO_MAPPING_OP");
  OpRegistration r;
  r.op_type = schema->op_type;
  r.schema = schema;
  r.source = "test_upstream_cpp_api.cc";
  auto creator = custom->creator;
  r.creator = [creator]() { return std::shared_ptr<BaseCustomOp>(creator()); };
  r.capabilities = OpCapabilities(*creator());
  r.infer_shape = infer_shape;
  r.infer_datatype = infer_datatype;
  BOOST_REQUIRE(registry.Register(std::move(r)).ok());
}

// z = x + y over float32, two blocks.
const char *kAddKernel = R"(
#include <stdint.h>
void add_kernel(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  const float* x = (const float*)(uintptr_t)args[0];
  const float* y = (const float*)(uintptr_t)args[1];
  float* z = (float*)(uintptr_t)args[2];
  const uint64_t n = args[3], chunk = (n + block_dim - 1) / block_dim;
  const uint64_t b = block_idx * chunk, e = b + chunk < n ? b + chunk : n;
  for (uint64_t i = b; i < e; ++i) z[i] = x[i] + y[i];
}
)";

struct Fixture {
  ge_test::TempDir dir;
  std::string kernel_so;
  OpRegistry registry;
  Fixture() {
    const std::string src = dir.Write("add.c", kAddKernel);
    kernel_so = (dir.path / "add.so").string();
    const std::string cmd = "cc -O2 -shared -fPIC -o '" + kernel_so + "' '" + src + "' 2>&1";
    BOOST_REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "cc failed: " << cmd);
    auto eager = Schema("UpEagerAdd", 2);
    eager->attrs = {{"alpha", AttrType::VT_FLOAT, AttrValue(1.0f)}};
    Add(registry, eager);
    Add(registry, Schema("UpAnnotatedAdd", 2));
    Add(registry, Schema("UpFailing", 1));
    Add(registry, Schema("UpThrowing", 1));
    Add(registry, Schema("UpBadInfer", 1));
    Add(registry, Schema("UpExecuteOnly", 1), CopyShape, Int32Output);
  }
};

// Compiles and runs `nodes` on x = [1, 2, 3, 4], y = [10, 20, 30, 40].
RunResult RunGraph(OpRegistry &registry, const std::string &nodes, const std::string &outputs,
                   const std::map<std::string, std::string> &options = {}, int repeat = 1,
                   CompiledGraph *keep = nullptr) {
  const std::string text = R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [4], "data": [1, 2, 3, 4]},
                                          {"name": "y", "dtype": "float32", "shape": [4], "data": [10, 20, 30, 40]}],
                               "nodes": )" + nodes + R"(, "outputs": )" + outputs + "}";
  static std::vector<std::unique_ptr<Graph>> graphs;  // a compiled graph borrows its Graph
  graphs.push_back(std::make_unique<Graph>(ParseGraph(text, "upstream.json", ".")));
  Engine engine(registry);
  CompileOptions copts;
  copts.options = options;
  CompiledGraph cg = engine.Compile(*graphs.back(), copts);
  RunResult r = engine.Run(cg, repeat);
  if (keep != nullptr) *keep = std::move(cg);
  return r;
}

// The EngineError of compiling and running `nodes` (fails the test when there is none).
EngineError ErrorOf(OpRegistry &registry, const std::string &nodes, const std::string &outputs) {
  try {
    RunGraph(registry, nodes, outputs);
  } catch (const EngineError &e) {
    return e;
  }
  BOOST_FAIL("the graph ran without an error");
  throw std::logic_error("unreachable");
}

const CompiledNode &NodeNamed(const CompiledGraph &cg, const std::string &name) {
  for (const auto &n : cg.nodes) {
    if (n.stats.name == name) return n;
  }
  throw std::runtime_error("no node " + name);
}

}  // namespace

// ---- registration ---------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(registration)

BOOST_AUTO_TEST_CASE(reg_auto_mapping_op_registers_the_class_name) {
  std::unordered_set<std::string> names;
  for (const auto &op : StaticRegistrations().custom_ops) names.insert(op.op_type);
  for (const char *name : {"UpEagerAdd", "UpAnnotatedAdd", "UpFailing", "UpThrowing", "UpBadInfer", "UpExecuteOnly"}) {
    BOOST_CHECK_MESSAGE(names.count(name) == 1, name << " registered " << names.count(name) << " time(s)");
  }
  // The creator makes a new object of that class each time.
  const RegisteredCustomOp *add = FindCustomOp("UpEagerAdd");
  BOOST_REQUIRE(add != nullptr);
  std::unique_ptr<BaseCustomOp> a = add->creator(), b = add->creator();
  BOOST_REQUIRE(a && b);
  BOOST_CHECK(a.get() != b.get());
  BOOST_CHECK(dynamic_cast<UpEagerAdd *>(a.get()) != nullptr);
  // Taken once: the next take has nothing of it.
  StaticRegistrations();
  BOOST_CHECK(TakeRegistrations().custom_ops.empty());
}

BOOST_AUTO_TEST_CASE(creator_register_overloads) {
  StaticRegistrations();  // the executable's own are taken first
  {
    const CustomOpCreatorRegister by_function("ByFunction", BaseOpCreator([]() {
                                                return std::unique_ptr<BaseCustomOp>(new UpFailing());
                                              }));
    const CustomOpCreatorRegister by_pointer(AscendString("ByPointer"),
                                             static_cast<CustomOpCreateFunc>([]() -> BaseCustomOp * {
                                               return new UpThrowing();
                                             }));
    const CustomOpCreatorRegister null_pointer("NullPointer", static_cast<CustomOpCreateFunc>(nullptr));
  }
  LibraryRegistrations taken = TakeRegistrations();
  BOOST_REQUIRE_EQUAL(taken.custom_ops.size(), 3u);
  BOOST_CHECK_EQUAL(taken.custom_ops[0].op_type, "ByFunction");
  BOOST_CHECK_EQUAL(taken.custom_ops[1].op_type, "ByPointer");
  BOOST_CHECK_EQUAL(taken.custom_ops[2].op_type, "NullPointer");
  BOOST_CHECK(dynamic_cast<UpFailing *>(taken.custom_ops[0].creator().get()) != nullptr);
  BOOST_CHECK(dynamic_cast<UpThrowing *>(taken.custom_ops[1].creator().get()) != nullptr);
  // A null function still gives a callable creator; it makes no op.
  BOOST_REQUIRE(static_cast<bool>(taken.custom_ops[2].creator));
  BOOST_CHECK(taken.custom_ops[2].creator() == nullptr);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- capabilities from interfaces -----------------------------------------------------------

BOOST_AUTO_TEST_SUITE(capabilities)

BOOST_AUTO_TEST_CASE(interfaces_decide_for_a_class_without_a_mask) {
  std::shared_ptr<BaseCustomOp> eager(new UpEagerAdd());
  BOOST_CHECK(CustomOpCast<EagerExecuteOp>(eager) != nullptr);
  BOOST_CHECK(CustomOpCast<ShapeInferOp>(eager) != nullptr);
  BOOST_CHECK(CustomOpCast<CompilableOp>(eager) == nullptr);
  BOOST_CHECK(CustomOpCast<AnnotatedArgsOp>(eager) == nullptr);
  BOOST_CHECK(CustomOpCast<InferMetaOp>(eager) == nullptr);
  BOOST_CHECK(CustomOpCast<PortableOp>(eager) == nullptr);
  BOOST_CHECK_EQUAL(CapabilityString(OpCapabilities(*eager)), "eager_execute,infer_meta");

  std::shared_ptr<BaseCustomOp> annotated(new UpAnnotatedAdd());
  BOOST_CHECK(CustomOpCast<EagerExecuteOp>(annotated) == nullptr);
  BOOST_CHECK(CustomOpCast<CompilableOp>(annotated) != nullptr);
  BOOST_CHECK(CustomOpCast<AnnotatedArgsOp>(annotated) != nullptr);
  BOOST_CHECK_EQUAL(CapabilityString(OpCapabilities(*annotated)), "compilable,annotated_args,infer_meta");

  std::shared_ptr<BaseCustomOp> execute_only(new UpExecuteOnly());
  BOOST_CHECK_EQUAL(CapabilityString(OpCapabilities(*execute_only)), "eager_execute");
}

BOOST_FIXTURE_TEST_CASE(impl_op_infer_counts_as_infer_meta, Fixture) {
  auto reg = registry.Find("UpExecuteOnly");
  BOOST_REQUIRE(reg);
  BOOST_CHECK_EQUAL(CapabilityString(reg->capabilities), "eager_execute,infer_meta");
  BOOST_CHECK_EQUAL(CapabilityString(registry.Find("UpEagerAdd")->capabilities), "eager_execute,infer_meta");
}

BOOST_AUTO_TEST_SUITE_END()

// ---- the engine -----------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine)

BOOST_FIXTURE_TEST_CASE(eager_compile_annotated_and_infer_run_in_the_engine, Fixture) {
  Log() = Seen{};
  CompiledGraph cg;
  RunResult r = RunGraph(registry,
                         R"([{"name": "add", "op_type": "UpEagerAdd", "inputs": ["x", "y"], "attrs": {"alpha": 0.5}},
                             {"name": "kadd", "op_type": "UpAnnotatedAdd", "inputs": ["add:0", "y"]}])",
                         R"(["add:0", "kadd:0"])", {{"test.kernel_so", kernel_so}}, 3, &cg);
  const float x[] = {1, 2, 3, 4}, y[] = {10, 20, 30, 40};
  const Tensor &add = r.outputs.at("add:0");
  const Tensor &kadd = r.outputs.at("kadd:0");
  BOOST_CHECK_EQUAL(add.GetDataType(), DT_FLOAT);
  BOOST_CHECK(add.GetStorageShape() == Shape({4}));
  BOOST_CHECK(kadd.GetStorageShape() == Shape({4}));
  for (int i = 0; i < 4; ++i) {
    BOOST_CHECK_EQUAL(add.Data<float>()[i], x[i] + 0.5f * y[i]);
    BOOST_CHECK_EQUAL(kadd.Data<float>()[i], x[i] + 0.5f * y[i] + y[i]);
  }
  // Inference ran through ShapeInferOp and gave the outputs' descriptions.
  const CompiledNode &n_add = NodeNamed(cg, "add");
  const CompiledNode &n_kadd = NodeNamed(cg, "kadd");
  BOOST_REQUIRE(n_add.inferred.has_value());
  BOOST_CHECK((*n_add.inferred)[0].data_type == DT_FLOAT);
  BOOST_CHECK((*n_add.inferred)[0].shape.GetStorageShape() == Shape({4}));
  BOOST_CHECK_EQUAL(n_add.stats.infer_meta_calls, 1u);
  BOOST_CHECK_EQUAL(n_add.stats.execute_calls, 3u);
  // Compile once, declare once, the plan replayed at every run.
  BOOST_CHECK_EQUAL(n_kadd.stats.compile_calls, 1u);
  BOOST_CHECK_EQUAL(Log().compiles, 1);
  BOOST_CHECK_EQUAL(n_kadd.stats.declare_calls, 1u);
  BOOST_CHECK_EQUAL(n_kadd.stats.execute_calls, 0u);
  BOOST_CHECK_EQUAL(n_kadd.stats.kernel_launches, 3u);
  // The contexts named the node and its op_type.
  BOOST_CHECK((Log().node_names == std::vector<std::string>{"add", "add", "add"}));
  BOOST_CHECK((Log().node_types == std::vector<std::string>{"UpEagerAdd", "UpEagerAdd", "UpEagerAdd"}));
}

BOOST_FIXTURE_TEST_CASE(impl_op_infer_functions_describe_the_outputs, Fixture) {
  CompiledGraph cg;
  RunResult r = RunGraph(registry, R"([{"name": "cast", "op_type": "UpExecuteOnly", "inputs": ["y"]}])",
                         R"(["cast:0"])", {}, 1, &cg);
  const CompiledNode &n = NodeNamed(cg, "cast");
  BOOST_REQUIRE(n.inferred.has_value());
  BOOST_CHECK((*n.inferred)[0].data_type == DT_INT32);
  BOOST_CHECK((*n.inferred)[0].shape.GetStorageShape() == Shape({4}));
  BOOST_CHECK_EQUAL(n.stats.infer_meta_calls, 1u);
  BOOST_CHECK_EQUAL(r.outputs.at("cast:0").Data<int32_t>()[3], 40);
}

BOOST_FIXTURE_TEST_CASE(impl_op_infer_shape_without_datatype_is_an_error, Fixture) {
  OpRegistry partial;
  Add(partial, Schema("UpExecuteOnly", 1), CopyShape, nullptr);
  EngineError e = ErrorOf(partial, R"([{"name": "cast", "op_type": "UpExecuteOnly", "inputs": ["y"]}])", R"(["cast:0"])");
  BOOST_CHECK(e.kind() == EngineError::Kind::kOp);
  BOOST_CHECK_MESSAGE(Contains(e.what(), "node 'cast' (UpExecuteOnly): output 0 has no data type: IMPL_OP registered "
                                         "InferShape without InferDataType"),
                      e.what());
}

BOOST_FIXTURE_TEST_CASE(dynamic_outputs_need_infer_meta, Fixture) {
  OpRegistry dyn;
  auto s = Schema("UpFailing", 1);
  s->outputs = {{"zs", IrOutputKind::kDynamic}};
  Add(dyn, s);
  EngineError e = ErrorOf(dyn, R"([{"name": "d", "op_type": "UpFailing", "inputs": ["x"]}])", R"(["d:0"])");
  BOOST_CHECK_MESSAGE(Contains(e.what(), "node 'd' (UpFailing): output 'zs' is dynamic, which needs infer_meta"),
                      e.what());
  BOOST_CHECK_MESSAGE(Contains(e.what(), "ShapeInferOp lays outputs out by the IR"), e.what());
}

BOOST_AUTO_TEST_SUITE_END()

// ---- errors ---------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(errors)

BOOST_FIXTURE_TEST_CASE(a_failure_code_without_details_names_op_node_call_and_code, Fixture) {
  EngineError e = ErrorOf(registry, R"([{"name": "f", "op_type": "UpFailing", "inputs": ["x"]}])", R"(["f:0"])");
  BOOST_CHECK(e.kind() == EngineError::Kind::kOp);
  BOOST_CHECK_EQUAL(e.node(), "f");
  BOOST_CHECK_EQUAL(std::string(e.what()), "node 'f' (UpFailing): execute failed: returned graphStatus 4294967295");
}

BOOST_FIXTURE_TEST_CASE(an_escaping_exception_names_op_node_call_and_what, Fixture) {
  EngineError e = ErrorOf(registry, R"([{"name": "t", "op_type": "UpThrowing", "inputs": ["x"]}])", R"(["t:0"])");
  BOOST_CHECK(e.kind() == EngineError::Kind::kOp);
  BOOST_CHECK_EQUAL(std::string(e.what()), "node 't' (UpThrowing): execute failed: C++ exception: boom in Execute");
}

BOOST_FIXTURE_TEST_CASE(a_failing_infer_shape_names_the_call_and_code, Fixture) {
  EngineError e = ErrorOf(registry, R"([{"name": "b", "op_type": "UpBadInfer", "inputs": ["x"]}])", R"(["b:0"])");
  BOOST_CHECK_EQUAL(std::string(e.what()), "node 'b' (UpBadInfer): InferShape failed: returned graphStatus 50331649");
}

BOOST_FIXTURE_TEST_CASE(a_missing_compile_option_fails_the_compile_with_the_code, Fixture) {
  EngineError e =
      ErrorOf(registry, R"([{"name": "k", "op_type": "UpAnnotatedAdd", "inputs": ["x", "y"]}])", R"(["k:0"])");
  BOOST_CHECK_EQUAL(std::string(e.what()),
                    "node 'k' (UpAnnotatedAdd): compile failed (test_upstream_cpp_api.cc): returned graphStatus "
                    "4294967295");
}

BOOST_AUTO_TEST_CASE(details_in_the_error_slot_reach_the_message) {
  // ReluCpp (builtin, written against GE's interfaces) leaves why it refuses
  // a dtype in the error slot; the engine's message says it.
  OpRegistry builtins;
  BOOST_REQUIRE(RegisterBuiltinOps(builtins).ok());
  const std::string graph = R"({"inputs": [{"name": "x", "dtype": "int8", "shape": [2], "data": [1, -1]}],
                                "nodes": [{"name": "r", "op_type": "ReluCpp", "inputs": ["x"]}], "outputs": ["r:0"]})";
  Graph g = ParseGraph(graph, "relu.json", ".");
  Engine engine(builtins);
  try {
    engine.Compile(g);
    BOOST_ERROR("ReluCpp accepted int8");
  } catch (const EngineError &e) {
    BOOST_CHECK_EQUAL(std::string(e.what()), "node 'r' (ReluCpp): InferDataType failed: ReluCpp does not support dtype int8");
  }
}

BOOST_AUTO_TEST_CASE(context_methods_fail_the_ge_way_and_keep_the_reason) {
  // A context method that fails the GE way (null) leaves its reason for the engine.
  RuntimeAttrs attrs;
  auto s = Schema("UpEagerAdd", 2);
  Tensor x = Tensor::Allocate(TensorDesc(Shape{2}, DT_FLOAT));
  EagerOpExecutionContext ctx(*s, {&x}, InstanceLayout({1, 0}), attrs, InstanceLayout({1}));
  BOOST_CHECK(ctx.MallocOutputTensor(3, StorageShape(Shape{2}), StorageFormat(), DT_FLOAT) == nullptr);
  BOOST_CHECK(ctx.HasError());
  BOOST_CHECK_MESSAGE(Contains(ctx.GetError().message(), "MallocOutputTensor(3): output index 3 out of range"),
                      ctx.GetError().message());
  // GE's required/dynamic input accessors follow the IR layout.
  BOOST_CHECK_EQUAL(ctx.GetRequiredInputTensor(0), &x);
  BOOST_CHECK(ctx.GetRequiredInputTensor(1) == nullptr);  // no instance
  BOOST_CHECK(ctx.GetDynamicInputTensor(0, 1) == nullptr);
  BOOST_CHECK(ctx.GetIrInputInstanceInfo(1) != nullptr && ctx.GetIrInputInstanceInfo(1)->GetInstanceNum() == 0u);
  BOOST_CHECK(ctx.GetIrInputInstanceInfo(2) == nullptr);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- contexts and values with GE's names ----------------------------------------------------

BOOST_AUTO_TEST_SUITE(ge_names)

BOOST_AUTO_TEST_CASE(compile_context_get_option) {
  auto s = Schema("UpAnnotatedAdd", 2);
  RuntimeAttrs attrs;
  const std::map<std::string, std::string> options{{"a", "1"}, {"empty", ""}};
  TensorDesc d(Shape{3}, DT_FLOAT);
  OpCompileContext ctx(*s, {d, d}, InstanceLayout({1, 1}), {d}, InstanceLayout({1}), attrs, options, nullptr);
  AscendString value("stale");
  BOOST_CHECK_EQUAL(ctx.GetOption(AscendString("a"), value), GRAPH_SUCCESS);
  BOOST_CHECK(value == "1");
  BOOST_CHECK_EQUAL(ctx.GetOption(AscendString("empty"), value), GRAPH_SUCCESS);
  BOOST_CHECK_EQUAL(value.GetLength(), 0u);
  value = AscendString("stale");
  BOOST_CHECK_EQUAL(ctx.GetOption(AscendString("missing"), value), GRAPH_FAILED);
  BOOST_CHECK_EQUAL(value.GetLength(), 0u);
  const OpCompileContext &cctx = ctx;
  BOOST_CHECK(cctx.GetRequiredInputTensor(1) == cctx.GetInputTensor(1));
  BOOST_CHECK(cctx.GetRequiredOutputTensor(0) == cctx.GetOutputTensor(0));
  BOOST_CHECK(cctx.GetDynamicOutputTensor(0, 1) == nullptr);
  BOOST_CHECK(cctx.GetInputTensor(0)->GetAddr() == nullptr);  // metadata only
}

BOOST_AUTO_TEST_CASE(runtime_attrs_typed_readers) {
  std::vector<AttrValue> values;
  values.emplace_back(int64_t{7});
  values.emplace_back(2.5f);
  values.emplace_back(true);
  values.emplace_back(std::string("hi"));
  const RuntimeAttrs attrs(std::move(values));
  BOOST_REQUIRE(attrs.GetInt(0) != nullptr);
  BOOST_CHECK_EQUAL(*attrs.GetInt(0), 7);
  BOOST_CHECK_EQUAL(*attrs.GetFloat(1), 2.5f);
  BOOST_CHECK_EQUAL(*attrs.GetBool(2), true);
  BOOST_CHECK_EQUAL(std::string(attrs.GetStr(3)), "hi");
  BOOST_CHECK(attrs.GetInt(1) == nullptr);   // another type
  BOOST_CHECK(attrs.GetStr(0) == nullptr);   // another type
  BOOST_CHECK(attrs.GetFloat(9) == nullptr);  // out of range
  BOOST_CHECK(attrs.GetTensor(0) == nullptr);
}

BOOST_AUTO_TEST_CASE(runtime_attrs_list_readers_survive_copies_and_moves) {
  // GE's GetListInt / GetListFloat (gert::TypedContinuousVector views).
  std::vector<AttrValue> values;
  values.emplace_back(std::vector<int64_t>{3, -1, 4});
  values.emplace_back(std::vector<float>{0.5f, 1.5f});
  values.emplace_back(int64_t{2});
  values.emplace_back(std::vector<int64_t>{});
  auto check = [](const gert::RuntimeAttrs& a) {
    const gert::TypedContinuousVector<int64_t>* li = a.GetListInt(0);
    BOOST_REQUIRE(li != nullptr);
    BOOST_REQUIRE_EQUAL(li->GetSize(), 3U);
    BOOST_CHECK_EQUAL(li->GetCapacity(), 3U);
    BOOST_CHECK_EQUAL(li->GetData()[0], 3);
    BOOST_CHECK_EQUAL(li->GetData()[2], 4);
    const gert::TypedContinuousVector<float>* lf = a.GetListFloat(1);
    BOOST_REQUIRE(lf != nullptr);
    BOOST_REQUIRE_EQUAL(lf->GetSize(), 2U);
    BOOST_CHECK_EQUAL(lf->GetData()[1], 1.5f);
    BOOST_CHECK(a.GetListInt(1) == nullptr);   // a float list
    BOOST_CHECK(a.GetListFloat(0) == nullptr);  // an int list
    BOOST_CHECK(a.GetListInt(2) == nullptr);   // a scalar
    BOOST_CHECK(a.GetListInt(9) == nullptr);   // out of range
    BOOST_REQUIRE(a.GetListInt(3) != nullptr);
    BOOST_CHECK_EQUAL(a.GetListInt(3)->GetSize(), 0U);
  };
  RuntimeAttrs original(std::move(values));
  check(original);
  // A copy's views point into the copy, not into the original.
  auto copy = std::make_unique<RuntimeAttrs>(original);
  BOOST_CHECK(copy->GetListInt(0)->GetData() != original.GetListInt(0)->GetData());
  RuntimeAttrs assigned;
  assigned = *copy;
  copy.reset();
  check(assigned);
  RuntimeAttrs moved(std::move(assigned));
  check(moved);
}

BOOST_AUTO_TEST_CASE(tensor_formats) {
  TensorDesc d(Shape{1, 2, 3, 4}, DT_FLOAT16);
  d.format = StorageFormat(FORMAT_NCHW, FORMAT_NC1HWC0);
  gert::Tensor t = gert::Tensor::MetaOnly(d);
  BOOST_CHECK_EQUAL(t.GetOriginFormat(), FORMAT_NCHW);
  BOOST_CHECK_EQUAL(t.GetStorageFormat(), FORMAT_NC1HWC0);
  BOOST_CHECK(t.GetFormat() == d.format);
  BOOST_CHECK_EQUAL(t.GetPlacement(), gert::kOnHost);
  BOOST_CHECK(t.GetData<uint16_t>() == nullptr);
}

BOOST_AUTO_TEST_CASE(ascend_string_basics) {
  AscendString empty;
  BOOST_CHECK_EQUAL(std::string(empty.GetString()), "");
  BOOST_CHECK_EQUAL(empty.GetLength(), 0u);
  BOOST_CHECK(AscendString(nullptr) == empty);
  AscendString a("abc"), b(std::string("abd")), nul("a\0b", 3);
  BOOST_CHECK_EQUAL(nul.GetLength(), 3u);
  BOOST_CHECK(a < b && b > a && a <= a && a != b);
  BOOST_CHECK(a == "abc");
  BOOST_CHECK_EQUAL(a.Find("bc"), 1u);
  BOOST_CHECK_EQUAL(a.Find("x"), std::string::npos);
  AscendString copy = a;
  BOOST_CHECK_EQUAL(copy.GetString(), a.GetString());  // copies share one buffer
  BOOST_CHECK_EQUAL(std::hash<AscendString>()(copy), std::hash<AscendString>()(AscendString("abc")));
  BOOST_CHECK_EQUAL(a.ToStdString(), "abc");
}

BOOST_AUTO_TEST_SUITE_END()
