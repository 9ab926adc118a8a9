// graph/operator_reg.h: GE's REG_OP prototype DSL, recorded as this project's canonical IR (OpSchema).
//
// A GE operator prototype header compiles unchanged against this file:
//
//   namespace ge {
//   REG_OP(AddCustom)
//       .INPUT(x1, "T").INPUT(x2, "T").OUTPUT(y, "T")
//       .ATTR(alpha, Float, 1.0)
//       .DATATYPE(T, TensorType({DT_FLOAT, DT_FLOAT16}))
//       .OP_END_FACTORY_REG(AddCustom);
//   }
//
// Macro names, argument order and the attribute kinds (GE's spellings: Int,
// Float, Bool, String, AscendString, Type, ListInt, ListFloat, ListBool,
// ListString, ListAscendString, ListType, ListListInt) are GE's. What the
// macros expand to is ours:
// - REG_OP(Name) opens class ge::op::Name, whose constructor records every
//   chain member, in declaration order, into a ge::PrototypeRecorder
//   (ge/op/prototype_recorder.h).
// - OP_END_FACTORY_REG(Name) closes it and leaves one static registrar per
//   shared object (an inline member of a hidden-visibility class: a header
//   included by several translation units registers once per library, and
//   two libraries never share it). During the library's static
//   initialization the registrar calls ge::AddRegisteredPrototype
//   (ge/op/library_registrations.h) with the finished OpSchema, or with an
//   error naming the op, the header file and the field at fault.
// - The type argument of INPUT/OPTIONAL_INPUT/DYNAMIC_INPUT/OUTPUT/
//   DYNAMIC_OUTPUT is, as in GE, not compiled: its text is recorded and read
//   when the prototype is registered. It is a symbol ("T") bound by
//   DATATYPE(T, TensorType(...) | ListTensorType(...) | Promote({...})) (the
//   DATATYPE argument is compiled), or a TensorType written directly
//   (TensorType({DT_FLOAT}), TensorType::ALL(), ...; see PrototypeRecorder::Input).
//   The engine checks node dtypes against the sets (share/docs/op-prototypes.md).
// - Attribute kinds GE has and this project does not (Tensor, NamedAttrs,
//   ListTensor, Bytes, ListNamedAttrs), and subgraphs (GRAPH, DYNAMIC_GRAPH),
//   compile (their default is not evaluated) but make the prototype unusable
//   with an error naming the op, the attribute and its kind.
// - INFER_SHAPE_AND_TYPE() is accepted and does nothing (infer functions come
//   from IMPL_OP, register/op_impl_registry.h).
// - ge::op::Name offers GE's static name helpers (name_in_x, name_out_x,
//   name_attr_x); building graphs with it (set_input_x, set_attr_x) is not
//   provided.
// Registration happens before main() / during dlopen; nothing here throws
// into the caller or aborts (see PrototypeRegistrar).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ge/op/library_registrations.h"
#include "ge/op/prototype_recorder.h"
#include "graph/ascend_string.h"
#include "graph/error_codes.h"
#include "graph/types.h"

#if defined(__GNUC__) || defined(__clang__)
#define GE_PROTO_LIBRARY_LOCAL __attribute__((visibility("hidden")))
#else
#define GE_PROTO_LIBRARY_LOCAL
#endif

namespace ge {

// The object a REG_OP chain is made of: each `.MEMBER(...)` expands to
// `.N();` ending one recording step and this object beginning the next.
class OpProtoChain {
 public:
  OpProtoChain& N() noexcept { return *this; }
  // GE's chain member for an op whose shape/type inference the graph does;
  // here inference comes from IMPL_OP, so it changes nothing.
  OpProtoChain& INFER_SHAPE_AND_TYPE() noexcept { return *this; }
};

// The C++ value of each attribute kind this project supports (GE's Op<Kind>
// types), used to evaluate ATTR defaults.
namespace proto_attr {
using Int = int64_t;
using Float = float;
using Bool = bool;
using Type = DataType;
using ListInt = std::vector<int64_t>;
using ListFloat = std::vector<float>;
using ListBool = std::vector<bool>;
using ListString = std::vector<std::string>;
using ListType = std::vector<DataType>;
using ListListInt = std::vector<std::vector<int64_t>>;
inline std::string StringOf() { return {}; }
inline std::string StringOf(const char* s) { return s != nullptr ? std::string(s) : std::string(); }
inline std::string StringOf(const std::string& s) { return s; }
inline std::string StringOf(const AscendString& s) { return s.ToStdString(); }
}  // namespace proto_attr

}  // namespace ge

// ATTR defaults by kind: an AttrValue, or the marker of an unsupported kind
// (whose default expression is dropped, so its C++ type need not exist).
#define GE_PROTO_DEFAULT_Int(...) ::ge::AttrValue(::ge::proto_attr::Int(__VA_ARGS__))
#define GE_PROTO_DEFAULT_Float(...) ::ge::AttrValue(::ge::proto_attr::Float(__VA_ARGS__))
#define GE_PROTO_DEFAULT_Bool(...) ::ge::AttrValue(::ge::proto_attr::Bool(__VA_ARGS__))
#define GE_PROTO_DEFAULT_String(...) ::ge::AttrValue(::ge::proto_attr::StringOf(__VA_ARGS__))
#define GE_PROTO_DEFAULT_AscendString(...) ::ge::AttrValue(::ge::proto_attr::StringOf(__VA_ARGS__))
#define GE_PROTO_DEFAULT_Type(...) ::ge::AttrValue(::ge::proto_attr::Type(__VA_ARGS__))
#define GE_PROTO_DEFAULT_ListInt(...) ::ge::AttrValue(::ge::proto_attr::ListInt(__VA_ARGS__))
#define GE_PROTO_DEFAULT_ListFloat(...) ::ge::AttrValue(::ge::proto_attr::ListFloat(__VA_ARGS__))
#define GE_PROTO_DEFAULT_ListBool(...) ::ge::AttrValue(::ge::proto_attr::ListBool(__VA_ARGS__))
#define GE_PROTO_DEFAULT_ListString(...) ::ge::AttrValue(::ge::proto_attr::ListString(__VA_ARGS__))
#define GE_PROTO_DEFAULT_ListAscendString(...) ::ge::AttrValue(::ge::proto_attr::ListString(__VA_ARGS__))
#define GE_PROTO_DEFAULT_ListAcendString(...) ::ge::AttrValue(::ge::proto_attr::ListString(__VA_ARGS__))
#define GE_PROTO_DEFAULT_ListType(...) ::ge::AttrValue(::ge::proto_attr::ListType(__VA_ARGS__))
#define GE_PROTO_DEFAULT_ListListInt(...) ::ge::AttrValue(::ge::proto_attr::ListListInt(__VA_ARGS__))
#define GE_PROTO_DEFAULT_Tensor(...) ::ge::UnsupportedAttrKind{"Tensor"}
#define GE_PROTO_DEFAULT_NamedAttrs(...) ::ge::UnsupportedAttrKind{"NamedAttrs"}
#define GE_PROTO_DEFAULT_ListTensor(...) ::ge::UnsupportedAttrKind{"ListTensor"}
#define GE_PROTO_DEFAULT_Bytes(...) ::ge::UnsupportedAttrKind{"Bytes"}
#define GE_PROTO_DEFAULT_ListNamedAttrs(...) ::ge::UnsupportedAttrKind{"ListNamedAttrs"}

// REQUIRED_ATTR kinds: the IR kind, or the marker of an unsupported kind.
#define GE_PROTO_KIND_Int ::ge::AttrType::VT_INT
#define GE_PROTO_KIND_Float ::ge::AttrType::VT_FLOAT
#define GE_PROTO_KIND_Bool ::ge::AttrType::VT_BOOL
#define GE_PROTO_KIND_String ::ge::AttrType::VT_STRING
#define GE_PROTO_KIND_AscendString ::ge::AttrType::VT_STRING
#define GE_PROTO_KIND_Type ::ge::AttrType::VT_DATA_TYPE
#define GE_PROTO_KIND_ListInt ::ge::AttrType::VT_LIST_INT
#define GE_PROTO_KIND_ListFloat ::ge::AttrType::VT_LIST_FLOAT
#define GE_PROTO_KIND_ListBool ::ge::AttrType::VT_LIST_BOOL
#define GE_PROTO_KIND_ListString ::ge::AttrType::VT_LIST_STRING
#define GE_PROTO_KIND_ListAscendString ::ge::AttrType::VT_LIST_STRING
#define GE_PROTO_KIND_ListAcendString ::ge::AttrType::VT_LIST_STRING
#define GE_PROTO_KIND_ListType ::ge::AttrType::VT_LIST_DATA_TYPE
#define GE_PROTO_KIND_ListListInt ::ge::AttrType::VT_LIST_LIST_INT
#define GE_PROTO_KIND_Tensor ::ge::UnsupportedAttrKind{"Tensor"}
#define GE_PROTO_KIND_NamedAttrs ::ge::UnsupportedAttrKind{"NamedAttrs"}
#define GE_PROTO_KIND_ListTensor ::ge::UnsupportedAttrKind{"ListTensor"}
#define GE_PROTO_KIND_Bytes ::ge::UnsupportedAttrKind{"Bytes"}
#define GE_PROTO_KIND_ListNamedAttrs ::ge::UnsupportedAttrKind{"ListNamedAttrs"}

// One recording step: ends the current step function (`N();` closes the
// chain expression, the next step is called) and opens the next one, whose
// body records `record` and starts a new chain expression.
#define GE_PROTO_STEP_(step, record, public_members) \
  N();                                               \
  step();                                            \
  }                                                  \
                                                     \
 public:                                             \
  public_members                                     \
                                                     \
 private:                                            \
  void step() {                                      \
    record;                                          \
    ::ge::OpProtoChain()

#define GE_PROTO_NAME_FN_(fn, x)                           \
  static const std::string fn() { return #x; }             \
  static void fn(::ge::AscendString& name) { name = ::ge::AscendString(#x); }

#define REG_OP(x)                              \
  namespace op {                               \
  class GE_PROTO_LIBRARY_LOCAL x {             \
    using GeProtoSelf = x;                     \
                                               \
   public:                                     \
    x() : ge_proto_(#x, __FILE__) {            \
      GeProtoBegin();                          \
    }                                          \
                                               \
   private:                                    \
    ::ge::PrototypeRecorder ge_proto_;         \
    void GeProtoBegin() {                      \
      ::ge::OpProtoChain()

#define INPUT(x, t)                                                                           \
  GE_PROTO_STEP_(GeProtoIn_##x, ge_proto_.Input(#x, ::ge::IrInputKind::kRequired, #t),        \
                 GE_PROTO_NAME_FN_(name_in_##x, x))
#define OPTIONAL_INPUT(x, t)                                                                  \
  GE_PROTO_STEP_(GeProtoOptIn_##x, ge_proto_.Input(#x, ::ge::IrInputKind::kOptional, #t),     \
                 GE_PROTO_NAME_FN_(name_in_##x, x))
#define DYNAMIC_INPUT(x, t) \
  GE_PROTO_STEP_(GeProtoDynIn_##x, ge_proto_.Input(#x, ::ge::IrInputKind::kDynamic, #t), )
#define OUTPUT(x, t)                                                                          \
  GE_PROTO_STEP_(GeProtoOut_##x, ge_proto_.Output(#x, ::ge::IrOutputKind::kRequired, #t),     \
                 GE_PROTO_NAME_FN_(name_out_##x, x))
#define DYNAMIC_OUTPUT(x, t) \
  GE_PROTO_STEP_(GeProtoDynOut_##x, ge_proto_.Output(#x, ::ge::IrOutputKind::kDynamic, #t), )
#define ATTR(x, Type, ...)                                                                  \
  GE_PROTO_STEP_(GeProtoAttr_##x, ge_proto_.Attr(#x, GE_PROTO_DEFAULT_##Type(__VA_ARGS__)), \
                 GE_PROTO_NAME_FN_(name_attr_##x, x))
#define REQUIRED_ATTR(x, Type)                                                           \
  GE_PROTO_STEP_(GeProtoReqAttr_##x, ge_proto_.RequiredAttr(#x, GE_PROTO_KIND_##Type), \
                 GE_PROTO_NAME_FN_(name_attr_##x, x))
#define DATATYPE(x, t) GE_PROTO_STEP_(GeProtoDataType_##x, ge_proto_.BindSymbol(#x, t), )
#define GRAPH(x) \
  GE_PROTO_STEP_(GeProtoGraph_##x, ge_proto_.Unsupported("subgraph '" #x "' (GRAPH)"), )
#define DYNAMIC_GRAPH(x) \
  GE_PROTO_STEP_(GeProtoDynGraph_##x, ge_proto_.Unsupported("subgraph '" #x "' (DYNAMIC_GRAPH)"), )

#define OP_END_FACTORY_REG(x)                                                                         \
  N();                                                                                                \
  }                                                                                                   \
  static_assert(std::is_same<x, GeProtoSelf>::value,                                                  \
                "OP_END_FACTORY_REG must name the operator that REG_OP opened");                      \
                                                                                                      \
 public:                                                                                              \
  /* The finished prototype (this project's hook; called once, by the registrar). */                 \
  static ::ge::RegisteredPrototype GeProtoFinish() { return GeProtoSelf().ge_proto_.Finish(); }       \
                                                                                                      \
 private:                                                                                             \
  static inline const ::ge::PrototypeRegistrar ge_proto_registrar_{#x, &GeProtoSelf::GeProtoFinish}; \
  };                                                                                                  \
  }
