// C++ operator prototypes: GE's REG_OP DSL (graph/operator_reg.h) recorded as
// OpSchema with dtype constraints, TensorType's sets (graph/types.h) and
// IMPL_OP (register/op_impl_registry.h) registering infer functions.
#define BOOST_TEST_MODULE op_proto
#include <boost/test/unit_test.hpp>

#include "test_util.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ge/op/library_registrations.h"
#include "ge/op/prototype_recorder.h"
#include "graph/operator_reg.h"
#include "graph/types.h"
#include "register/op_impl_registry.h"

// ---- prototypes declared as GE's headers declare them (several in this TU) ----

namespace ge {

REG_OP(ProtoKinds)
    .INPUT(x, TensorType({DT_FLOAT, DT_FLOAT16}))
    .OPTIONAL_INPUT(bias, "T")
    .DYNAMIC_INPUT(xs, TensorType::IndexNumberType())
    .OUTPUT(y, "T")
    .DYNAMIC_OUTPUT(ys, TensorType(DT_INT64))
    .DATATYPE(T, TensorType({DT_FLOAT, DT_BF16}))
    .INFER_SHAPE_AND_TYPE()
    .OP_END_FACTORY_REG(ProtoKinds);

REG_OP(ProtoAttrs)
    .INPUT(x, TensorType::ALL())
    .OUTPUT(y, TensorType::ALL())
    .ATTR(i, Int, -3)
    .ATTR(f, Float, 0.5)
    .ATTR(b, Bool, true)
    .ATTR(s, String, "mode")
    .ATTR(t, Type, DT_INT32)
    .ATTR(li, ListInt, {1, 2, 3})
    .ATTR(lf, ListFloat, {1.5, -2.0})
    .ATTR(lb, ListBool, {true, false})
    .ATTR(ls, ListString, {"a", "bc"})
    .ATTR(lt, ListType, {DT_FLOAT, DT_INT8})
    .ATTR(lli, ListListInt, {{1, 2}, {3}})
    .ATTR(empty, ListInt, {})
    .REQUIRED_ATTR(ri, Int)
    .REQUIRED_ATTR(rlf, ListFloat)
    .REQUIRED_ATTR(rs, String)
    .OP_END_FACTORY_REG(ProtoAttrs);

REG_OP(ProtoUnsupported)
    .INPUT(x, TensorType::ALL())
    .OUTPUT(y, TensorType::ALL())
    .ATTR(cfg, NamedAttrs, NamedAttrs())
    .ATTR(value, Tensor, Tensor())
    .REQUIRED_ATTR(blob, Bytes)
    .OP_END_FACTORY_REG(ProtoUnsupported);

REG_OP(ProtoUnbound)
    .INPUT(x, "T")
    .OUTPUT(y, "U")
    .DATATYPE(T, TensorType({DT_FLOAT}))
    .OP_END_FACTORY_REG(ProtoUnbound);

REG_OP(ProtoBadType)
    .INPUT(x, TensorType({DT_FLOAT, DT_NOT_A_TYPE}))
    .OUTPUT(y, TensorType::RealNumberType())
    .OP_END_FACTORY_REG(ProtoBadType);

REG_OP(ProtoSymbols)
    .DYNAMIC_INPUT(xs, "L")
    .INPUT(a, "T1")
    .INPUT(b, "T2")
    .OUTPUT(y, "P")
    .DATATYPE(L, ListTensorType(TensorType({DT_INT32, DT_FLOAT})))
    .DATATYPE(T1, TensorType({DT_INT8}))
    .DATATYPE(T2, TensorType({DT_FLOAT16, DT_FLOAT}))
    .DATATYPE(P, Promote({"T1", "T2"}))
    .OP_END_FACTORY_REG(ProtoSymbols);

// Sets and defaults naming only dtypes GE has but our tensors cannot hold.
REG_OP(ProtoUnholdable)
    .INPUT(x, "T")
    .INPUT(q, TensorType({DT_QINT8, DT_FLOAT}))  // one holdable member: fine
    .OUTPUT(y, TensorType({DT_RESOURCE}))
    .ATTR(t, Type, DT_QINT8)
    .ATTR(lt, ListType, {DT_FLOAT, DT_RESOURCE})
    .DATATYPE(T, TensorType({DT_QINT8, DT_QUINT8}))
    .OP_END_FACTORY_REG(ProtoUnholdable);

// An attribute cannot share an input's name: execute(self, x, *, x) is impossible.
REG_OP(ProtoNameClash)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(x, TensorType({DT_FLOAT}))  // an output named as an input is GE's in-place (ref) form: fine
    .ATTR(x, Int, 1)
    .OP_END_FACTORY_REG(ProtoNameClash);

REG_OP(ProtoSubgraph)
    .INPUT(x, TensorType::ALL())
    .OUTPUT(y, TensorType::ALL())
    .GRAPH(body)
    .OP_END_FACTORY_REG(ProtoSubgraph);

}  // namespace ge

namespace {

ge::graphStatus ShapeFn(gert::InferShapeContext*) { return ge::GRAPH_SUCCESS; }
ge::graphStatus TypeFn(gert::InferDataTypeContext*) { return ge::GRAPH_SUCCESS; }

IMPL_OP(ProtoKinds).InferShape(ShapeFn).InferDataType(TypeFn).InputsDataDependency({1}).PrivateAttr("p", int64_t{1});
IMPL_OP(ProtoAttrs).InferShape(ShapeFn);
IMPL_OP(ProtoNothing);  // nothing chained: nothing to register

}  // namespace

using namespace ge;

namespace {

using ge_test::Contains;

// Everything this executable registered, taken once.
const LibraryRegistrations& Registered() {
  static const LibraryRegistrations regs = TakeRegistrations();
  return regs;
}

const RegisteredPrototype& Proto(const std::string& op_type) {
  const auto& ps = Registered().prototypes;
  auto it = std::find_if(ps.begin(), ps.end(), [&](const RegisteredPrototype& p) { return p.op_type == op_type; });
  BOOST_REQUIRE_MESSAGE(it != ps.end(), "prototype " << op_type << " was not registered");
  return *it;
}

const OpSchema& Schema(const std::string& op_type) {
  const RegisteredPrototype& p = Proto(op_type);
  BOOST_REQUIRE_MESSAGE(p.schema != nullptr, op_type << ": " << p.error);
  BOOST_CHECK(p.error.empty());
  return *p.schema;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reg_op)

BOOST_AUTO_TEST_CASE(each_prototype_registers_exactly_once) {
  std::vector<std::string> names;
  for (const auto& p : Registered().prototypes) names.push_back(p.op_type);
  for (const char* op : {"ProtoKinds", "ProtoAttrs", "ProtoUnsupported", "ProtoUnbound", "ProtoBadType", "ProtoSymbols",
                         "ProtoSubgraph"}) {
    BOOST_CHECK_MESSAGE(std::count(names.begin(), names.end(), op) == 1, op << " registered " << std::count(names.begin(), names.end(), op) << " times");
  }
}

BOOST_AUTO_TEST_CASE(input_and_output_kinds_with_their_types) {
  const OpSchema& s = Schema("ProtoKinds");
  BOOST_CHECK_EQUAL(s.op_type, "ProtoKinds");
  BOOST_REQUIRE_EQUAL(s.inputs.size(), 3u);
  BOOST_CHECK_EQUAL(s.inputs[0].name, "x");
  BOOST_CHECK(s.inputs[0].kind == IrInputKind::kRequired);
  BOOST_CHECK((s.inputs[0].dtypes.allowed == std::vector<DataType>{DT_FLOAT, DT_FLOAT16}));
  BOOST_CHECK(s.inputs[0].dtypes.symbol.empty());
  BOOST_CHECK(!s.inputs[0].dtypes.uniform);
  BOOST_CHECK_EQUAL(s.inputs[1].name, "bias");
  BOOST_CHECK(s.inputs[1].kind == IrInputKind::kOptional);
  // DATATYPE after the input that uses the symbol still binds it.
  BOOST_CHECK((s.inputs[1].dtypes.allowed == std::vector<DataType>{DT_FLOAT, DT_BF16}));
  BOOST_CHECK_EQUAL(s.inputs[1].dtypes.symbol, "T");
  BOOST_CHECK(s.inputs[1].dtypes.uniform);
  BOOST_CHECK_EQUAL(s.inputs[2].name, "xs");
  BOOST_CHECK(s.inputs[2].kind == IrInputKind::kDynamic);
  BOOST_CHECK((s.inputs[2].dtypes.allowed == std::vector<DataType>{DT_INT32, DT_INT64}));
  BOOST_REQUIRE_EQUAL(s.outputs.size(), 2u);
  BOOST_CHECK_EQUAL(s.outputs[0].name, "y");
  BOOST_CHECK(s.outputs[0].kind == IrOutputKind::kRequired);
  BOOST_CHECK_EQUAL(s.outputs[0].dtypes.symbol, "T");
  BOOST_CHECK((s.outputs[0].dtypes.allowed == std::vector<DataType>{DT_FLOAT, DT_BF16}));
  BOOST_CHECK_EQUAL(s.outputs[1].name, "ys");
  BOOST_CHECK(s.outputs[1].kind == IrOutputKind::kDynamic);
  BOOST_CHECK((s.outputs[1].dtypes.allowed == std::vector<DataType>{DT_INT64}));
  BOOST_CHECK(s.attrs.empty());
  BOOST_CHECK_EQUAL(s.ToString(),
                    "ProtoKinds(x: float32|float16, bias?: T, xs*: int32|int64) -> (y: T, ys*: int64) [T: float32|bfloat16]");
}

BOOST_AUTO_TEST_CASE(attribute_kinds_and_defaults) {
  const OpSchema& s = Schema("ProtoAttrs");
  const std::vector<std::pair<std::string, AttrType>> want = {
      {"i", AttrType::VT_INT},          {"f", AttrType::VT_FLOAT},          {"b", AttrType::VT_BOOL},
      {"s", AttrType::VT_STRING},       {"t", AttrType::VT_DATA_TYPE},      {"li", AttrType::VT_LIST_INT},
      {"lf", AttrType::VT_LIST_FLOAT},  {"lb", AttrType::VT_LIST_BOOL},     {"ls", AttrType::VT_LIST_STRING},
      {"lt", AttrType::VT_LIST_DATA_TYPE}, {"lli", AttrType::VT_LIST_LIST_INT}, {"empty", AttrType::VT_LIST_INT},
      {"ri", AttrType::VT_INT},         {"rlf", AttrType::VT_LIST_FLOAT},   {"rs", AttrType::VT_STRING}};
  BOOST_REQUIRE_EQUAL(s.attrs.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    BOOST_CHECK_EQUAL(s.attrs[k].name, want[k].first);
    BOOST_CHECK_MESSAGE(s.attrs[k].type == want[k].second, s.attrs[k].name << ": " << AttrTypeName(s.attrs[k].type));
  }
  auto def = [&](std::size_t k) -> const AttrValue& {
    BOOST_REQUIRE_MESSAGE(s.attrs[k].default_value.has_value(), s.attrs[k].name << " has no default");
    return *s.attrs[k].default_value;
  };
  BOOST_CHECK_EQUAL(std::get<int64_t>(def(0)), -3);
  BOOST_CHECK_EQUAL(std::get<float>(def(1)), 0.5f);
  BOOST_CHECK_EQUAL(std::get<bool>(def(2)), true);
  BOOST_CHECK_EQUAL(std::get<std::string>(def(3)), "mode");
  BOOST_CHECK_EQUAL(std::get<DataType>(def(4)), DT_INT32);
  BOOST_CHECK((std::get<std::vector<int64_t>>(def(5)) == std::vector<int64_t>{1, 2, 3}));
  BOOST_CHECK((std::get<std::vector<float>>(def(6)) == std::vector<float>{1.5f, -2.0f}));
  BOOST_CHECK((std::get<std::vector<bool>>(def(7)) == std::vector<bool>{true, false}));
  BOOST_CHECK((std::get<std::vector<std::string>>(def(8)) == std::vector<std::string>{"a", "bc"}));
  BOOST_CHECK((std::get<std::vector<DataType>>(def(9)) == std::vector<DataType>{DT_FLOAT, DT_INT8}));
  BOOST_CHECK((std::get<std::vector<std::vector<int64_t>>>(def(10)) == std::vector<std::vector<int64_t>>{{1, 2}, {3}}));
  BOOST_CHECK(std::get<std::vector<int64_t>>(def(11)).empty());
  // REQUIRED_ATTR: no default.
  for (std::size_t k = 12; k < 15; ++k) BOOST_CHECK_MESSAGE(!s.attrs[k].default_value, s.attrs[k].name);
  // TensorType::ALL() is GE's 23-member set.
  BOOST_CHECK_EQUAL(s.inputs[0].dtypes.allowed.size(), 23u);
}

BOOST_AUTO_TEST_CASE(unsupported_attribute_kinds_compile_but_name_op_attribute_and_kind) {
  const RegisteredPrototype& p = Proto("ProtoUnsupported");
  BOOST_CHECK(p.schema == nullptr);
  BOOST_CHECK_MESSAGE(Contains(p.error, "REG_OP(ProtoUnsupported)"), p.error);
  BOOST_CHECK_MESSAGE(Contains(p.error, "test_op_proto.cc"), p.error);
  BOOST_CHECK_MESSAGE(Contains(p.error, "attribute 'cfg' has kind NamedAttrs"), p.error);
  BOOST_CHECK_MESSAGE(Contains(p.error, "attribute 'value' has kind Tensor"), p.error);
  BOOST_CHECK_MESSAGE(Contains(p.error, "required attribute 'blob' has kind Bytes"), p.error);
}

BOOST_AUTO_TEST_CASE(subgraphs_are_refused_by_name) {
  const RegisteredPrototype& p = Proto("ProtoSubgraph");
  BOOST_CHECK(p.schema == nullptr);
  BOOST_CHECK_MESSAGE(Contains(p.error, "REG_OP(ProtoSubgraph)") && Contains(p.error, "subgraph 'body' (GRAPH)"), p.error);
}

BOOST_AUTO_TEST_CASE(an_unbound_symbol_is_an_error_naming_the_output) {
  const RegisteredPrototype& p = Proto("ProtoUnbound");
  BOOST_CHECK(p.schema == nullptr);
  BOOST_CHECK_MESSAGE(Contains(p.error, "output 'y' uses type symbol 'U', which no DATATYPE binds"), p.error);
  BOOST_CHECK_MESSAGE(!Contains(p.error, "input 'x'"), p.error);
}

BOOST_AUTO_TEST_CASE(an_unknown_type_name_is_an_error_naming_input_and_element) {
  // Like GE, the INPUT type argument is source text, so a misspelt DT_ name
  // compiles; it is reported when the prototype registers.
  const RegisteredPrototype& p = Proto("ProtoBadType");
  BOOST_CHECK(p.schema == nullptr);
  BOOST_CHECK_MESSAGE(Contains(p.error, "input 'x': unknown element 'DT_NOT_A_TYPE'"), p.error);
}

BOOST_AUTO_TEST_CASE(sets_and_defaults_of_unholdable_dtypes_are_errors) {
  const RegisteredPrototype& p = Proto("ProtoUnholdable");
  BOOST_CHECK(p.schema == nullptr);
  BOOST_CHECK_MESSAGE(
      Contains(p.error, "input 'x': no dtype of its set (DT_QINT8|DT_QUINT8) can be held by a tensor of this host"),
      p.error);
  BOOST_CHECK_MESSAGE(Contains(p.error, "output 'y': no dtype of its set (DT_RESOURCE)"), p.error);
  BOOST_CHECK_MESSAGE(!Contains(p.error, "input 'q'"), p.error);
  BOOST_CHECK_MESSAGE(Contains(p.error, "attribute 't': its default DT_QINT8 is a dtype this host does not support"),
                      p.error);
  BOOST_CHECK_MESSAGE(Contains(p.error, "attribute 'lt': its default DT_RESOURCE"), p.error);
}

BOOST_AUTO_TEST_CASE(an_attribute_named_like_an_input_is_an_error) {
  const RegisteredPrototype& p = Proto("ProtoNameClash");
  BOOST_CHECK(p.schema == nullptr);
  BOOST_CHECK_MESSAGE(Contains(p.error, "REG_OP(ProtoNameClash)"), p.error);
  BOOST_CHECK_MESSAGE(Contains(p.error, "attribute 'x' has the name of an input"), p.error);
}

BOOST_AUTO_TEST_CASE(list_and_promote_symbols) {
  const OpSchema& s = Schema("ProtoSymbols");
  BOOST_CHECK_EQUAL(s.inputs[0].dtypes.symbol, "L");
  BOOST_CHECK(!s.inputs[0].dtypes.uniform);  // ListTensorType: each instance on its own
  BOOST_CHECK((s.inputs[0].dtypes.allowed == std::vector<DataType>{DT_FLOAT, DT_INT32}));
  BOOST_CHECK(s.inputs[1].dtypes.uniform);
  BOOST_CHECK_EQUAL(s.outputs[0].dtypes.symbol, "P");
  BOOST_CHECK((s.outputs[0].dtypes.allowed == std::vector<DataType>{DT_FLOAT, DT_FLOAT16, DT_INT8}));
}

BOOST_AUTO_TEST_CASE(generated_class_offers_the_name_helpers) {
  BOOST_CHECK_EQUAL(op::ProtoKinds::name_in_x(), "x");
  BOOST_CHECK_EQUAL(op::ProtoKinds::name_out_y(), "y");
  BOOST_CHECK_EQUAL(op::ProtoAttrs::name_attr_lli(), "lli");
  AscendString name;
  op::ProtoKinds::name_in_bias(name);
  BOOST_CHECK_EQUAL(std::string(name.GetString()), "bias");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(impl_op)

BOOST_AUTO_TEST_CASE(registers_the_chained_functions) {
  std::map<std::string, RegisteredInferFuncs> by_op;
  for (const auto& f : Registered().infer_funcs) {
    BOOST_CHECK_MESSAGE(!by_op.count(f.op_type), f.op_type << " registered twice");
    by_op[f.op_type] = f;
  }
  BOOST_REQUIRE(by_op.count("ProtoKinds"));
  BOOST_CHECK(by_op["ProtoKinds"].infer_shape == &ShapeFn);
  BOOST_CHECK(by_op["ProtoKinds"].infer_datatype == &TypeFn);
  BOOST_REQUIRE(by_op.count("ProtoAttrs"));
  BOOST_CHECK(by_op["ProtoAttrs"].infer_shape == &ShapeFn);
  BOOST_CHECK(by_op["ProtoAttrs"].infer_datatype == nullptr);
  BOOST_CHECK(!by_op.count("ProtoNothing"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tensor_type)

BOOST_AUTO_TEST_CASE(sets_are_sorted_without_repeats_and_keep_ge_numbers) {
  TensorType t({DT_INT64, DT_FLOAT, DT_INT64});
  BOOST_CHECK((t.DataTypes() == std::vector<DataType>{DT_FLOAT, DT_INT64}));
  BOOST_CHECK((TensorType(DT_BOOL).DataTypes() == std::vector<DataType>{DT_BOOL}));
  BOOST_CHECK((TensorType::IndexNumberType().DataTypes() == std::vector<DataType>{DT_INT32, DT_INT64}));
  BOOST_CHECK((TensorType::FloatingDataType().DataTypes() == std::vector<DataType>{DT_FLOAT, DT_FLOAT16, DT_DOUBLE}));
  BOOST_CHECK_EQUAL(static_cast<int>(DT_QINT8), 18);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_RESOURCE), 23);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_COMPLEX32), 33);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_HIFLOAT4), 42);
  // Declarable in a prototype, never a tensor's type.
  BOOST_CHECK(!IsKnownDataType(DT_QINT8));
  BOOST_CHECK(!IsKnownDataType(DT_COMPLEX32));
  BOOST_CHECK_EQUAL(DataTypeGeName(DT_QINT8), "DT_QINT8");
  BOOST_CHECK_EQUAL(DataTypeGeName(DT_INT4), "DT_INT4");
  BOOST_CHECK_EQUAL(DataTypeSetString({DT_FLOAT, DT_QINT8}), "float32|DT_QINT8");
}

BOOST_AUTO_TEST_CASE(type_text_forms_read_by_the_recorder) {
  PrototypeRecorder r("Forms", "forms.h");
  r.Input("a", IrInputKind::kRequired, "TensorType::REALNUMBERTYPE()");  // any case, as GE's headers write it
  r.Input("b", IrInputKind::kRequired, "TensorType({ IndexNumberType(), DT_BOOL })");
  r.Input("c", IrInputKind::kRequired, "ge::TensorType(ge::DT_UINT8)");
  r.Output("y", IrOutputKind::kRequired, "\"T\"");
  r.BindSymbol("T", TensorType({DT_FLOAT}));
  RegisteredPrototype p = r.Finish();
  BOOST_REQUIRE_MESSAGE(p.schema, p.error);
  BOOST_CHECK(p.schema->inputs[0].dtypes.allowed == TensorType::RealNumberType().DataTypes());
  BOOST_CHECK((p.schema->inputs[1].dtypes.allowed == std::vector<DataType>{DT_INT32, DT_INT64, DT_BOOL}));
  BOOST_CHECK((p.schema->inputs[2].dtypes.allowed == std::vector<DataType>{DT_UINT8}));
  BOOST_CHECK_EQUAL(p.schema->outputs[0].dtypes.symbol, "T");

  PrototypeRecorder bad("Bad", "bad.h");
  bad.Input("z", IrInputKind::kRequired, "std::vector<int>()");
  bad.BindSymbol("T", TensorType({DT_FLOAT}));
  bad.BindSymbol("T", TensorType({DT_INT8}));
  RegisteredPrototype q = bad.Finish();
  BOOST_CHECK(q.schema == nullptr);
  BOOST_CHECK_MESSAGE(Contains(q.error, "REG_OP(Bad) in bad.h") && Contains(q.error, "input 'z': cannot read the type"), q.error);
  BOOST_CHECK_MESSAGE(Contains(q.error, "DATATYPE(T) is declared twice"), q.error);
}

BOOST_AUTO_TEST_SUITE_END()
