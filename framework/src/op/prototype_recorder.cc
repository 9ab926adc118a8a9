// REG_OP chains into OpSchema (ge/op/prototype_recorder.h).
#include "ge/op/prototype_recorder.h"
#include "ge/registration_owner.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <exception>
#include <utility>

namespace ge {

PrototypeRecorder::PrototypeRecorder(const char* op_type, const char* file)
    : file_(file != nullptr ? file : "") {
  schema_.op_type = op_type != nullptr ? op_type : "";
}

void PrototypeRecorder::Fail(std::string what) { errors_.push_back(std::move(what)); }

namespace {

// GE's predefined TensorType sets by name (graph/types.h).
struct NamedSet {
  const char* name;
  TensorType (*make)();
};
constexpr NamedSet kNamedSets[] = {
    {"ALL", &TensorType::ALL},
    {"QuantifiedType", &TensorType::QuantifiedType},
    {"OrdinaryType", &TensorType::OrdinaryType},
    {"BasicType", &TensorType::BasicType},
    {"NumberType", &TensorType::NumberType},
    {"RealNumberType", &TensorType::RealNumberType},
    {"ComplexDataType", &TensorType::ComplexDataType},
    {"IntegerDataType", &TensorType::IntegerDataType},
    {"SignedDataType", &TensorType::SignedDataType},
    {"UnsignedDataType", &TensorType::UnsignedDataType},
    {"FloatingDataType", &TensorType::FloatingDataType},
    {"IndexNumberType", &TensorType::IndexNumberType},
    {"UnaryDataType", &TensorType::UnaryDataType},
    {"FLOAT", &TensorType::FLOAT},
};

bool SameIgnoringCase(const std::string& a, const char* b) {
  const std::size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// The text without blanks (the preprocessor keeps single spaces between tokens).
std::string Squeeze(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

bool StartsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool EndsWith(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// One element of a type list: DT_X, ge::DT_X, Name(), Name, TensorType::Name()
// or ge::TensorType::Name(). Appends its types; false when it is none of these.
bool AddElement(std::string e, std::vector<DataType>& out) {
  if (StartsWith(e, "::")) e.erase(0, 2);
  if (StartsWith(e, "ge::")) e.erase(0, 4);
  if (StartsWith(e, "DataType::")) e.erase(0, 10);
  if (StartsWith(e, "DT_")) {
    for (int v = 0; v <= static_cast<int>(DT_HIFLOAT4); ++v) {
      if (DataTypeGeName(static_cast<DataType>(v)) == e) {
        out.push_back(static_cast<DataType>(v));
        return true;
      }
    }
    return false;
  }
  if (StartsWith(e, "TensorType::")) e.erase(0, 12);
  if (EndsWith(e, "()")) e.resize(e.size() - 2);  // GE's headers also name a set without the call
  for (const auto& set : kNamedSets) {
    if (SameIgnoringCase(e, set.name)) {
      const TensorType t = set.make();
      out.insert(out.end(), t.DataTypes().begin(), t.DataTypes().end());
      return true;
    }
  }
  return false;
}

}  // namespace

IrDataTypes PrototypeRecorder::Parse(const std::string& text, const std::string& where) {
  IrDataTypes d;
  std::string t = Squeeze(text);
  if (t.size() >= 2 && t.front() == '"' && t.back() == '"') {
    d.symbol = t.substr(1, t.size() - 2);
    if (d.symbol.empty()) Fail(where + ": the type symbol is empty");
    return d;
  }
  std::vector<DataType> types;
  bool ok = false;
  std::string body = t;
  if (StartsWith(body, "::")) body.erase(0, 2);
  if (StartsWith(body, "ge::")) body.erase(0, 4);
  if (StartsWith(body, "TensorType(") && EndsWith(body, ")")) {
    body = body.substr(11, body.size() - 12);
    if (StartsWith(body, "{") && EndsWith(body, "}")) body = body.substr(1, body.size() - 2);
    ok = !body.empty();
    std::size_t pos = 0;
    while (ok && pos <= body.size()) {
      const std::size_t comma = body.find(',', pos);
      const std::size_t stop = comma == std::string::npos ? body.size() : comma;
      const std::string element = body.substr(pos, stop - pos);
      if (!AddElement(element, types)) {
        Fail(where + ": unknown element '" + element + "' in the type '" + text + "' (expected DT_<name> or a TensorType set)");
        return d;
      }
      pos = stop + 1;
      if (comma == std::string::npos) break;
    }
  } else {
    ok = AddElement(body, types);  // TensorType::ALL() and friends
  }
  if (!ok || types.empty()) {
    Fail(where + ": cannot read the type '" + text +
         "' (expected \"SYMBOL\", TensorType({DT_...}), TensorType(DT_...) or TensorType::<set>())");
    return d;
  }
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  d.allowed = std::move(types);
  return d;
}

void PrototypeRecorder::Input(const char* name, IrInputKind kind, const char* type_text) {
  schema_.inputs.push_back(IrInput{name, kind, Parse(type_text, std::string("input '") + name + "'")});
}

void PrototypeRecorder::Output(const char* name, IrOutputKind kind, const char* type_text) {
  schema_.outputs.push_back(IrOutput{name, kind, Parse(type_text, std::string("output '") + name + "'")});
}

void PrototypeRecorder::BindSymbol(const char* symbol, const TensorType& types) {
  if (types.DataTypes().empty()) Fail(std::string("DATATYPE(") + symbol + "): the type set is empty");
  bindings_.push_back(Binding{symbol, types.DataTypes(), true, {}});
}

void PrototypeRecorder::BindSymbol(const char* symbol, const ListTensorType& types) {
  if (types.tensor_type.DataTypes().empty()) Fail(std::string("DATATYPE(") + symbol + "): the type set is empty");
  bindings_.push_back(Binding{symbol, types.tensor_type.DataTypes(), false, {}});
}

void PrototypeRecorder::BindSymbol(const char* symbol, const Promote& promote) {
  Binding b{symbol, {}, true, {}};
  for (const char* s : promote.Syms()) b.promoted.emplace_back(s != nullptr ? s : "");
  if (b.promoted.empty()) Fail(std::string("DATATYPE(") + symbol + "): Promote names no symbol");
  bindings_.push_back(std::move(b));
}

void PrototypeRecorder::Attr(const char* name, AttrValue default_value) {
  schema_.attrs.push_back(IrAttr{name, TypeOf(default_value), std::move(default_value)});
}

void PrototypeRecorder::Attr(const char* name, UnsupportedAttrKind unsupported) {
  Fail(std::string("attribute '") + name + "' has kind " + unsupported.kind + ", which this host does not support");
}

void PrototypeRecorder::RequiredAttr(const char* name, AttrType type) {
  schema_.attrs.push_back(IrAttr{name, type, std::nullopt});
}

void PrototypeRecorder::RequiredAttr(const char* name, UnsupportedAttrKind unsupported) {
  Fail(std::string("required attribute '") + name + "' has kind " + unsupported.kind +
       ", which this host does not support");
}

void PrototypeRecorder::Unsupported(const std::string& what) { Fail(what + " is not supported by this host"); }

void PrototypeRecorder::Resolve(IrDataTypes& d, const std::string& where) {
  if (d.symbol.empty()) return;  // a direct set (or an error already recorded)
  auto find = [&](const std::string& s) -> const Binding* {
    for (const auto& b : bindings_) {
      if (b.symbol == s) return &b;
    }
    return nullptr;
  };
  const Binding* b = find(d.symbol);
  if (b == nullptr) {
    Fail(where + " uses type symbol '" + d.symbol + "', which no DATATYPE binds");
    return;
  }
  d.uniform = b->uniform;
  if (b->promoted.empty()) {
    d.allowed = b->allowed;
    return;
  }
  std::vector<DataType> all;
  for (const auto& p : b->promoted) {
    const Binding* pb = find(p);
    if (pb == nullptr || !pb->promoted.empty()) {
      Fail(where + ": DATATYPE(" + d.symbol + ", Promote) names '" + p + "', which is not a TensorType symbol");
      return;
    }
    all.insert(all.end(), pb->allowed.begin(), pb->allowed.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  d.allowed = std::move(all);
}

// GE names dtypes this host's tensors cannot hold (DT_QINT8, DT_RESOURCE, ...;
// share/docs/op-prototypes.md): a set made only of those could never be met.
void PrototypeRecorder::CheckHoldable(const IrDataTypes& d, const std::string& where) {
  if (d.allowed.empty()) return;  // any dtype, or an error already recorded
  std::string names;
  for (DataType dt : d.allowed) {
    if (IsKnownDataType(dt) && dt != DT_UNDEFINED) return;
    names += (names.empty() ? "" : "|") + DataTypeGeName(dt);
  }
  Fail(where + ": no dtype of its set (" + names + ") can be held by a tensor of this host");
}

// A Type / ListType default naming such a dtype could never be passed on.
void PrototypeRecorder::CheckDefaultDataTypes(const std::string& name, const AttrValue& value) {
  std::vector<DataType> dts;
  if (const auto* one = std::get_if<DataType>(&value)) dts.push_back(*one);
  if (const auto* list = std::get_if<std::vector<DataType>>(&value)) dts = *list;
  for (DataType dt : dts) {
    if (!IsKnownDataType(dt)) {
      Fail("attribute '" + name + "': its default " + DataTypeGeName(dt) + " is a dtype this host does not support");
      return;
    }
  }
}

RegisteredPrototype PrototypeRecorder::Finish() {
  for (std::size_t i = 0; i < bindings_.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (bindings_[j].symbol == bindings_[i].symbol) Fail("DATATYPE(" + bindings_[i].symbol + ") is declared twice");
    }
  }
  for (auto& in : schema_.inputs) Resolve(in.dtypes, "input '" + in.name + "'");
  for (auto& out : schema_.outputs) Resolve(out.dtypes, "output '" + out.name + "'");
  for (const auto& in : schema_.inputs) CheckHoldable(in.dtypes, "input '" + in.name + "'");
  for (const auto& out : schema_.outputs) CheckHoldable(out.dtypes, "output '" + out.name + "'");
  for (const auto& a : schema_.attrs) {
    if (schema_.FindInput(a.name)) {
      // An implementation receives inputs and attributes as parameters of one
      // method (execute(self, <inputs>, *, <attrs>)): one name cannot be both.
      Fail("attribute '" + a.name + "' has the name of an input");
    }
    if (a.default_value) CheckDefaultDataTypes(a.name, *a.default_value);
  }
  RegisteredPrototype r;
  r.op_type = schema_.op_type;
  if (errors_.empty()) {
    r.schema = std::make_shared<const OpSchema>(std::move(schema_));
    return r;
  }
  r.error = "REG_OP(" + r.op_type + ")" + (file_.empty() ? std::string() : " in " + file_) + ": ";
  for (std::size_t i = 0; i < errors_.size(); ++i) r.error += (i ? "; " : "") + errors_[i];
  return r;
}

}  // namespace ge

namespace ge {

PrototypeRegistrar::PrototypeRegistrar(const char* op_type, RegisteredPrototype (*make)()) noexcept {
  // REG_OP's factory is the library's own (hidden) code: its owner.
  const void* origin = reinterpret_cast<const void*>(make);
  try {
    AddRegisteredPrototypeFrom(make(), origin);
  } catch (const std::exception& e) {
    try {
      AddRegisteredPrototypeFrom(RegisteredPrototype{op_type, nullptr, std::string("REG_OP(") + op_type + "): " + e.what()},
                                 origin);
    } catch (...) {
      // Out of memory twice during static initialization: nothing left to report with.
    }
  }
}

}  // namespace ge
