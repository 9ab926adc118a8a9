// OpRegistry, CustomOpCast, the builtin ReluCpp and the callback contexts.
#define BOOST_TEST_MODULE op_registry
#include <boost/test/unit_test.hpp>

#include "test_util.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ge/op/contexts.h"
#include "ge/op/custom_op.h"
#include "ge/op/op_registry.h"

using namespace ge;

namespace {

using ge_test::Contains;

std::shared_ptr<const OpSchema> UnarySchema(const std::string& op_type) {
  auto s = std::make_shared<OpSchema>();
  s->op_type = op_type;
  s->inputs = {{"x", IrInputKind::kRequired}};
  s->outputs = {{"y", IrOutputKind::kRequired}};
  return s;
}

// Inherits both interfaces but reports only the capabilities it is given: the
// way a Python adapter reports what the plugin's class defines.
class PartialOp final : public CapabilityReportingOp, public EagerExecuteOp, public InferMetaOp {
 public:
  PartialOp(std::shared_ptr<const OpSchema> schema, uint32_t caps) : schema_(std::move(schema)), caps_(caps) {}
  uint32_t GetCapabilities() const noexcept override { return caps_; }
  const OpSchema& GetSchema() const noexcept override { return *schema_; }
  graphStatus Execute(gert::EagerOpExecutionContext*) override { return GRAPH_SUCCESS; }
  graphStatus InferMeta(InferMetaContext*) override { return GRAPH_SUCCESS; }

 private:
  std::shared_ptr<const OpSchema> schema_;
  uint32_t caps_;
};

// Claims the eager bit without implementing the interface.
class LiarOp final : public CapabilityReportingOp {
 public:
  explicit LiarOp(std::shared_ptr<const OpSchema> schema) : schema_(std::move(schema)) {}
  uint32_t GetCapabilities() const noexcept override {
    return static_cast<uint32_t>(CustomOpCapability::kEagerExecute);
  }
  const OpSchema& GetSchema() const noexcept override { return *schema_; }

 private:
  std::shared_ptr<const OpSchema> schema_;
};

OpRegistration MakeReg(const std::string& op_type, const std::string& source, std::atomic<int>* created = nullptr) {
  OpRegistration r;
  r.op_type = op_type;
  r.schema = UnarySchema(op_type);
  r.source = source;
  r.capabilities = static_cast<uint32_t>(CustomOpCapability::kEagerExecute);
  auto schema = r.schema;
  r.creator = [schema, created]() -> std::shared_ptr<BaseCustomOp> {
    if (created) created->fetch_add(1);
    return std::make_shared<PartialOp>(schema, static_cast<uint32_t>(CustomOpCapability::kEagerExecute));
  };
  return r;
}

// Runs ReluCpp's execute on `in` (raw element bytes) and returns the output;
// `status` is the context's error slot when execute failed (a generic error
// naming the code when the slot is empty).
Tensor RunRelu(OpRegistry& reg, DataType dt, const Shape& shape, const void* data, Status* status) {
  auto op = reg.Create("ReluCpp");
  BOOST_REQUIRE(op);
  auto* ex = CustomOpCast<EagerExecuteOp>(op);
  BOOST_REQUIRE(ex != nullptr);
  Tensor x = Tensor::Allocate(TensorDesc(shape, dt));
  std::memcpy(x.GetAddr(), data, x.GetSize());
  RuntimeAttrs attrs;
  EagerOpExecutionContext ctx(*reg.Find("ReluCpp")->schema, {&x}, InstanceLayout({1}), attrs, InstanceLayout({1}));
  const graphStatus code = ex->Execute(&ctx);
  *status = code == GRAPH_SUCCESS ? Status::Ok()
            : ctx.HasError()     ? ctx.TakeError()
                                 : Status::Error("returned graphStatus " + std::to_string(code));
  auto outs = ctx.TakeOutputs();
  BOOST_REQUIRE_EQUAL(outs.size(), 1u);
  return outs[0] ? *outs[0] : Tensor();
}

}  // namespace

// ---- registry ---------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(registry)

BOOST_AUTO_TEST_CASE(register_find_create_unregister) {
  OpRegistry reg;
  std::atomic<int> created{0};
  BOOST_CHECK_EQUAL(reg.Size(), 0u);
  BOOST_CHECK(!reg.Find("A"));
  BOOST_CHECK(!reg.Create("A"));
  Status st = reg.Register(MakeReg("A", "a.py", &created));
  BOOST_REQUIRE_MESSAGE(st.ok(), st.message());
  BOOST_CHECK_EQUAL(created.load(), 0);  // registration does not create
  auto found = reg.Find("A");
  BOOST_REQUIRE(found);
  BOOST_CHECK_EQUAL(found->op_type, "A");
  BOOST_CHECK_EQUAL(found->source, "a.py");
  BOOST_CHECK_EQUAL(found->schema->op_type, "A");
  BOOST_CHECK_EQUAL(found->capabilities, static_cast<uint32_t>(CustomOpCapability::kEagerExecute));
  auto op = reg.Create("A");
  BOOST_REQUIRE(op);
  BOOST_CHECK_EQUAL(created.load(), 1);
  BOOST_CHECK_EQUAL(dynamic_cast<CapabilityReportingOp&>(*op).GetSchema().op_type, "A");
  BOOST_CHECK(reg.Create("A") != op);  // the creator decides: this one makes a new object each time
  BOOST_CHECK_EQUAL(created.load(), 2);
  BOOST_CHECK(reg.Unregister("A"));
  BOOST_CHECK(!reg.Unregister("A"));
  BOOST_CHECK(!reg.Find("A"));
  BOOST_CHECK_EQUAL(reg.Size(), 0u);
  // After unregistering, the op_type can be registered again (by another source).
  BOOST_CHECK(reg.Register(MakeReg("A", "other.py")).ok());
  BOOST_CHECK_EQUAL(reg.Find("A")->source, "other.py");
}

BOOST_AUTO_TEST_CASE(unregister_source) {
  OpRegistry reg;
  BOOST_REQUIRE(reg.Register(MakeReg("A1", "a.py")).ok());
  BOOST_REQUIRE(reg.Register(MakeReg("A2", "a.py")).ok());
  BOOST_REQUIRE(reg.Register(MakeReg("B1", "b.py")).ok());
  BOOST_CHECK_EQUAL(reg.UnregisterSource("a.py"), 2u);
  BOOST_CHECK_EQUAL(reg.UnregisterSource("a.py"), 0u);
  BOOST_CHECK_EQUAL(reg.UnregisterSource("nobody.py"), 0u);
  BOOST_CHECK((reg.ListOpTypes() == std::vector<std::string>{"B1"}));
}

BOOST_AUTO_TEST_CASE(unimplemented_notes_are_not_registrations) {
  OpRegistry reg;
  reg.NoteUnimplemented("P", "plugin 'p' has only the prototype", "p.py");
  reg.NoteUnimplemented("P", "a second note", "q.py");  // the first note of an op_type stays
  BOOST_CHECK_EQUAL(reg.UnimplementedNote("P"), "plugin 'p' has only the prototype");
  BOOST_CHECK_EQUAL(reg.UnimplementedNote("Q"), "");
  // Invisible to lookups: the op_type is still not registered.
  BOOST_CHECK(!reg.Find("P"));
  BOOST_CHECK(!reg.Create("P"));
  BOOST_CHECK(reg.ListOpTypes().empty());
  BOOST_CHECK_EQUAL(reg.Size(), 0u);
  // A registration of the op_type does not need the note to go (the engine
  // consults it only for op_types not registered); unloading the source does.
  BOOST_REQUIRE(reg.Register(MakeReg("P", "impl.py")).ok());
  BOOST_CHECK_EQUAL(reg.UnregisterSource("p.py"), 0u);  // no op of its own, the note only
  BOOST_CHECK_EQUAL(reg.UnimplementedNote("P"), "");
  BOOST_CHECK(reg.Find("P"));
}

BOOST_AUTO_TEST_CASE(a_note_that_overrides_replaces_one_that_does_not) {
  OpRegistry reg;
  reg.NoteUnimplemented("X", "prototype only in p", "p.py");
  reg.NoteUnimplemented("X", "implemented by q, not loaded", "q.py", /*overrides=*/true);
  BOOST_CHECK_EQUAL(reg.UnimplementedNote("X"), "implemented by q, not loaded");
  reg.NoteUnimplemented("X", "prototype only in r", "r.py");  // a weaker note never replaces it
  reg.NoteUnimplemented("X", "implemented by s, not loaded", "s.py", true);  // nor does a second strong one
  BOOST_CHECK_EQUAL(reg.UnimplementedNote("X"), "implemented by q, not loaded");
  reg.UnregisterSource("q.py");
  BOOST_CHECK_EQUAL(reg.UnimplementedNote("X"), "");
}

BOOST_AUTO_TEST_CASE(conflict_names_both_sources) {
  OpRegistry reg;
  BOOST_REQUIRE(reg.Register(MakeReg("Dup", "/opp/first.py")).ok());
  Status st = reg.Register(MakeReg("Dup", "/opp/second.py"));
  BOOST_REQUIRE(!st.ok());
  BOOST_CHECK_MESSAGE(Contains(st.message(), "/opp/first.py"), st.message());
  BOOST_CHECK_MESSAGE(Contains(st.message(), "/opp/second.py"), st.message());
  BOOST_CHECK(Contains(st.message(), "Dup"));
  BOOST_CHECK_EQUAL(reg.Find("Dup")->source, "/opp/first.py");  // the first wins, never overwritten
  BOOST_CHECK_EQUAL(reg.Size(), 1u);
}

BOOST_AUTO_TEST_CASE(missing_schema_or_creator) {
  OpRegistry reg;
  OpRegistration no_schema = MakeReg("S", "s.py");
  no_schema.schema.reset();
  Status st = reg.Register(no_schema);
  BOOST_CHECK(!st.ok());
  BOOST_CHECK_MESSAGE(Contains(st.message(), "schema") && Contains(st.message(), "'S'"), st.message());

  OpRegistration no_creator = MakeReg("C", "c.py");
  no_creator.creator = nullptr;
  st = reg.Register(no_creator);
  BOOST_CHECK(!st.ok());
  BOOST_CHECK_MESSAGE(Contains(st.message(), "creator") && Contains(st.message(), "'C'"), st.message());

  OpRegistration mismatch = MakeReg("M", "m.py");
  mismatch.schema = UnarySchema("Other");
  st = reg.Register(mismatch);
  BOOST_CHECK(!st.ok());
  BOOST_CHECK_MESSAGE(Contains(st.message(), "Other"), st.message());

  OpRegistration empty = MakeReg("", "e.py");
  BOOST_CHECK(!reg.Register(empty).ok());
  BOOST_CHECK_EQUAL(reg.Size(), 0u);  // nothing half-registered
}

BOOST_AUTO_TEST_CASE(creator_failure_gives_null) {
  OpRegistry reg;
  OpRegistration r = MakeReg("Throws", "t.py");
  r.creator = []() -> std::shared_ptr<BaseCustomOp> { throw std::runtime_error("no"); };
  BOOST_REQUIRE(reg.Register(r).ok());
  BOOST_CHECK(!reg.Create("Throws"));
}

BOOST_AUTO_TEST_CASE(list_op_types_sorted) {
  OpRegistry reg;
  for (const char* n : {"Zeta", "alpha", "Beta", "Alpha", "beta2"}) BOOST_REQUIRE(reg.Register(MakeReg(n, "x")).ok());
  const std::vector<std::string> want{"Alpha", "Beta", "Zeta", "alpha", "beta2"};  // byte order
  BOOST_CHECK(reg.ListOpTypes() == want);
  BOOST_CHECK_EQUAL(reg.Size(), 5u);
}

BOOST_AUTO_TEST_CASE(concurrent_register_find_create) {
  OpRegistry reg;
  BOOST_REQUIRE(RegisterBuiltinOps(reg).ok());
  constexpr int kThreads = 8;
  constexpr int kPerThread = 200;
  std::atomic<int> shared_wins{0}, shared_losses{0}, found{0}, created_ok{0}, own_ok{0}, cast_ok{0};
  std::atomic<int> go{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      go.fetch_add(1);
      while (go.load() < kThreads) std::this_thread::yield();  // start together
      for (int i = 0; i < kPerThread; ++i) {
        if (reg.Register(MakeReg("T" + std::to_string(t) + "_" + std::to_string(i), "src" + std::to_string(t))).ok()) {
          own_ok.fetch_add(1);
        }
        if (reg.Register(MakeReg("Shared" + std::to_string(i), "src" + std::to_string(t))).ok()) {
          shared_wins.fetch_add(1);
        } else {
          shared_losses.fetch_add(1);
        }
        if (reg.Find("ReluCpp")) found.fetch_add(1);
        auto op = reg.Create("ReluCpp");
        if (op) created_ok.fetch_add(1);
        if (CustomOpCast<EagerExecuteOp>(op) != nullptr && CustomOpCast<ShapeInferOp>(op) != nullptr) cast_ok.fetch_add(1);
        auto mine = reg.Create("T" + std::to_string(t) + "_" + std::to_string(i));
        (void)mine;
        (void)reg.ListOpTypes();
      }
    });
  }
  for (auto& th : threads) th.join();
  BOOST_CHECK_EQUAL(own_ok.load(), kThreads * kPerThread);
  BOOST_CHECK_EQUAL(shared_wins.load(), kPerThread);  // exactly one winner per op_type
  BOOST_CHECK_EQUAL(shared_losses.load(), (kThreads - 1) * kPerThread);
  BOOST_CHECK_EQUAL(found.load(), kThreads * kPerThread);
  BOOST_CHECK_EQUAL(created_ok.load(), kThreads * kPerThread);
  BOOST_CHECK_EQUAL(cast_ok.load(), kThreads * kPerThread);
  BOOST_CHECK_EQUAL(reg.Size(), static_cast<std::size_t>(1 + kThreads * kPerThread + kPerThread));
  BOOST_CHECK_EQUAL(reg.ListOpTypes().size(), reg.Size());
  std::size_t removed = 0;
  for (int t = 0; t < kThreads; ++t) removed += reg.UnregisterSource("src" + std::to_string(t));
  BOOST_CHECK_EQUAL(removed, static_cast<std::size_t>(kThreads * kPerThread + kPerThread));
  BOOST_CHECK((reg.ListOpTypes() == std::vector<std::string>{"ReluCpp"}));
}

BOOST_AUTO_TEST_SUITE_END()

// ---- CustomOpCast ----------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(custom_op_cast_follows_capability_bits) {
  auto schema = UnarySchema("Partial");
  auto eager_only = std::make_shared<PartialOp>(schema, static_cast<uint32_t>(CustomOpCapability::kEagerExecute));
  // The class inherits InferMetaOp, but the op does not report the bit.
  BOOST_CHECK(dynamic_cast<InferMetaOp*>(eager_only.get()) != nullptr);
  BOOST_CHECK(CustomOpCast<InferMetaOp>(eager_only) == nullptr);
  BOOST_CHECK(CustomOpCast<EagerExecuteOp>(eager_only) == static_cast<EagerExecuteOp*>(eager_only.get()));

  auto infer_only = std::make_shared<PartialOp>(schema, static_cast<uint32_t>(CustomOpCapability::kInferMeta));
  BOOST_CHECK(CustomOpCast<EagerExecuteOp>(infer_only) == nullptr);
  BOOST_CHECK(CustomOpCast<InferMetaOp>(infer_only.get()) != nullptr);

  auto both = std::make_shared<PartialOp>(schema, CustomOpCapability::kEagerExecute | CustomOpCapability::kInferMeta);
  BOOST_CHECK(CustomOpCast<EagerExecuteOp>(both) != nullptr);
  BOOST_CHECK(CustomOpCast<InferMetaOp>(both) != nullptr);

  auto none = std::make_shared<PartialOp>(schema, 0u);
  BOOST_CHECK(CustomOpCast<EagerExecuteOp>(none) == nullptr);
  BOOST_CHECK(CustomOpCast<InferMetaOp>(none) == nullptr);

  // A bit without the interface is not enough either.
  auto liar = std::make_shared<LiarOp>(schema);
  BOOST_CHECK(CustomOpCast<EagerExecuteOp>(liar) == nullptr);

  BOOST_CHECK(CustomOpCast<EagerExecuteOp>(static_cast<BaseCustomOp*>(nullptr)) == nullptr);
  BOOST_CHECK(CustomOpCast<EagerExecuteOp>(std::shared_ptr<BaseCustomOp>()) == nullptr);

  BOOST_CHECK_EQUAL(CapabilityString(CustomOpCapability::kEagerExecute | CustomOpCapability::kInferMeta),
                    "eager_execute,infer_meta");
  BOOST_CHECK_EQUAL(CapabilityString(CustomOpCapability::kCompilable | CustomOpCapability::kAnnotatedArgs),
                    "compilable,annotated_args");
  BOOST_CHECK_EQUAL(CapabilityString(0), "");
}

// ---- builtin ReluCpp ---------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(relu_cpp)

BOOST_AUTO_TEST_CASE(registration) {
  OpRegistry reg;
  BOOST_REQUIRE(RegisterBuiltinOps(reg).ok());
  auto r = reg.Find("ReluCpp");
  BOOST_REQUIRE(r);
  BOOST_CHECK_EQUAL(r->source, "builtin");
  BOOST_CHECK_EQUAL(r->plugin, "");
  BOOST_CHECK_EQUAL(r->capabilities, CustomOpCapability::kEagerExecute | CustomOpCapability::kInferMeta);
  BOOST_CHECK_EQUAL(r->schema->ToString(), "ReluCpp(x) -> (y)");
  auto op = reg.Create("ReluCpp");
  BOOST_REQUIRE(op);
  // A class written against GE's interfaces only: they decide its capabilities.
  BOOST_CHECK(dynamic_cast<CapabilityReportingOp*>(op.get()) == nullptr);
  BOOST_CHECK_EQUAL(OpCapabilities(*op), r->capabilities);
  BOOST_CHECK(CustomOpCast<EagerExecuteOp>(op) != nullptr);
  BOOST_CHECK(CustomOpCast<ShapeInferOp>(op) != nullptr);
  BOOST_CHECK(CustomOpCast<InferMetaOp>(op) == nullptr);
  BOOST_CHECK(CustomOpCast<CompilableOp>(op) == nullptr);
  // Registering twice is a conflict, not an overwrite.
  Status again = RegisterBuiltinOps(reg);
  BOOST_CHECK(!again.ok());
  BOOST_CHECK(Contains(again.message(), "ReluCpp"));
}

BOOST_AUTO_TEST_CASE(infer_shape_and_datatype) {
  OpRegistry reg;
  BOOST_REQUIRE(RegisterBuiltinOps(reg).ok());
  auto op = reg.Create("ReluCpp");
  const OpSchema& schema = *reg.Find("ReluCpp")->schema;
  auto* si = CustomOpCast<ShapeInferOp>(op);
  BOOST_REQUIRE(si != nullptr);
  RuntimeAttrs attrs;
  for (DataType dt : {DT_FLOAT, DT_INT32, DT_FLOAT16}) {
    TensorDesc x(Shape{2, 3}, dt);
    gert::InferShapeContext sctx(schema, {x}, InstanceLayout({1}), InstanceLayout({1}), attrs);
    BOOST_REQUIRE_EQUAL(si->InferShape(&sctx), GRAPH_SUCCESS);
    BOOST_CHECK(sctx.OutputShapes()[0] == Shape({2, 3}));
    gert::InferDataTypeContext dctx(schema, {x}, InstanceLayout({1}), InstanceLayout({1}), attrs);
    BOOST_REQUIRE_EQUAL(si->InferDataType(&dctx), GRAPH_SUCCESS);
    BOOST_CHECK_EQUAL(dctx.GetOutputDataType(0), dt);
  }
  // An unsupported dtype fails with the reason in the error slot.
  gert::InferDataTypeContext bad(schema, {TensorDesc(Shape{2}, DT_INT8)}, InstanceLayout({1}), InstanceLayout({1}), attrs);
  BOOST_CHECK_EQUAL(si->InferDataType(&bad), GRAPH_PARAM_INVALID);
  BOOST_CHECK_MESSAGE(Contains(bad.GetError().message(), "int8"), bad.GetError().message());
  BOOST_CHECK_EQUAL(bad.GetOutputDataType(0), DT_UNDEFINED);
  // No input: InferShape fails.
  gert::InferShapeContext none(schema, {}, InstanceLayout({0}), InstanceLayout({1}), attrs);
  BOOST_CHECK_NE(si->InferShape(&none), GRAPH_SUCCESS);
  BOOST_CHECK(none.HasError());
}

BOOST_AUTO_TEST_CASE(execute_float32) {
  OpRegistry reg;
  BOOST_REQUIRE(RegisterBuiltinOps(reg).ok());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float in[6] = {-1.5f, 0.0f, 2.5f, -0.0f, nan, 1e30f};
  Status st;
  Tensor y = RunRelu(reg, DT_FLOAT, Shape{2, 3}, in, &st);
  BOOST_REQUIRE_MESSAGE(st.ok(), st.message());
  BOOST_CHECK_EQUAL(y.GetDataType(), DT_FLOAT);
  BOOST_CHECK(y.GetStorageShape() == Shape({2, 3}));
  const float* o = y.Data<float>();
  BOOST_CHECK_EQUAL(o[0], 0.0f);
  BOOST_CHECK_EQUAL(o[1], 0.0f);
  BOOST_CHECK_EQUAL(o[2], 2.5f);
  BOOST_CHECK_EQUAL(o[3], 0.0f);
  BOOST_CHECK(std::isnan(o[4]));  // NaN propagates
  BOOST_CHECK_EQUAL(o[5], 1e30f);
}

BOOST_AUTO_TEST_CASE(execute_int32) {
  OpRegistry reg;
  BOOST_REQUIRE(RegisterBuiltinOps(reg).ok());
  const int32_t in[4] = {-3, 0, 7, std::numeric_limits<int32_t>::min()};
  Status st;
  Tensor y = RunRelu(reg, DT_INT32, Shape{4}, in, &st);
  BOOST_REQUIRE_MESSAGE(st.ok(), st.message());
  BOOST_CHECK_EQUAL(y.GetDataType(), DT_INT32);
  const int32_t* o = y.Data<int32_t>();
  BOOST_CHECK_EQUAL(o[0], 0);
  BOOST_CHECK_EQUAL(o[1], 0);
  BOOST_CHECK_EQUAL(o[2], 7);
  BOOST_CHECK_EQUAL(o[3], 0);
}

BOOST_AUTO_TEST_CASE(execute_float16) {
  OpRegistry reg;
  BOOST_REQUIRE(RegisterBuiltinOps(reg).ok());
  // -1.0, 1.0, -0.0, NaN, -NaN, -inf, +inf, smallest negative subnormal
  const uint16_t in[8] = {0xBC00, 0x3C00, 0x8000, 0x7E00, 0xFE00, 0xFC00, 0x7C00, 0x8001};
  const uint16_t want[8] = {0x0000, 0x3C00, 0x0000, 0x7E00, 0xFE00, 0x0000, 0x7C00, 0x0000};
  Status st;
  Tensor y = RunRelu(reg, DT_FLOAT16, Shape{8}, in, &st);
  BOOST_REQUIRE_MESSAGE(st.ok(), st.message());
  BOOST_CHECK_EQUAL(y.GetDataType(), DT_FLOAT16);
  for (int i = 0; i < 8; ++i) {
    BOOST_TEST_CONTEXT("element " << i) { BOOST_CHECK_EQUAL(y.Data<uint16_t>()[i], want[i]); }
  }
}

BOOST_AUTO_TEST_CASE(execute_unsupported_dtype) {
  OpRegistry reg;
  BOOST_REQUIRE(RegisterBuiltinOps(reg).ok());
  const int8_t in[2] = {-1, 1};
  Status st;
  Tensor y = RunRelu(reg, DT_INT8, Shape{2}, in, &st);
  BOOST_CHECK(!st.ok());
  BOOST_CHECK_MESSAGE(Contains(st.message(), "int8"), st.message());
  BOOST_CHECK(!y.HasData());
}

BOOST_AUTO_TEST_SUITE_END()

// ---- contexts --------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(contexts)

BOOST_AUTO_TEST_CASE(instance_layout) {
  InstanceLayout l({1, 0, 3, 2});
  BOOST_CHECK_EQUAL(l.IrNum(), 4u);
  BOOST_CHECK_EQUAL(l.Total(), 6u);
  BOOST_CHECK_EQUAL(l.Start(0), 0u);
  BOOST_CHECK_EQUAL(l.Start(1), 1u);
  BOOST_CHECK_EQUAL(l.Start(2), 1u);
  BOOST_CHECK_EQUAL(l.Start(3), 4u);
  BOOST_CHECK_EQUAL(l.Count(2), 3u);
  BOOST_CHECK_THROW(l.Count(4), std::out_of_range);
  BOOST_CHECK_THROW(l.Start(4), std::out_of_range);
  BOOST_CHECK_EQUAL(InstanceLayout().Total(), 0u);
}

BOOST_AUTO_TEST_CASE(infer_meta_context_errors) {
  auto schema = std::make_shared<OpSchema>();
  schema->op_type = "Two";
  schema->inputs = {{"x", IrInputKind::kRequired}, {"ys", IrInputKind::kDynamic}};
  schema->outputs = {{"a", IrOutputKind::kRequired}, {"bs", IrOutputKind::kDynamic}};
  RuntimeAttrs attrs({AttrValue(int64_t{4})});
  TensorDesc d(Shape{2}, DT_FLOAT);
  InferMetaContext ctx(*schema, {d, d, d}, InstanceLayout({1, 2}), attrs);
  BOOST_CHECK_EQUAL(ctx.GetInputNum(), 3u);
  BOOST_CHECK(ctx.GetInputDesc(2) != nullptr);
  BOOST_CHECK(ctx.GetInputDesc(3) == nullptr);
  BOOST_CHECK_EQUAL(*ctx.GetAttrs()->GetAttrPointer<int64_t>(0), 4);
  BOOST_CHECK(ctx.GetAttrs()->GetAttrPointer<float>(0) == nullptr);  // another type
  BOOST_CHECK(ctx.GetAttrs()->GetAttrPointer<int64_t>(1) == nullptr);  // out of range
  BOOST_CHECK_EQUAL(ctx.InputLayout().Count(1), 2u);
  // Wrong number of IR outputs.
  BOOST_CHECK_THROW(ctx.SetOutputs({d}, InstanceLayout({1})), std::invalid_argument);
  // A required output with two instances.
  BOOST_CHECK_THROW(ctx.SetOutputs({d, d, d}, InstanceLayout({2, 1})), std::invalid_argument);
  // A required output with none.
  BOOST_CHECK_THROW(ctx.SetOutputs({d}, InstanceLayout({0, 1})), std::invalid_argument);
  // Layout total and outputs disagree.
  BOOST_CHECK_THROW(ctx.SetOutputs({d, d}, InstanceLayout({1, 3})), std::invalid_argument);
  BOOST_CHECK(!ctx.HasOutputs());
  // A dynamic output may have any count, including 0.
  ctx.SetOutputs({d}, InstanceLayout({1, 0}));
  BOOST_CHECK(ctx.HasOutputs());
  ctx.SetOutputs({d, d, d, d}, InstanceLayout({1, 3}));
  BOOST_CHECK_EQUAL(ctx.Outputs().size(), 4u);
  BOOST_CHECK_EQUAL(ctx.OutputLayout().Start(1), 1u);
}

BOOST_AUTO_TEST_CASE(eager_context_outputs) {
  auto schema = std::make_shared<OpSchema>();
  schema->op_type = "Ctx";
  schema->inputs = {{"x", IrInputKind::kRequired}, {"z", IrInputKind::kRequired}};
  schema->outputs = {{"a", IrOutputKind::kRequired}, {"b", IrOutputKind::kRequired}};
  RuntimeAttrs attrs;
  Tensor x = Tensor::Allocate(TensorDesc(Shape{4}, DT_FLOAT));
  Tensor z = Tensor::Allocate(TensorDesc(Shape{2}, DT_INT32));
  int stream_token = 0;
  EagerOpExecutionContext ctx(*schema, {&x, &z}, InstanceLayout({1, 1}), attrs, InstanceLayout({1, 1}), &stream_token);
  BOOST_CHECK_EQUAL(ctx.GetInputNum(), 2u);
  BOOST_CHECK_EQUAL(ctx.GetOutputNum(), 2u);
  BOOST_CHECK_EQUAL(ctx.GetInputTensor(0), &x);
  BOOST_CHECK(ctx.GetInputTensor(2) == nullptr);
  BOOST_CHECK(ctx.GetOutputTensor(0) == nullptr);  // not allocated yet
  BOOST_CHECK(ctx.GetOutputTensor(5) == nullptr);
  BOOST_CHECK_EQUAL(ctx.GetStream(), static_cast<void*>(&stream_token));

  // Bad indices.
  BOOST_CHECK_THROW(ctx.MallocOutputTensor(2, StorageShape(Shape{1}), DT_FLOAT), std::out_of_range);
  // GE's methods return null and leave the reason in the error slot.
  BOOST_CHECK(ctx.MallocOutputTensor(2, StorageShape(Shape{1}), StorageFormat(), DT_FLOAT) == nullptr);
  BOOST_CHECK_MESSAGE(Contains(ctx.TakeError().message(), "output index 2 out of range"), "MallocOutputTensor reason");
  BOOST_CHECK(ctx.MakeOutputRefInput(2, 0) == nullptr);
  BOOST_CHECK_MESSAGE(Contains(ctx.TakeError().message(), "MakeOutputRefInput(2, 0): output index 2"), "ref output reason");
  BOOST_CHECK(ctx.MakeOutputRefInput(0, 2) == nullptr);
  BOOST_CHECK_MESSAGE(Contains(ctx.TakeError().message(), "input index 2 out of range"), "ref input reason");
  BOOST_CHECK(!ctx.HasError());  // TakeError clears the slot
  // Bad shapes / dtypes.
  BOOST_CHECK_THROW(ctx.MallocOutputTensor(0, StorageShape(Shape{-1}), DT_FLOAT), std::invalid_argument);
  BOOST_CHECK_THROW(ctx.MallocOutputTensor(0, StorageShape(Shape{2}), DT_STRING), std::invalid_argument);
  BOOST_CHECK(ctx.GetOutputTensor(0) == nullptr);  // failed calls leave the slot empty

  Tensor* a = ctx.MallocOutputTensor(0, StorageShape(Shape{3}), DT_INT64);
  BOOST_REQUIRE(a != nullptr);
  BOOST_CHECK_EQUAL(ctx.GetOutputTensor(0), a);
  BOOST_CHECK_EQUAL(a->GetSize(), 24u);
  BOOST_CHECK_EQUAL(a->Data<int64_t>()[2], 0);  // zero-filled
  // Double allocation of the same output, either way.
  BOOST_CHECK_THROW(ctx.MallocOutputTensor(0, StorageShape(Shape{3}), DT_INT64), std::logic_error);
  BOOST_CHECK(ctx.MakeOutputRefInput(0, 0) == nullptr);
  BOOST_CHECK(Contains(ctx.TakeError().message(), "already allocated"));

  // MakeOutputRefInput shares the input's memory and metadata.
  x.Data<float>()[1] = 5.0f;
  Tensor* b = ctx.MakeOutputRefInput(1, 0);
  BOOST_REQUIRE(b != nullptr);
  BOOST_CHECK_EQUAL(b->GetAddr(), x.GetAddr());
  BOOST_CHECK(b->Desc() == x.Desc());
  BOOST_CHECK_EQUAL(b->Data<float>()[1], 5.0f);
  b->Data<float>()[2] = 9.0f;
  BOOST_CHECK_EQUAL(x.Data<float>()[2], 9.0f);
  BOOST_CHECK_THROW(ctx.MallocOutputTensor(1, StorageShape(Shape{1}), DT_FLOAT), std::logic_error);

  // Workspace: 0 is refused; others are aligned, zeroed and distinct.
  BOOST_CHECK(ctx.MallocWorkSpace(0) == nullptr);
  BOOST_CHECK(Contains(ctx.TakeError().message(), "positive"));
  void* w1 = ctx.MallocWorkSpace(100);
  void* w2 = ctx.MallocWorkSpace(1);
  BOOST_REQUIRE(w1 != nullptr);
  BOOST_REQUIRE(w2 != nullptr);
  BOOST_CHECK(w1 != w2);
  BOOST_CHECK_EQUAL(reinterpret_cast<uintptr_t>(w1) % 64, 0u);
  BOOST_CHECK_EQUAL(reinterpret_cast<uintptr_t>(w2) % 64, 0u);
  bool zero = true;
  for (int i = 0; i < 100; ++i) zero = zero && static_cast<unsigned char*>(w1)[i] == 0;
  BOOST_CHECK(zero);

  auto outs = ctx.TakeOutputs();
  BOOST_REQUIRE_EQUAL(outs.size(), 2u);
  BOOST_REQUIRE(outs[0] && outs[1]);
  BOOST_CHECK_EQUAL(outs[0]->GetDataType(), DT_INT64);
  BOOST_CHECK_EQUAL(outs[1]->GetAddr(), x.GetAddr());
  BOOST_CHECK_EQUAL(outs[1]->Owner().get(), x.Owner().get());  // shared ownership, not a copy
  BOOST_CHECK_EQUAL(ctx.GetOutputNum(), 0u);
}

BOOST_AUTO_TEST_SUITE_END()

// Signatures show an attribute's default as its value, in every kind.
BOOST_AUTO_TEST_CASE(attr_value_text_of_every_kind) {
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(int64_t{-3})), "-3");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(0.1f)), "0.1");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(1.0f)), "1.0");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(1e20f)), "1e+20");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(true)), "true");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(std::string("a\"b\\c\n"))), "\"a\\\"b\\\\c\\u000a\"");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(DT_FLOAT16)), "float16");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(DT_UNDEFINED)), "undefined");
  auto t = std::make_shared<const Tensor>(Tensor::Allocate(TensorDesc(Shape({2, 3}), DT_FLOAT)));
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(TensorAttr(t))), "tensor " + t->Desc().ToString());
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(std::vector<int64_t>{1, 2})), "[1, 2]");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(std::vector<float>{})), "[]");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(std::vector<bool>{true, false})), "[true, false]");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(std::vector<std::string>{"x", ""})), "[\"x\", \"\"]");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(std::vector<DataType>{DT_INT32})), "[int32]");
  BOOST_CHECK_EQUAL(AttrValueText(AttrValue(std::vector<std::vector<int64_t>>{{1}, {2, 3}})), "[[1], [2, 3]]");

  OpSchema s;
  s.op_type = "Scaled";
  s.inputs = {{"x", IrInputKind::kRequired}};
  s.outputs = {{"y", IrOutputKind::kRequired}};
  s.attrs = {{"alpha", AttrType::VT_FLOAT, AttrValue(1.0f)}, {"mode", AttrType::VT_STRING, std::nullopt}};
  BOOST_CHECK_EQUAL(s.ToString(), "Scaled(x) -> (y) {alpha: VT_FLOAT = 1.0, mode: VT_STRING}");
}
