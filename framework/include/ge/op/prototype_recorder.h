// ge/op/prototype_recorder.h: turns the declarations of one REG_OP chain into an OpSchema.
//
// graph/operator_reg.h expands REG_OP(Name) ... OP_END_FACTORY_REG(Name) into
// a class whose constructor calls one method below per chain member, in
// declaration order; Finish() then binds the DATATYPE symbols and yields the
// prototype (or the reason it cannot be used). Plugin code never calls this
// directly. One recorder per prototype, used by one thread; methods never
// throw except std::bad_alloc (a bad declaration becomes the prototype's
// error, naming the op, the file and the field). See share/docs/op-prototypes.md.
#pragma once

#include <string>
#include <vector>

#include "ge/op/attrs.h"
#include "ge/op/library_registrations.h"
#include "ge/op/op_schema.h"
#include "graph/types.h"

namespace ge {

// An attribute kind GE has and this project does not (NamedAttrs, Tensor,
// ListTensor, Bytes, ListNamedAttrs): recorded so the prototype still
// compiles, then reported by Finish(). `kind` is GE's spelling, a literal.
struct UnsupportedAttrKind {
  const char* kind;
};

class PrototypeRecorder {
 public:
  // `op_type` and `file` (the header holding REG_OP, __FILE__) are copied.
  PrototypeRecorder(const char* op_type, const char* file);

  // INPUT/OPTIONAL_INPUT/DYNAMIC_INPUT and OUTPUT/DYNAMIC_OUTPUT. As in GE,
  // the type argument is not compiled but passed as its source text
  // (`type_text`, the macro's #t) and read here: "\"T\"" (a DATATYPE symbol),
  // "TensorType({DT_FLOAT, DT_INT32})", "TensorType(DT_FLOAT)",
  // "TensorType::ALL()", or a list mixing DT_ names with the predefined sets
  // ("TensorType({NumberType(), DT_VARIANT})"); set names match GE's
  // TensorType statics regardless of case. Anything else is an error naming
  // the input or output and the text.
  void Input(const char* name, IrInputKind kind, const char* type_text);
  void Output(const char* name, IrOutputKind kind, const char* type_text);
  // DATATYPE(symbol, ...): binds a symbol used by inputs/outputs (before or after them).
  void BindSymbol(const char* symbol, const TensorType& types);
  void BindSymbol(const char* symbol, const ListTensorType& types);
  void BindSymbol(const char* symbol, const Promote& promote);
  // ATTR(name, Kind, default); the value's type gives the IR kind.
  void Attr(const char* name, AttrValue default_value);
  void Attr(const char* name, UnsupportedAttrKind unsupported);
  // REQUIRED_ATTR(name, Kind).
  void RequiredAttr(const char* name, AttrType type);
  void RequiredAttr(const char* name, UnsupportedAttrKind unsupported);
  // A chain member that changes the IR in a way this project cannot represent
  // (GRAPH / DYNAMIC_GRAPH subgraphs): `what` names it ("subgraph 'body' (GRAPH)").
  void Unsupported(const std::string& what);

  // The finished prototype: schema set and error empty, or schema null and
  // error naming the op, the file and every field at fault. Call once.
  RegisteredPrototype Finish();

 private:
  struct Binding {
    std::string symbol;
    std::vector<DataType> allowed;
    bool uniform = true;
    std::vector<std::string> promoted;  // Promote: the symbols whose sets are united
  };
  void Fail(std::string what);
  IrDataTypes Parse(const std::string& text, const std::string& where);
  void Resolve(IrDataTypes& d, const std::string& where);
  void CheckHoldable(const IrDataTypes& d, const std::string& where);
  void CheckDefaultDataTypes(const std::string& name, const AttrValue& value);

  OpSchema schema_;
  std::string file_;
  std::vector<Binding> bindings_;
  std::vector<std::string> errors_;
};

}  // namespace ge

namespace ge {

// The static object OP_END_FACTORY_REG leaves behind: its constructor runs
// during the library's static initialization, builds the prototype with
// `make` and hands it to AddRegisteredPrototype (ge/op/library_registrations.h).
// Never throws: if building fails (std::bad_alloc), an entry naming
// `op_type` (a literal, borrowed) with that error is registered instead.
class PrototypeRegistrar {
 public:
  PrototypeRegistrar(const char* op_type, RegisteredPrototype (*make)()) noexcept;
};

}  // namespace ge
