// The reference engine without Python: graph parsing, JSON tensors and
// attributes, and Compile/Run with C++ ops only (ReluCpp and test ops below).
#define BOOST_TEST_MODULE engine
#include <boost/test/unit_test.hpp>

#include "test_util.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <functional>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

#include "ge/engine/engine.h"
#include "ge/engine/graph.h"
#include "ge/engine/npy.h"
#include "ge/op/op_registry.h"
#include "ge/text.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace ge;

namespace {

using ge_test::Contains;

using ge_test::TempDir;

// Expects ParseGraph(text) to fail with `where` containing every entry of
// `where_parts` and the message containing `msg_part`.
void ExpectGraphError(const std::string& text, std::vector<std::string> where_parts, const std::string& msg_part,
                      const fs::path& base = ".") {
  try {
    ParseGraph(text, "g.json", base);
    BOOST_ERROR("ParseGraph accepted: " << text);
  } catch (const GraphError& e) {
    BOOST_CHECK_MESSAGE(Contains(e.where(), "g.json"), "where does not name the file: " << e.where());
    for (const auto& w : where_parts) BOOST_CHECK_MESSAGE(Contains(e.where(), w), "where lacks '" << w << "': " << e.where());
    BOOST_CHECK_MESSAGE(Contains(e.what(), msg_part), "message lacks '" << msg_part << "': " << e.what());
    BOOST_CHECK(Contains(e.what(), e.where()));
  }
}

// A C++ test op with every input kind and two attributes. Its output (float32
// [5]) reports what it received: [count(x), count(opt), count(xs), alpha, beta].
// It reports no capability mask: the interfaces it derives from decide.
class MixedOp final : public EagerExecuteOp, public InferMetaOp {
 public:
  graphStatus InferMeta(InferMetaContext* ctx) override {
    ctx->SetOutputs({TensorDesc(Shape{5}, DT_FLOAT)}, InstanceLayout({1}));
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    Tensor* y = ctx->MallocOutputTensor(0, StorageShape(Shape{5}), DT_FLOAT);
    float* o = y->Data<float>();
    for (int k = 0; k < 3; ++k) o[k] = static_cast<float>(ctx->InputLayout().Count(k));
    o[3] = static_cast<float>(*ctx->GetAttrs()->GetAttrPointer<int64_t>(0));
    o[4] = *ctx->GetAttrs()->GetAttrPointer<float>(1);
    return GRAPH_SUCCESS;
  }
};

// A C++ test op whose IR constrains dtypes as a REG_OP prototype does:
// TypedCpp(x1: T, x2?: T, idx*: int32|int64) -> (y: T) [T: float32|float16]
// {out: VT_DATA_TYPE = undefined}. infer_meta gives y the dtype `out`, or
// x1's when `out` is DT_UNDEFINED.
class TypedOp final : public EagerExecuteOp, public InferMetaOp {
 public:
  graphStatus InferMeta(InferMetaContext* ctx) override {
    DataType dt = *ctx->GetAttrs()->GetAttrPointer<DataType>(0);
    if (dt == DT_UNDEFINED) dt = ctx->GetInputDesc(0)->data_type;
    ctx->SetOutputs({TensorDesc(Shape{1}, dt)}, InstanceLayout({1}));
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    ctx->MallocOutputTensor(0, StorageShape(Shape{1}), ctx->GetInputTensor(0)->GetDataType());
    return GRAPH_SUCCESS;
  }
};

// NoInferCpp(x: T) -> (y: T) [T: float32|float16] {out: VT_DATA_TYPE}: no
// inference at all (outputs unknown until execute); execute copies x with the
// dtype `out` (x's when DT_UNDEFINED), the bytes reinterpreted.
class NoInferOp final : public EagerExecuteOp {
 public:
  graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    DataType dt = *ctx->GetAttrs()->GetAttrPointer<DataType>(0);
    if (dt == DT_UNDEFINED) dt = x->GetDataType();
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), dt);
    std::memcpy(y->GetAddr(), x->GetAddr(), std::min(x->GetSize(), y->GetSize()));
    return GRAPH_SUCCESS;
  }
};

// BadShapeCpp(x) -> y: InferShape gives y the shape [dim, dim] (attr `dim`).
class BadShapeOp final : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(gert::InferShapeContext* ctx) override {
    const int64_t d = *ctx->GetAttrs()->GetAttrPointer<int64_t>(0);
    *ctx->GetOutputShape(0) = Shape{d, d};
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(gert::InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_FLOAT); }
  graphStatus Execute(gert::EagerOpExecutionContext*) override { return GRAPH_FAILED; }
};

// DetailCpp(x) -> y: execute fails with SetError's message only.
class DetailOp final : public EagerExecuteOp {
 public:
  graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    ctx->SetError(Status::Error("custom detail xyz"));
    return GRAPH_FAILED;
  }
};

// Fails with a located error (as a plugin's does): plugin, file, callback and a traceback.
class WhereOp final : public EagerExecuteOp {
 public:
  graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    ErrorInfo e;
    e.message = "plugin 'w' failed in its worker";
    e.plugin = "w";
    e.file = "/opp/w.py";
    e.call_site = "execute";
    e.traceback = "Traceback (most recent call last): ...";
    ctx->SetError(Status::Error(std::move(e)));
    return GRAPH_FAILED;
  }
};

void RegisterTestOp(OpRegistry& reg, const std::string& op_type, std::vector<IrInput> inputs, std::vector<IrOutput> outputs,
                    std::vector<IrAttr> attrs, OpCreator creator) {
  auto s = std::make_shared<OpSchema>();
  s->op_type = op_type;
  s->inputs = std::move(inputs);
  s->outputs = std::move(outputs);
  s->attrs = std::move(attrs);
  OpRegistration r;
  r.op_type = op_type;
  r.schema = s;
  r.source = "/opp/libtest_" + op_type + ".so";
  r.capabilities = static_cast<uint32_t>(CustomOpCapability::kEagerExecute);
  r.creator = std::move(creator);
  BOOST_REQUIRE(reg.Register(r).ok());
}

OpRegistry& Registry() {
  static OpRegistry reg;
  static bool init = [] {
    BOOST_REQUIRE(RegisterBuiltinOps(reg).ok());
    {
      const IrDataTypes t{{DT_FLOAT, DT_FLOAT16}, "T", true};
      RegisterTestOp(reg, "NoInferCpp", {{"x", IrInputKind::kRequired, t}}, {{"y", IrOutputKind::kRequired, t}},
                     {{"out", AttrType::VT_DATA_TYPE, AttrValue(DT_UNDEFINED)}},
                     [] { return std::make_shared<NoInferOp>(); });
      RegisterTestOp(reg, "BadShapeCpp", {{"x", IrInputKind::kRequired}}, {{"y", IrOutputKind::kRequired}},
                     {{"dim", AttrType::VT_INT, std::nullopt}}, [] { return std::make_shared<BadShapeOp>(); });
      RegisterTestOp(reg, "DetailCpp", {{"x", IrInputKind::kRequired}}, {{"y", IrOutputKind::kRequired}}, {},
                     [] { return std::make_shared<DetailOp>(); });
      RegisterTestOp(reg, "WhereCpp", {{"x", IrInputKind::kRequired}}, {{"y", IrOutputKind::kRequired}}, {},
                     [] { return std::make_shared<WhereOp>(); });
      RegisterTestOp(reg, "ThrowsCpp", {{"x", IrInputKind::kRequired}}, {{"y", IrOutputKind::kRequired}}, {},
                     []() -> std::shared_ptr<BaseCustomOp> { throw std::runtime_error("no licence for ThrowsCpp"); });
    }
    {
      auto s = std::make_shared<OpSchema>();
      s->op_type = "TypedCpp";
      const IrDataTypes t{{DT_FLOAT, DT_FLOAT16}, "T", true};
      s->inputs = {{"x1", IrInputKind::kRequired, t},
                   {"x2", IrInputKind::kOptional, t},
                   {"idx", IrInputKind::kDynamic, IrDataTypes{{DT_INT32, DT_INT64}, "", false}}};
      s->outputs = {{"y", IrOutputKind::kRequired, t}};
      s->attrs = {{"out", AttrType::VT_DATA_TYPE, AttrValue(DT_UNDEFINED)}};
      OpRegistration r;
      r.op_type = s->op_type;
      r.schema = s;
      r.source = "test";
      r.capabilities = CustomOpCapability::kEagerExecute | CustomOpCapability::kInferMeta;
      r.creator = []() { return std::make_shared<TypedOp>(); };
      BOOST_REQUIRE(reg.Register(r).ok());
    }
    auto s = std::make_shared<OpSchema>();
    s->op_type = "MixedCpp";
    s->inputs = {{"x", IrInputKind::kRequired}, {"opt", IrInputKind::kOptional}, {"xs", IrInputKind::kDynamic}};
    s->outputs = {{"y", IrOutputKind::kRequired}};
    s->attrs = {{"alpha", AttrType::VT_INT, std::nullopt}, {"beta", AttrType::VT_FLOAT, AttrValue(1.5f)}};
    OpRegistration r;
    r.op_type = s->op_type;
    r.schema = s;
    r.source = "test";
    r.capabilities = CustomOpCapability::kEagerExecute | CustomOpCapability::kInferMeta;
    r.creator = []() { return std::make_shared<MixedOp>(); };
    BOOST_REQUIRE(reg.Register(r).ok());
    return true;
  }();
  (void)init;
  return reg;
}

Graph Parse(const json& j) { return ParseGraph(j.dump(), "g.json", "."); }

json Input(const std::string& name, std::vector<float> data) {
  return {{"name", name}, {"dtype", "float32"}, {"shape", {data.size()}}, {"data", data}};
}

json Node(const std::string& name, const std::string& op, json inputs, json attrs = json::object()) {
  json n = {{"name", name}, {"op_type", op}, {"inputs", inputs}};
  if (!attrs.empty()) n["attrs"] = attrs;
  return n;
}

// Compile must fail with an EngineError naming `node` and containing `part`.
void ExpectCompileError(const json& graph_json, const std::string& node, const std::string& part) {
  Graph g = Parse(graph_json);
  Engine engine(Registry());
  try {
    engine.Compile(g);
    BOOST_ERROR("Compile accepted: " << graph_json.dump());
  } catch (const EngineError& e) {
    BOOST_CHECK_EQUAL(e.node(), node);
    BOOST_CHECK_MESSAGE(Contains(e.what(), part), "message lacks '" << part << "': " << e.what());
    if (!node.empty()) BOOST_CHECK_MESSAGE(Contains(e.what(), "'" + node + "'"), e.what());
  }
}

std::vector<float> Floats(const Tensor& t) {
  return std::vector<float>(t.Data<float>(), t.Data<float>() + t.GetShapeSize());
}

}  // namespace

// ---- ParseGraph ---------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(parse_graph)

BOOST_AUTO_TEST_CASE(valid_graph) {
  TempDir dir;
  Tensor npy = Tensor::Allocate(TensorDesc(Shape{2}, DT_INT32));
  npy.Data<int32_t>()[0] = 7;
  npy.Data<int32_t>()[1] = -8;
  WriteNpy(dir.path / "w.npy", npy);
  const std::string text = R"({
    "name": "demo",
    "options": {"opt_a": "1"},
    "inputs": [
      {"name": "x", "dtype": "float32", "shape": [2, 2], "data": [[1, -2], [3.5, -4]]},
      {"name": "w", "dtype": "int32", "file": "w.npy"}
    ],
    "nodes": [
      {"name": "n0", "op_type": "ReluCpp", "inputs": ["x"]},
      {"name": "n1", "op_type": "MixedCpp", "inputs": ["n0:0", null, ["x", "n0:0"]], "attrs": {"alpha": 3}}
    ],
    "outputs": ["n1:0", "n0:0", "w"]
  })";
  Graph g = ParseGraph(text, (dir.path / "g.json").string(), dir.path);
  BOOST_CHECK_EQUAL(g.name, "demo");
  BOOST_CHECK_EQUAL(g.options.at("opt_a"), "1");
  BOOST_REQUIRE_EQUAL(g.inputs.size(), 2u);
  BOOST_CHECK(g.inputs[0].tensor.GetStorageShape() == Shape({2, 2}));
  BOOST_CHECK_EQUAL(g.inputs[0].tensor.Data<float>()[2], 3.5f);
  BOOST_CHECK_EQUAL(g.inputs[1].tensor.GetDataType(), DT_INT32);
  BOOST_CHECK_EQUAL(g.inputs[1].tensor.Data<int32_t>()[1], -8);
  BOOST_REQUIRE_EQUAL(g.nodes.size(), 2u);
  BOOST_REQUIRE_EQUAL(g.nodes[1].inputs.size(), 3u);
  const auto& r0 = std::get<TensorRef>(g.nodes[1].inputs[0]);
  BOOST_CHECK_EQUAL(r0.node, "n0");
  BOOST_CHECK_EQUAL(r0.index, 0u);
  BOOST_CHECK(std::holds_alternative<std::monostate>(g.nodes[1].inputs[1]));
  BOOST_CHECK_EQUAL(std::get<std::vector<TensorRef>>(g.nodes[1].inputs[2]).size(), 2u);
  BOOST_CHECK_EQUAL(g.nodes[1].attrs["alpha"], 3);
  BOOST_REQUIRE_EQUAL(g.outputs.size(), 3u);
  BOOST_CHECK_EQUAL(g.outputs[2].node, "");
  BOOST_CHECK_EQUAL(g.outputs[2].text, "w");
  // Without "name", the graph is named after its file.
  Graph h = ParseGraph(R"({"nodes": [], "outputs": ["x"]})", "/tmp/some_graph.json", ".");
  BOOST_CHECK_EQUAL(h.name, "some_graph");
}

BOOST_AUTO_TEST_CASE(invalid_json) { ExpectGraphError("{\"nodes\": [", {}, "invalid JSON"); }

BOOST_AUTO_TEST_CASE(not_an_object) { ExpectGraphError("[1, 2]", {}, "JSON object"); }

BOOST_AUTO_TEST_CASE(unknown_top_level_field) {
  ExpectGraphError(R"({"nodes": [], "outputs": ["x"], "bogus": 1})", {}, "unknown field 'bogus'");
}

BOOST_AUTO_TEST_CASE(unknown_node_field) {
  ExpectGraphError(R"({"nodes": [{"name": "n", "op_type": "ReluCpp", "inputs": [], "atrs": {}}], "outputs": ["n:0"]})",
                   {"nodes[0]", "'n'"}, "unknown field 'atrs'");
}

BOOST_AUTO_TEST_CASE(duplicate_names) {
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1]},
                                  {"name": "x", "dtype": "float32", "shape": [1], "data": [2]}],
                       "nodes": [], "outputs": ["x"]})",
                   {"inputs[1]"}, "duplicate input name 'x'");
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1]}],
                       "nodes": [{"name": "n", "op_type": "ReluCpp", "inputs": ["x"]},
                                 {"name": "n", "op_type": "ReluCpp", "inputs": ["x"]}],
                       "outputs": ["n:0"]})",
                   {"nodes[1]"}, "duplicate name 'n'");
  // A node may not reuse a graph input's name either.
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1]}],
                       "nodes": [{"name": "x", "op_type": "ReluCpp", "inputs": ["x"]}], "outputs": ["x"]})",
                   {"nodes[0]"}, "duplicate name 'x'");
}

BOOST_AUTO_TEST_CASE(bad_dtype) {
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": "float99", "shape": [1], "data": [1]}],
                       "nodes": [], "outputs": ["x"]})",
                   {"inputs[0]", "'x'", "dtype"}, "unknown dtype 'float99'");
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": 3, "shape": [1], "data": [1]}],
                       "nodes": [], "outputs": ["x"]})",
                   {"inputs[0]", "dtype"}, "must be a string");
  // A known dtype without inline form is a graph error at the field, not another exception.
  ExpectGraphError(R"({"inputs": [{"name": "s", "dtype": "string", "shape": [1], "data": ["a"]}],
                       "nodes": [], "outputs": ["s"]})",
                   {"inputs[0]", "'s'", "data"}, "cannot be given as inline data");
}

BOOST_AUTO_TEST_CASE(data_shape_mismatch) {
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2, 2], "data": [[1, 2], [3]]}],
                       "nodes": [], "outputs": ["x"]})",
                   {"inputs[0]", "'x'", "data"}, "[2, 2]");
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [3], "data": [[1], [2], [3]]}],
                       "nodes": [], "outputs": ["x"]})",
                   {"inputs[0]", "data"}, "nested deeper");
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2], "data": 1}],
                       "nodes": [], "outputs": ["x"]})",
                   {"inputs[0]", "data"}, "does not match the shape");
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [-1], "data": []}],
                       "nodes": [], "outputs": ["x"]})",
                   {"inputs[0]", "shape"}, "non-negative");
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1]}], "nodes": [], "outputs": ["x"]})",
                   {"inputs[0]"}, "exactly one of \"data\" and \"file\"");
}

BOOST_AUTO_TEST_CASE(npy_file_errors) {
  TempDir dir;
  Tensor t = Tensor::Allocate(TensorDesc(Shape{3}, DT_FLOAT));
  WriteNpy(dir.path / "v.npy", t);
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [4], "file": "v.npy"}],
                       "nodes": [], "outputs": ["x"]})",
                   {"inputs[0]", "file"}, "[4]", dir.path);
  ExpectGraphError(R"({"inputs": [{"name": "x", "dtype": "int32", "file": "v.npy"}], "nodes": [], "outputs": ["x"]})",
                   {"inputs[0]", "file"}, "int32", dir.path);
  ExpectGraphError(R"({"inputs": [{"name": "x", "file": "absent.npy"}], "nodes": [], "outputs": ["x"]})",
                   {"inputs[0]", "file"}, "absent.npy", dir.path);
}

BOOST_AUTO_TEST_CASE(missing_outputs) {
  ExpectGraphError(R"({"nodes": []})", {"outputs"}, "non-empty list");
  ExpectGraphError(R"({"nodes": [], "outputs": []})", {"outputs"}, "non-empty list");
  ExpectGraphError(R"({"outputs": ["x"]})", {"nodes"}, "must be a list");
}

BOOST_AUTO_TEST_CASE(bad_node_index_reference) {
  const char* kTemplate = R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1]}],
    "nodes": [{"name": "n0", "op_type": "ReluCpp", "inputs": ["x"]},
              {"name": "n1", "op_type": "ReluCpp", "inputs": [REF]}], "outputs": ["n1:0"]})";
  for (const char* ref : {"\"n0:x\"", "\"n0:\"", "\":0\"", "\"n0:-1\"", "\"n0:1a\""}) {
    std::string text = kTemplate;
    text.replace(text.find("REF"), 3, ref);
    BOOST_TEST_CONTEXT("ref " << ref) { ExpectGraphError(text, {"nodes[1]", "'n1'", "inputs[0]"}, "node:index"); }
  }
  std::string text = kTemplate;
  text.replace(text.find("REF"), 3, "5");
  ExpectGraphError(text, {"nodes[1]", "inputs[0]"}, "\"node:index\"");
  ExpectGraphError(R"({"nodes": [], "outputs": ["n0:z"]})", {"outputs[0]"}, "bad tensor reference 'n0:z'");
  ExpectGraphError(R"({"nodes": [{"name": "a:b", "op_type": "ReluCpp"}], "outputs": ["x"]})", {"nodes[0]"}, "':'");
}

BOOST_AUTO_TEST_SUITE_END()

// ---- TensorFromJson --------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(tensor_from_json)

uint16_t Half(double v) {
  Tensor t = TensorFromJson(json::array({v}), DT_FLOAT16, Shape{1}, "w");
  return t.Data<uint16_t>()[0];
}
uint16_t Bf16(double v) {
  Tensor t = TensorFromJson(json::array({v}), DT_BF16, Shape{1}, "w");
  return t.Data<uint16_t>()[0];
}

BOOST_AUTO_TEST_CASE(float16_rounding) {
  BOOST_CHECK_EQUAL(Half(1.0), 0x3C00);
  BOOST_CHECK_EQUAL(Half(-2.0), 0xC000);
  BOOST_CHECK_EQUAL(Half(0.0), 0x0000);
  BOOST_CHECK_EQUAL(Half(65504.0), 0x7BFF);                   // largest finite
  BOOST_CHECK_EQUAL(Half(65520.0), 0x7C00);                   // halfway to 2^16: rounds (even) to inf
  BOOST_CHECK_EQUAL(Half(1e6), 0x7C00);                       // overflow
  BOOST_CHECK_EQUAL(Half(1.0 + 1.0 / 2048), 0x3C00);          // halfway, even stays
  BOOST_CHECK_EQUAL(Half(1.0 + 3.0 / 2048), 0x3C02);          // halfway, odd rounds up
  BOOST_CHECK_EQUAL(Half(1.0 + 1.0 / 2048 + 1.0 / 65536), 0x3C01);  // above halfway
  BOOST_CHECK_EQUAL(Half(std::ldexp(1.0, -24)), 0x0001);      // smallest subnormal
  BOOST_CHECK_EQUAL(Half(std::ldexp(1.0, -25)), 0x0000);      // halfway to it: even (0)
  BOOST_CHECK_EQUAL(Half(std::ldexp(3.0, -25)), 0x0002);      // 1.5 ulp: even (2)
  BOOST_CHECK_EQUAL(Half(std::ldexp(1.0, -14)), 0x0400);      // smallest normal
  BOOST_CHECK_EQUAL(Half(0.1), 0x2E66);
}

BOOST_AUTO_TEST_CASE(bfloat16_rounding) {
  BOOST_CHECK_EQUAL(Bf16(1.0), 0x3F80);
  BOOST_CHECK_EQUAL(Bf16(-1.0), 0xBF80);
  BOOST_CHECK_EQUAL(Bf16(1.0 + 1.0 / 256), 0x3F80);  // halfway, even stays
  BOOST_CHECK_EQUAL(Bf16(1.0 + 3.0 / 256), 0x3F82);  // halfway, odd rounds up
  BOOST_CHECK_EQUAL(Bf16(1.0 + 1.0 / 256 + 1.0 / 4096), 0x3F81);
  BOOST_CHECK_EQUAL(Bf16(3.0e38), 0x7F62);
  BOOST_CHECK_EQUAL(Bf16(0.1), 0x3DCD);
}

BOOST_AUTO_TEST_CASE(values_and_shapes) {
  Tensor t = TensorFromJson(json::parse("[[1, 2, 3], [4, 5, 6]]"), DT_INT64, Shape{2, 3}, "w");
  BOOST_CHECK_EQUAL(t.GetDataType(), DT_INT64);
  BOOST_CHECK_EQUAL(t.Data<int64_t>()[5], 6);
  Tensor s = TensorFromJson(json(2.5), DT_DOUBLE, Shape(), "w");  // a scalar
  BOOST_CHECK_EQUAL(*s.Data<double>(), 2.5);
  Tensor b = TensorFromJson(json::parse("[true, false, 1, 0]"), DT_BOOL, Shape{4}, "w");
  BOOST_CHECK_EQUAL(b.Data<uint8_t>()[0], 1);
  BOOST_CHECK_EQUAL(b.Data<uint8_t>()[1], 0);
  BOOST_CHECK_EQUAL(b.Data<uint8_t>()[2], 1);
  Tensor u = TensorFromJson(json::parse("[18446744073709551615, 0]"), DT_UINT64, Shape{2}, "w");
  BOOST_CHECK_EQUAL(u.Data<uint64_t>()[0], std::numeric_limits<uint64_t>::max());
  Tensor i8 = TensorFromJson(json::parse("[-128, 127]"), DT_INT8, Shape{2}, "w");
  BOOST_CHECK_EQUAL(i8.Data<int8_t>()[0], -128);
  Tensor empty = TensorFromJson(json::parse("[]"), DT_FLOAT, Shape{0}, "w");
  BOOST_CHECK_EQUAL(empty.GetSize(), 0u);
}

void ExpectTensorError(const std::string& data, DataType dt, const Shape& shape, const std::string& part) {
  try {
    TensorFromJson(json::parse(data), dt, shape, "graph.json: inputs[0] 'x'.data");
    BOOST_ERROR("accepted " << data << " as " << DataTypeName(dt));
  } catch (const GraphError& e) {
    BOOST_CHECK_EQUAL(e.where(), "graph.json: inputs[0] 'x'.data");
    BOOST_CHECK_MESSAGE(Contains(e.what(), part), "message lacks '" << part << "': " << e.what());
  }
}

BOOST_AUTO_TEST_CASE(integer_range_errors) {
  ExpectTensorError("[128]", DT_INT8, Shape{1}, "does not fit int8");
  ExpectTensorError("[-129]", DT_INT8, Shape{1}, "does not fit int8");
  ExpectTensorError("[256]", DT_UINT8, Shape{1}, "does not fit uint8");
  ExpectTensorError("[-1]", DT_UINT8, Shape{1}, "does not fit uint8");
  ExpectTensorError("[0, 32768]", DT_INT16, Shape{2}, "element 1 does not fit int16");
  ExpectTensorError("[65536]", DT_UINT16, Shape{1}, "does not fit uint16");
  ExpectTensorError("[2147483648]", DT_INT32, Shape{1}, "does not fit int32");
  ExpectTensorError("[-1]", DT_UINT32, Shape{1}, "does not fit uint32");
  ExpectTensorError("[9223372036854775808]", DT_INT64, Shape{1}, "does not fit int64");
  ExpectTensorError("[-1]", DT_UINT64, Shape{1}, "does not fit uint64");
  ExpectTensorError("[1.5]", DT_INT32, Shape{1}, "must be an integer");
  ExpectTensorError("[\"1\"]", DT_INT32, Shape{1}, "must be an integer");
  ExpectTensorError("[\"1\"]", DT_FLOAT, Shape{1}, "must be a number");
  ExpectTensorError("[true]", DT_FLOAT, Shape{1}, "must be a number");
  ExpectTensorError("[2]", DT_BOOL, Shape{1}, "true/false");
  ExpectTensorError("[1]", DT_STRING, Shape{1}, "inline data");
}

BOOST_AUTO_TEST_SUITE_END()

// ---- Engine::Compile / Run -------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(engine)

BOOST_AUTO_TEST_CASE(run_relu_chain) {
  json j = {{"inputs", {Input("x", {-1, 2, -3, 4})}},
            {"nodes", {Node("r0", "ReluCpp", {"x"}), Node("r1", "ReluCpp", {"r0:0"})}},
            {"outputs", {"r1:0", "r0:0", "x"}}};
  Graph g = Parse(j);
  Engine engine(Registry());
  CompiledGraph cg = engine.Compile(g);
  BOOST_REQUIRE_EQUAL(cg.nodes.size(), 2u);
  BOOST_CHECK_EQUAL(cg.nodes[0].node->name, "r0");
  BOOST_CHECK(cg.nodes[0].inferred.has_value());
  BOOST_CHECK_EQUAL(cg.nodes[0].stats.source, "builtin");
  BOOST_CHECK(!cg.nodes[0].stats.python);
  RunResult r = engine.Run(cg, 3);
  BOOST_CHECK((Floats(r.outputs.at("r1:0")) == std::vector<float>{0, 2, 0, 4}));
  BOOST_CHECK((Floats(r.outputs.at("r0:0")) == std::vector<float>{0, 2, 0, 4}));
  BOOST_CHECK((Floats(r.outputs.at("x")) == std::vector<float>{-1, 2, -3, 4}));
  BOOST_CHECK_EQUAL(cg.nodes[0].stats.execute_calls, 3u);
  BOOST_CHECK_EQUAL(cg.nodes[1].stats.infer_meta_calls, 1u);
  BOOST_CHECK_THROW(engine.Run(cg, 0), EngineError);
}

BOOST_AUTO_TEST_CASE(nodes_are_ordered_by_dependencies) {
  json j = {{"inputs", {Input("x", {-5, 5})}},
            {"nodes", {Node("late", "ReluCpp", {"early:0"}), Node("early", "ReluCpp", {"x"})}},
            {"outputs", {"late:0"}}};
  Graph g = Parse(j);
  Engine engine(Registry());
  CompiledGraph cg = engine.Compile(g);
  BOOST_CHECK_EQUAL(cg.nodes[0].node->name, "early");
  BOOST_CHECK_EQUAL(cg.nodes[1].node->name, "late");
  BOOST_CHECK((Floats(engine.Run(cg).outputs.at("late:0")) == std::vector<float>{0, 5}));
}

BOOST_AUTO_TEST_CASE(unknown_op_type) {
  ExpectCompileError({{"inputs", {Input("x", {1})}}, {"nodes", {Node("n0", "NoSuchOp", {"x"})}}, {"outputs", {"n0:0"}}},
                     "n0", "unknown op_type 'NoSuchOp'");
}

// Callers tell an unknown op_type (ge-run's note about plugins that failed to
// load) from other errors by kind, never by the message text.
BOOST_AUTO_TEST_CASE(error_kinds) {
  auto kind_of = [](const json& graph_json, const std::function<void(Engine&, CompiledGraph&)>& run = {}) {
    Graph g = Parse(graph_json);
    Engine engine(Registry());
    try {
      CompiledGraph cg = engine.Compile(g);
      if (run) run(engine, cg);
    } catch (const EngineError& e) {
      return std::make_pair(e.kind(), std::string(e.what()));
    }
    BOOST_ERROR("no EngineError for " << graph_json.dump());
    return std::make_pair(EngineError::Kind::kRun, std::string());
  };
  auto [unknown, unknown_text] =
      kind_of({{"inputs", {Input("x", {1})}}, {"nodes", {Node("n0", "NoSuchOp", {"x"})}}, {"outputs", {"n0:0"}}});
  BOOST_CHECK(unknown == EngineError::Kind::kUnknownOpType);
  BOOST_CHECK(Contains(unknown_text, "unknown op_type 'NoSuchOp'"));

  // An ordinary graph error, even one whose text mentions "unknown op_type"
  // (here through the node's name), is a graph error.
  auto [graph, graph_text] = kind_of(
      {{"inputs", {Input("x", {1})}}, {"nodes", {Node("unknown op_type", "ReluCpp", {"x", "x"})}}, {"outputs", {"x"}}});
  BOOST_CHECK(graph == EngineError::Kind::kGraph);
  BOOST_CHECK(Contains(graph_text, "unknown op_type") && Contains(graph_text, "inputs: got 2"));
  BOOST_CHECK(kind_of({{"inputs", {Input("x", {1})}},
                       {"nodes", {Node("a", "ReluCpp", {"b:0"}), Node("b", "ReluCpp", {"a:0"})}},
                       {"outputs", {"x"}}})
                  .first == EngineError::Kind::kGraph);

  // Run's own argument check.
  const json ok = {{"inputs", {Input("x", {1})}}, {"nodes", {Node("r", "ReluCpp", {"x"})}}, {"outputs", {"r:0"}}};
  BOOST_CHECK(kind_of(ok, [](Engine& e, CompiledGraph& cg) { e.Run(cg, 0); }).first == EngineError::Kind::kRun);

  // Errors made by the old constructor keep their meaning: a graph error.
  BOOST_CHECK(EngineError("n", "m").kind() == EngineError::Kind::kGraph);
  BOOST_CHECK(!EngineError(EngineError::Kind::kUnknownOpType, "n", "m").fatal());
}

BOOST_AUTO_TEST_CASE(wrong_input_count) {
  ExpectCompileError(
      {{"inputs", {Input("x", {1})}}, {"nodes", {Node("n0", "ReluCpp", {"x", "x"})}}, {"outputs", {"n0:0"}}}, "n0",
      "inputs: got 2");
  ExpectCompileError({{"inputs", {Input("x", {1})}}, {"nodes", {Node("n0", "ReluCpp", json::array())}}, {"outputs", {"n0:0"}}},
                     "n0", "expects 1");
}

BOOST_AUTO_TEST_CASE(input_kind_rules) {
  auto graph = [](json inputs, json attrs = {{"alpha", 1}}) {
    return json{{"inputs", {Input("x", {1, 2})}},
                {"nodes", {Node("m", "MixedCpp", inputs, attrs)}},
                {"outputs", {"m:0"}}};
  };
  // required: exactly one reference
  ExpectCompileError(graph({nullptr, nullptr, json::array()}), "m", "required input");
  ExpectCompileError(graph({{"x"}, nullptr, json::array()}), "m", "required input");
  // optional: one reference or null, never a list
  ExpectCompileError(graph({"x", {"x"}, json::array()}), "m", "optional input");
  // dynamic: a list
  ExpectCompileError(graph({"x", nullptr, "x"}), "m", "dynamic input");
  ExpectCompileError(graph({"x", nullptr, nullptr}), "m", "dynamic input");
  // references must exist
  ExpectCompileError(graph({"y", nullptr, json::array()}), "m", "unknown graph input 'y'");
  ExpectCompileError(graph({"zz:0", nullptr, json::array()}), "m", "unknown node 'zz'");
  ExpectCompileError(graph({"m:0", nullptr, json::array()}), "m", "its own output");

  // Valid combinations reach the op with the right layout and attributes.
  Engine engine(Registry());
  struct Case {
    json inputs;
    json attrs;
    std::vector<float> want;
  };
  const std::vector<Case> cases{
      {{"x", nullptr, json::array()}, {{"alpha", 1}}, {1, 0, 0, 1, 1.5f}},
      {{"x", "x", {"x", "x", "x"}}, {{"alpha", -2}, {"beta", 0.25}}, {1, 1, 3, -2, 0.25f}},
      {{"x", nullptr, {"x"}}, {{"alpha", 7}, {"beta", 2}}, {1, 0, 1, 7, 2}},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT("inputs " << c.inputs.dump() << " attrs " << c.attrs.dump()) {
      Graph g = Parse(graph(c.inputs, c.attrs));
      CompiledGraph cg = engine.Compile(g);
      BOOST_CHECK(Floats(engine.Run(cg).outputs.at("m:0")) == c.want);
    }
  }
}

BOOST_AUTO_TEST_CASE(attribute_rules) {
  auto graph = [](json attrs) {
    return json{{"inputs", {Input("x", {1})}},
                {"nodes", {Node("m", "MixedCpp", {"x", nullptr, json::array()}, attrs)}},
                {"outputs", {"m:0"}}};
  };
  ExpectCompileError(graph({{"alpha", 1}, {"gamma", 2}}), "m", "attrs.gamma: unknown attribute (the IR has: alpha, beta)");
  ExpectCompileError(graph({{"beta", 2.0}}), "m", "attrs.alpha: missing required attribute (VT_INT)");
  ExpectCompileError(graph({{"alpha", "one"}}), "m", "attrs.alpha");
  ExpectCompileError(graph({{"alpha", 1.5}}), "m", "VT_INT");
  ExpectCompileError(graph({{"alpha", 1}, {"beta", "x"}}), "m", "VT_FLOAT");
  // ReluCpp has no attributes at all.
  ExpectCompileError({{"inputs", {Input("x", {1})}}, {"nodes", {Node("r", "ReluCpp", {"x"}, {{"alpha", 1}})}}, {"outputs", {"r:0"}}},
                     "r", "(the IR has: none)");
}

BOOST_AUTO_TEST_CASE(cycle_detection) {
  ExpectCompileError({{"inputs", {Input("x", {1})}},
                      {"nodes", {Node("a", "ReluCpp", {"b:0"}), Node("b", "ReluCpp", {"a:0"}), Node("c", "ReluCpp", {"x"})}},
                      {"outputs", {"c:0"}}},
                     "a", "cycle");
  // A longer cycle behind a valid prefix names a node on the cycle.
  json j = {{"inputs", {Input("x", {1})}},
            {"nodes",
             {Node("ok", "ReluCpp", {"x"}), Node("p", "ReluCpp", {"r:0"}), Node("q", "ReluCpp", {"p:0"}),
              Node("r", "ReluCpp", {"q:0"})}},
            {"outputs", {"ok:0"}}};
  Graph g = Parse(j);
  Engine engine(Registry());
  try {
    engine.Compile(g);
    BOOST_ERROR("cycle not detected");
  } catch (const EngineError& e) {
    BOOST_CHECK(e.node() == "p" || e.node() == "q" || e.node() == "r");
    BOOST_CHECK(Contains(e.what(), "cycle"));
  }
}

BOOST_AUTO_TEST_CASE(output_index_out_of_range) {
  // A graph output beyond the node's outputs.
  ExpectCompileError({{"inputs", {Input("x", {1})}}, {"nodes", {Node("n0", "ReluCpp", {"x"})}}, {"outputs", {"n0:1"}}},
                     "n0", "has 1 output(s)");
  // A node input beyond its producer's outputs.
  ExpectCompileError({{"inputs", {Input("x", {1})}},
                      {"nodes", {Node("n0", "ReluCpp", {"x"}), Node("n1", "ReluCpp", {"n0:3"})}},
                      {"outputs", {"n1:0"}}},
                     "n1", "refers to output 3 of node 'n0'");
  // Unknown graph outputs.
  ExpectCompileError({{"inputs", {Input("x", {1})}}, {"nodes", {Node("n0", "ReluCpp", {"x"})}}, {"outputs", {"zz:0"}}}, "",
                     "unknown node 'zz'");
  ExpectCompileError({{"inputs", {Input("x", {1})}}, {"nodes", {Node("n0", "ReluCpp", {"x"})}}, {"outputs", {"y"}}}, "",
                     "unknown tensor 'y'");
}

// ---- dtype constraints of the IR (TypedCpp above) ----

json Typed(const std::string& dtype, const std::string& name) {
  return {{"name", name}, {"dtype", dtype}, {"shape", {1}}, {"data", {1}}};
}

json TypedGraph(json inputs, json node_inputs, json attrs = json::object()) {
  return {{"inputs", inputs}, {"nodes", {Node("t", "TypedCpp", node_inputs, attrs)}}, {"outputs", {"t:0"}}};
}

BOOST_AUTO_TEST_CASE(input_dtypes_inside_their_sets_compile) {
  Engine engine(Registry());
  for (const char* dt : {"float32", "float16"}) {
    Graph g = Parse(TypedGraph({Typed(dt, "a"), Typed(dt, "b"), Typed("int32", "i"), Typed("int64", "j")},
                               {"a", "b", {"i", "j"}}));
    BOOST_CHECK_NO_THROW(engine.Compile(g));
  }
  // The optional input left out and no dynamic instances: nothing to check there.
  Graph g = Parse(TypedGraph({Typed("float16", "a")}, {"a", nullptr, json::array()}));
  BOOST_CHECK_NO_THROW(engine.Compile(g));
}

BOOST_AUTO_TEST_CASE(an_input_dtype_outside_its_set_is_refused) {
  ExpectCompileError(TypedGraph({Typed("int32", "a")}, {"a", nullptr, json::array()}), "t",
                     "input 'x1' (inputs[0]): dtype int32 is not allowed (allowed for T: float32|float16)");
  ExpectCompileError(TypedGraph({Typed("float32", "a"), Typed("int8", "i")}, {"a", nullptr, {"i", "i"}}), "t",
                     "input 'idx' (inputs[2][0]): dtype int8 is not allowed (allowed: int32|int64)");
  // A dtype reaching the node from a producer's infer_meta is checked too.
  json g = {{"inputs", {Typed("float32", "a"), Typed("float16", "h")}},
            {"nodes", {Node("p", "TypedCpp", {"h", nullptr, json::array()}), Node("t", "TypedCpp", {"a", nullptr, {"p:0"}})}},
            {"outputs", {"t:0"}}};
  ExpectCompileError(g, "t", "input 'idx' (inputs[2][0]): dtype float16 is not allowed");
}

BOOST_AUTO_TEST_CASE(inputs_sharing_a_symbol_need_one_dtype) {
  ExpectCompileError(TypedGraph({Typed("float32", "a"), Typed("float16", "b")}, {"a", "b", json::array()}), "t",
                     "input 'x1' (inputs[0]) has dtype float32 but input 'x2' (inputs[1]) has dtype float16; both are "
                     "declared with type symbol 'T'");
}

BOOST_AUTO_TEST_CASE(an_inferred_output_dtype_is_checked) {
  // Outside the set.
  ExpectCompileError(TypedGraph({Typed("float32", "a")}, {"a", nullptr, json::array()}, {{"out", "DT_INT32"}}), "t",
                     "output 'y' (outputs[0]) from infer_meta: dtype int32 is not allowed (allowed for T: float32|float16)");
  // Inside the set but not the dtype the symbol took from the inputs.
  ExpectCompileError(TypedGraph({Typed("float32", "a")}, {"a", nullptr, json::array()}, {{"out", "DT_FLOAT16"}}), "t",
                     "input 'x1' (inputs[0]) has dtype float32 but output 'y' (outputs[0]) from infer_meta has dtype float16");
}

BOOST_AUTO_TEST_CASE(schema_text_shows_the_constraints) {
  auto reg = Registry().Find("TypedCpp");
  BOOST_REQUIRE(reg);
  BOOST_CHECK_EQUAL(reg->schema->ToString(),
                    "TypedCpp(x1: T, x2?: T, idx*: int32|int64) -> (y: T) [T: float32|float16] {out: VT_DATA_TYPE = undefined}");
}

BOOST_AUTO_TEST_CASE(inference_failure_names_node_call_and_reason) {
  // ReluCpp infers through GE's ShapeInferOp; its InferDataType refuses int8.
  json j = {{"inputs", {{{"name", "x"}, {"dtype", "int8"}, {"shape", {1}}, {"data", {1}}}}},
            {"nodes", {Node("n0", "ReluCpp", {"x"})}},
            {"outputs", {"n0:0"}}};
  ExpectCompileError(j, "n0", "InferDataType failed: ReluCpp does not support dtype int8");
}

// ---- outputs unknown until execute; inference results checked; op errors ----

// Runs the graph; must fail (compile or run) with an EngineError naming `node`
// and containing `part`; returns it.
std::string ExpectRunError(const json& graph_json, const std::string& node, const std::string& part) {
  Graph g = Parse(graph_json);
  Engine engine(Registry());
  try {
    CompiledGraph cg = engine.Compile(g);
    engine.Run(cg);
    BOOST_ERROR("Run accepted: " << graph_json.dump());
  } catch (const EngineError& e) {
    BOOST_CHECK_EQUAL(e.node(), node);
    BOOST_CHECK_MESSAGE(Contains(e.what(), part), "message lacks '" << part << "': " << e.what());
    return e.what() + std::string("\n") + e.details();
  }
  return {};
}

BOOST_AUTO_TEST_CASE(a_node_fed_by_a_node_without_infer_meta_runs) {
  // ReluCpp's InferShape would have run on made-up metadata ([] float32) and
  // the run then blamed it: "output 0 has shape [3], infer_meta said []".
  json j = {{"inputs", {Input("x", {-1, 2, -3})}},
            {"nodes", {Node("p", "NoInferCpp", {"x"}), Node("r", "ReluCpp", {"p:0"}), Node("r2", "ReluCpp", {"r:0"})}},
            {"outputs", {"r2:0"}}};
  Graph g = Parse(j);
  Engine engine(Registry());
  CompiledGraph cg = engine.Compile(g);
  BOOST_CHECK(!cg.nodes[0].inferred && !cg.nodes[1].inferred && !cg.nodes[2].inferred);
  BOOST_CHECK_EQUAL(cg.nodes[1].stats.infer_meta_calls, 0u);
  RunResult r = engine.Run(cg);
  BOOST_CHECK((Floats(r.outputs.at("r2:0")) == std::vector<float>{0, 2, 0}));
  // Known inputs: inference runs as before.
  Graph g2 = Parse({{"inputs", {Input("x", {1})}}, {"nodes", {Node("r", "ReluCpp", {"x"})}}, {"outputs", {"r:0"}}});
  CompiledGraph cg2 = engine.Compile(g2);
  BOOST_CHECK(cg2.nodes[0].inferred && cg2.nodes[0].stats.infer_meta_calls == 1);
}

BOOST_AUTO_TEST_CASE(dtypes_unknown_at_compile_time_are_checked_at_execute) {
  // NoInferCpp's own output, after it ran: outside its set.
  json j = {{"inputs", {Input("x", {1, 2})}},
            {"nodes", {Node("p", "NoInferCpp", {"x"}, {{"out", "DT_INT32"}})}},
            {"outputs", {"p:0"}}};
  ExpectRunError(j, "p", "output 'y' (outputs[0]) from execute: dtype int32 is not allowed (allowed for T: float32|float16)");
  // Inside the set, but not the dtype symbol T took from the input.
  j["nodes"][0]["attrs"]["out"] = "DT_FLOAT16";
  ExpectRunError(j, "p", "input 'x' (inputs[0]) has dtype float32 but output 'y' (outputs[0]) from execute has dtype float16");
  // A consumer's input, before it runs: the compile-time message.
  json k = {{"inputs", {Input("x", {1, 2}), Typed("float32", "a")}},
            {"nodes", {Node("p", "NoInferCpp", {"x"}, {{"out", "DT_FLOAT"}}), Node("q", "NoInferCpp", {"p:0"}),
                       Node("t", "TypedCpp", {"a", "q:0", json::array()})}},
            {"outputs", {"t:0"}}};
  BOOST_CHECK_NO_THROW(([&] { Graph g = Parse(k); Engine e(Registry()); CompiledGraph cg = e.Compile(g); e.Run(cg); })());
  k["inputs"][1] = Typed("float16", "a");
  ExpectRunError(k, "t", "input 'x1' (inputs[0]) has dtype float16 but input 'x2' (inputs[1]) has dtype float32; both are "
                         "declared with type symbol 'T'");
}

BOOST_AUTO_TEST_CASE(a_creator_that_throws_is_reported_with_its_source_and_what) {
  json j = {{"inputs", {Input("x", {1})}}, {"nodes", {Node("n", "ThrowsCpp", {"x"})}}, {"outputs", {"n:0"}}};
  ExpectCompileError(j, "n", "node 'n' (ThrowsCpp): creating the op failed (/opp/libtest_ThrowsCpp.so): C++ exception: "
                             "no licence for ThrowsCpp");
  std::string why;
  BOOST_CHECK(!Registry().Create("ThrowsCpp", &why));
  BOOST_CHECK_EQUAL(why, "C++ exception: no licence for ThrowsCpp");
  BOOST_CHECK(!Registry().Create("ThrowsCpp"));
}

BOOST_AUTO_TEST_CASE(set_error_details_are_said_once) {
  json j = {{"inputs", {Input("x", {1})}}, {"nodes", {Node("n", "DetailCpp", {"x"})}}, {"outputs", {"n:0"}}};
  // The message, then (after the newline) the details: none.
  BOOST_CHECK_EQUAL(ExpectRunError(j, "n", "execute failed"), "node 'n' (DetailCpp): execute failed: custom detail xyz\n");
}

// The details add where and the traceback; the message is not said again.
BOOST_AUTO_TEST_CASE(error_details_add_where_and_traceback_only) {
  json j = {{"inputs", {Input("x", {1})}}, {"nodes", {Node("n", "WhereCpp", {"x"})}}, {"outputs", {"n:0"}}};
  BOOST_CHECK_EQUAL(ExpectRunError(j, "n", "execute failed"),
                    "node 'n' (WhereCpp): execute failed: plugin 'w' failed in its worker\n"
                    "(plugin 'w', file /opp/w.py, during execute)\nTraceback (most recent call last): ...");
}

BOOST_AUTO_TEST_CASE(infer_shape_giving_an_invalid_shape_is_refused) {
  json j = {{"inputs", {Input("x", {1})}}, {"nodes", {Node("n", "BadShapeCpp", {"x"}, {{"dim", -5}})}}, {"outputs", {"n:0"}}};
  ExpectCompileError(j, "n", "node 'n' (BadShapeCpp): InferShape gave output 0 an invalid dim -5");
  j["nodes"][0]["attrs"]["dim"] = int64_t{1} << 40;
  ExpectCompileError(j, "n", "InferShape gave output 0 the shape [1099511627776, 1099511627776], whose element count does "
                             "not fit int64");
}

BOOST_AUTO_TEST_SUITE_END()

// ---- AttrFromJson -----------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(attr_from_json)

void ExpectAttrError(const json& v, AttrType type, const std::string& where_part) {
  try {
    AttrFromJson(v, type, "node 'n' (Op): attrs.a");
    BOOST_ERROR("accepted " << v.dump() << " as " << AttrTypeName(type));
  } catch (const GraphError& e) {
    BOOST_CHECK_MESSAGE(Contains(e.where(), "attrs.a" + where_part), e.where());
  }
}

BOOST_AUTO_TEST_CASE(vt_int) {
  AttrValue v = AttrFromJson(json(-5), AttrType::VT_INT, "w");
  BOOST_CHECK(TypeOf(v) == AttrType::VT_INT);
  BOOST_CHECK_EQUAL(std::get<int64_t>(v), -5);
  BOOST_CHECK_EQUAL(std::get<int64_t>(AttrFromJson(json::parse("9223372036854775807"), AttrType::VT_INT, "w")),
                    std::numeric_limits<int64_t>::max());
  ExpectAttrError(json("5"), AttrType::VT_INT, "");
  ExpectAttrError(json(1.5), AttrType::VT_INT, "");
  ExpectAttrError(json(true), AttrType::VT_INT, "");
  ExpectAttrError(json::parse("9223372036854775808"), AttrType::VT_INT, "");
}

BOOST_AUTO_TEST_CASE(vt_float) {
  BOOST_CHECK_EQUAL(std::get<float>(AttrFromJson(json(0.25), AttrType::VT_FLOAT, "w")), 0.25f);
  BOOST_CHECK_EQUAL(std::get<float>(AttrFromJson(json(2), AttrType::VT_FLOAT, "w")), 2.0f);  // JSON numbers
  ExpectAttrError(json("0.5"), AttrType::VT_FLOAT, "");
  ExpectAttrError(json(false), AttrType::VT_FLOAT, "");
}

BOOST_AUTO_TEST_CASE(vt_bool) {
  BOOST_CHECK_EQUAL(std::get<bool>(AttrFromJson(json(true), AttrType::VT_BOOL, "w")), true);
  BOOST_CHECK_EQUAL(std::get<bool>(AttrFromJson(json(false), AttrType::VT_BOOL, "w")), false);
  ExpectAttrError(json(1), AttrType::VT_BOOL, "");
  ExpectAttrError(json("true"), AttrType::VT_BOOL, "");
}

BOOST_AUTO_TEST_CASE(vt_string) {
  BOOST_CHECK_EQUAL(std::get<std::string>(AttrFromJson(json("tanh"), AttrType::VT_STRING, "w")), "tanh");
  ExpectAttrError(json(3), AttrType::VT_STRING, "");
  ExpectAttrError(json::array({"a"}), AttrType::VT_STRING, "");
}

BOOST_AUTO_TEST_CASE(vt_data_type) {
  BOOST_CHECK_EQUAL(std::get<DataType>(AttrFromJson(json("float16"), AttrType::VT_DATA_TYPE, "w")), DT_FLOAT16);
  BOOST_CHECK_EQUAL(std::get<DataType>(AttrFromJson(json("DT_BF16"), AttrType::VT_DATA_TYPE, "w")), DT_BF16);
  ExpectAttrError(json("float99"), AttrType::VT_DATA_TYPE, "");
  ExpectAttrError(json(1), AttrType::VT_DATA_TYPE, "");
}

BOOST_AUTO_TEST_CASE(vt_tensor) {
  AttrValue v = AttrFromJson(json::parse(R"({"dtype": "int32", "shape": [2, 2], "data": [[1, 2], [3, 4]]})"),
                             AttrType::VT_TENSOR, "w");
  const TensorAttr& t = std::get<TensorAttr>(v);
  BOOST_REQUIRE(t);
  BOOST_CHECK_EQUAL(t->GetDataType(), DT_INT32);
  BOOST_CHECK(t->GetStorageShape() == Shape({2, 2}));
  BOOST_CHECK_EQUAL(t->Data<int32_t>()[3], 4);
  ExpectAttrError(json::array({1, 2}), AttrType::VT_TENSOR, "");
  ExpectAttrError(json::parse(R"({"dtype": "int32", "shape": [2]})"), AttrType::VT_TENSOR, "");
  ExpectAttrError(json::parse(R"({"dtype": "nope", "shape": [1], "data": [1]})"), AttrType::VT_TENSOR, ".dtype");
  ExpectAttrError(json::parse(R"({"dtype": "int32", "shape": [-1], "data": []})"), AttrType::VT_TENSOR, ".shape");
  ExpectAttrError(json::parse(R"({"dtype": "int32", "shape": [3], "data": [1, 2]})"), AttrType::VT_TENSOR, ".data");
}

BOOST_AUTO_TEST_CASE(vt_list_int) {
  BOOST_CHECK((std::get<std::vector<int64_t>>(AttrFromJson(json::parse("[1, -2, 3]"), AttrType::VT_LIST_INT, "w")) ==
               std::vector<int64_t>{1, -2, 3}));
  BOOST_CHECK(std::get<std::vector<int64_t>>(AttrFromJson(json::array(), AttrType::VT_LIST_INT, "w")).empty());
  ExpectAttrError(json::parse("[1, \"2\"]"), AttrType::VT_LIST_INT, "[1]");
  ExpectAttrError(json(1), AttrType::VT_LIST_INT, "");
}

BOOST_AUTO_TEST_CASE(vt_list_float) {
  BOOST_CHECK((std::get<std::vector<float>>(AttrFromJson(json::parse("[0.5, 2]"), AttrType::VT_LIST_FLOAT, "w")) ==
               std::vector<float>{0.5f, 2.0f}));
  ExpectAttrError(json(0.5), AttrType::VT_LIST_FLOAT, "");
  ExpectAttrError(json::parse("[0.5, null]"), AttrType::VT_LIST_FLOAT, "[1]");
}

BOOST_AUTO_TEST_CASE(vt_list_bool) {
  BOOST_CHECK((std::get<std::vector<bool>>(AttrFromJson(json::parse("[true, false]"), AttrType::VT_LIST_BOOL, "w")) ==
               std::vector<bool>{true, false}));
  ExpectAttrError(json::parse("[true, 1]"), AttrType::VT_LIST_BOOL, "[1]");
  ExpectAttrError(json(true), AttrType::VT_LIST_BOOL, "");
}

BOOST_AUTO_TEST_CASE(vt_list_string) {
  BOOST_CHECK((std::get<std::vector<std::string>>(AttrFromJson(json::parse("[\"a\", \"\"]"), AttrType::VT_LIST_STRING, "w")) ==
               std::vector<std::string>{"a", ""}));
  ExpectAttrError(json::parse("[\"a\", 1]"), AttrType::VT_LIST_STRING, "[1]");
  ExpectAttrError(json("a"), AttrType::VT_LIST_STRING, "");
}

BOOST_AUTO_TEST_CASE(vt_list_data_type) {
  BOOST_CHECK((std::get<std::vector<DataType>>(AttrFromJson(json::parse("[\"int8\", \"bfloat16\"]"),
                                                            AttrType::VT_LIST_DATA_TYPE, "w")) ==
               std::vector<DataType>{DT_INT8, DT_BF16}));
  ExpectAttrError(json("int8"), AttrType::VT_LIST_DATA_TYPE, "");
  ExpectAttrError(json::parse("[\"int8\", \"int9\"]"), AttrType::VT_LIST_DATA_TYPE, "[1]");
}

BOOST_AUTO_TEST_CASE(vt_list_list_int) {
  BOOST_CHECK((std::get<std::vector<std::vector<int64_t>>>(
                   AttrFromJson(json::parse("[[1], [2, 3], []]"), AttrType::VT_LIST_LIST_INT, "w")) ==
               std::vector<std::vector<int64_t>>{{1}, {2, 3}, {}}));
  ExpectAttrError(json::parse("[1, 2]"), AttrType::VT_LIST_LIST_INT, "[0]");
  ExpectAttrError(json::parse("[[1], [2, \"x\"]]"), AttrType::VT_LIST_LIST_INT, "[1][1]");
  ExpectAttrError(json(1), AttrType::VT_LIST_LIST_INT, "");
}

BOOST_AUTO_TEST_SUITE_END()

// ge/text.h: plugin text on a terminal, long values in messages.
BOOST_AUTO_TEST_SUITE(text)

BOOST_AUTO_TEST_CASE(terminal_safe_escapes_c0_del_and_c1_losslessly) {
  using namespace std::string_literals;
  BOOST_CHECK_EQUAL(TerminalSafe("a\x1b[31mb\rc\0d\x7f"s), "a\\x1b[31mb\\x0dc\\x00d\\x7f");
  BOOST_CHECK_EQUAL(TerminalSafe("csi \xc2\x9b" "2J, nel \xc2\x85"), "csi \\u009b2J, nel \\u0085");
  BOOST_CHECK_EQUAL(TerminalSafe("caf\xc3\xa9 \xc2\xa0 ok"), "caf\xc3\xa9 \xc2\xa0 ok");  // printable UTF-8 stays
  BOOST_CHECK_EQUAL(TerminalSafe("l1\nl2\tx"), "l1\\x0al2\\x09x");
  BOOST_CHECK_EQUAL(TerminalSafe("l1\nl2\tx", /*keep_newlines=*/true), "l1\nl2\tx");
}

BOOST_AUTO_TEST_CASE(abbreviate_cuts_long_values_and_says_how_long) {
  BOOST_CHECK_EQUAL(Abbreviate("short"), "short");
  BOOST_CHECK_EQUAL(Abbreviate(std::string(kMaxQuotedChars, 'a')), std::string(kMaxQuotedChars, 'a'));
  const std::string cut = Abbreviate(std::string(16 << 20, 'a'));
  BOOST_CHECK_EQUAL(cut, std::string(kMaxQuotedChars, 'a') + "... (16777216 bytes)");
  // Never splits a UTF-8 sequence: 'é' is two bytes, the cut falls before it.
  const std::string accents = std::string(kMaxQuotedChars - 1, 'a') + "\xc3\xa9" + std::string(10, 'b');
  BOOST_CHECK_EQUAL(Abbreviate(accents), std::string(kMaxQuotedChars - 1, 'a') + "... (211 bytes)");
}

BOOST_AUTO_TEST_CASE(graph_errors_quote_long_values_cut) {
  const std::string big(1 << 20, 'Q');
  const std::string text = R"({"inputs": [], "nodes": [{"name": "n", "op_type": "X", "inputs": [], ")" + big +
                           R"(": 1}], "outputs": ["n:0"]})";
  try {
    ParseGraph(text, "g.json", ".");
    BOOST_FAIL("no error");
  } catch (const GraphError& e) {
    const std::string what = e.what();
    BOOST_CHECK_LT(what.size(), 600u);
    BOOST_CHECK(Contains(what, "unknown field '" + std::string(kMaxQuotedChars, 'Q') + "... (1048576 bytes)'"));
  }
}

BOOST_AUTO_TEST_CASE(duplicate_keys_are_refused_with_their_place) {
  const auto error = [](const std::string& text) {
    try {
      ParseGraph(text, "g.json", ".");
    } catch (const GraphError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  BOOST_CHECK_EQUAL(error(R"({"nodes": [], "nodes": [], "outputs": []})"),
                    "g.json: duplicate key \"nodes\" (JSON readers would keep only one of them)");
  BOOST_CHECK(Contains(error(R"({"inputs": [{"a": 1}, {"b": [{}, {"c": 1, "c": 2}]}], "outputs": []})"),
                       "g.json: inputs[1].b[1]: duplicate key \"c\""));
  // The same key in sibling objects, or in an object inside an array next to one, is fine.
  BOOST_CHECK(!Contains(error(R"({"inputs": [{"name": "x"}, {"name": "y"}], "nodes": [{"name": "x"}]})"),
                        "duplicate"));
}

BOOST_AUTO_TEST_SUITE_END()

// .npy headers parsed as numpy parses them; sizes checked before allocating.
BOOST_AUTO_TEST_SUITE(npy_reader)

// A version 1.0 .npy file with `header` (padded as numpy pads it) and `data_bytes` bytes after it.
fs::path WriteRawNpy(const TempDir& dir, const std::string& name, std::string header, std::size_t data_bytes) {
  header += ' ';
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header + std::string(data_bytes, '\0');
  const fs::path p = dir.path / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::string ReadError(const fs::path& p) {
  try {
    ReadNpy(p, std::nullopt);
  } catch (const NpyError& e) {
    return e.what();
  }
  return "no error";
}

BOOST_AUTO_TEST_CASE(numpy_written_headers_are_read) {
  TempDir dir;
  for (const char* h : {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                        "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}",
                        "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}"}) {
    const Tensor t = ReadNpy(WriteRawNpy(dir, "ok.npy", h, 24), std::nullopt);
    BOOST_CHECK_EQUAL(t.GetStorageShape().ToString(), "[2, 3]");
  }
  BOOST_CHECK_EQUAL(ReadNpy(WriteRawNpy(dir, "s.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", 4),
                            std::nullopt)
                        .GetStorageShape()
                        .GetDimNum(),
                    0u);
  BOOST_CHECK_EQUAL(ReadNpy(WriteRawNpy(dir, "one.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (5,)}", 20),
                            std::nullopt)
                        .GetStorageShape()
                        .ToString(),
                    "[5]");
}

BOOST_AUTO_TEST_CASE(headers_numpy_refuses_are_refused) {
  TempDir dir;
  const std::pair<const char*, const char*> cases[] = {
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4.8,)}", "'shape' must be a tuple of non-negative ints"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1e9,)}", "'shape' must be a tuple of non-negative ints"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "'shape' must be a tuple of non-negative ints"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", "'shape' must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [3]}", "expected '('"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}", "'fortran_order' must be True or False"},
      {"{'descr': '<f4', 'shape': (3,)}", "missing key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}", "unknown key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (3,)}", "key 'descr' appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} trailing", "must end with spaces and a newline"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (03,)}", "leading zero"},
  };
  for (const auto& [header, why] : cases) {
    const std::string e = ReadError(WriteRawNpy(dir, "bad.npy", header, 64));
    BOOST_TEST_CONTEXT(header) {
      BOOST_CHECK(Contains(e, "malformed .npy header: "));
      BOOST_CHECK(Contains(e, why));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_nul_in_the_padding_or_a_minor_version_is_refused) {
  TempDir dir;
  fs::path p = WriteRawNpy(dir, "nul.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4);
  {
    std::ifstream in(p, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(bytes.find('\n')) - 1);  // the last padding space
    f.put('\0');
  }
  BOOST_CHECK(Contains(ReadError(p), "must end with spaces and a newline"));
  p = WriteRawNpy(dir, "v15.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4);
  {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(7);
    f.put('\x05');
  }
  BOOST_CHECK(Contains(ReadError(p), "unsupported .npy version 1.5"));
}

BOOST_AUTO_TEST_CASE(declared_sizes_are_checked_against_the_file_before_allocating) {
  TempDir dir;
  // 10^9 float32 = 4 GB declared in a 128-byte file: refused at once.
  const std::string e =
      ReadError(WriteRawNpy(dir, "huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,)}", 0));
  BOOST_CHECK(Contains(e, "truncated data: shape [1000000000] of float32 needs 4000000000 bytes, the file has 0"));
  const std::string o = ReadError(WriteRawNpy(
      dir, "ovf.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16)}", 8));
  BOOST_CHECK(Contains(o, "needs more than 2^64 bytes"));
  const std::string one_short =
      ReadError(WriteRawNpy(dir, "short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4,)}", 15));
  BOOST_CHECK(Contains(one_short, "needs 16 bytes, the file has 15"));
}

BOOST_AUTO_TEST_CASE(only_regular_files_are_read) {
  TempDir dir;
  const fs::path fifo = dir.path / "fifo.npy";
  BOOST_REQUIRE_EQUAL(::mkfifo(fifo.c_str(), 0600), 0);
  BOOST_CHECK(Contains(ReadError(fifo), "fifo.npy: not a regular file"));  // and it did not block
  const fs::path zero = dir.path / "zero.npy";
  fs::create_symlink("/dev/zero", zero);
  BOOST_CHECK(Contains(ReadError(zero), "zero.npy: not a regular file"));
  BOOST_CHECK(Contains(ReadError(dir.path), "not a regular file"));
}

BOOST_AUTO_TEST_SUITE_END()
