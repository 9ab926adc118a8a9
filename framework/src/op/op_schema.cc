// Attribute kind names, OpSchema helpers, Status formatting.
#include "ge/op/op_schema.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <sstream>

#include "ge/op/status.h"

namespace ge {
namespace {
constexpr std::array<std::string_view, 12> kAttrTypeNames{
    "VT_INT",       "VT_FLOAT",      "VT_BOOL",       "VT_STRING",      "VT_DATA_TYPE",      "VT_TENSOR",
    "VT_LIST_INT",  "VT_LIST_FLOAT", "VT_LIST_BOOL",  "VT_LIST_STRING", "VT_LIST_DATA_TYPE", "VT_LIST_LIST_INT"};
}  // namespace

std::string_view AttrTypeName(AttrType t) noexcept {
  const auto i = static_cast<std::size_t>(t);
  return i < kAttrTypeNames.size() ? kAttrTypeNames[i] : std::string_view("VT_UNKNOWN");
}

std::optional<AttrType> AttrTypeFromName(std::string_view name) {
  for (std::size_t i = 0; i < kAttrTypeNames.size(); ++i) {
    if (kAttrTypeNames[i] == name) return static_cast<AttrType>(i);
  }
  return std::nullopt;
}

std::string_view IrInputKindName(IrInputKind k) noexcept {
  switch (k) {
    case IrInputKind::kRequired: return "required";
    case IrInputKind::kOptional: return "optional";
    case IrInputKind::kDynamic: return "dynamic";
  }
  return "?";
}

std::string_view IrOutputKindName(IrOutputKind k) noexcept {
  return k == IrOutputKind::kRequired ? "required" : "dynamic";
}

std::optional<std::size_t> OpSchema::FindAttr(const std::string& name) const {
  for (std::size_t i = 0; i < attrs.size(); ++i) {
    if (attrs[i].name == name) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> OpSchema::FindInput(const std::string& name) const {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].name == name) return i;
  }
  return std::nullopt;
}

namespace {
std::string ScalarText(int64_t v) { return std::to_string(v); }
std::string ScalarText(bool v) { return v ? "true" : "false"; }
std::string ScalarText(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that reads back as v
  std::string out(buf, r.ptr);
  // 1 -> 1.0, as Python prints a float (nan, inf and 1e+20 stay as they are).
  if (out.find_first_of(".en") == std::string::npos) out += ".0";
  return out;
}
std::string ScalarText(DataType v) { return IsKnownDataType(v) ? DataTypeName(v) : DataTypeGeName(v); }
std::string ScalarText(const std::string& v) {
  std::string out = "\"";
  for (const unsigned char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + '"';
}
std::string ScalarText(const TensorAttr& v) { return v ? "tensor " + v->Desc().ToString() : "tensor (none)"; }
template <typename T>
std::string ScalarText(const std::vector<T>& list) {
  std::string out = "[";
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (i) out += ", ";
    out += ScalarText(static_cast<T>(list[i]));  // vector<bool>'s proxies become bools
  }
  return out + ']';
}
}  // namespace

std::string AttrValueText(const AttrValue& v) {
  return std::visit([](const auto& x) { return ScalarText(x); }, v);
}

bool IrDataTypes::Allows(DataType dt) const noexcept {
  return allowed.empty() || std::binary_search(allowed.begin(), allowed.end(), dt);
}

std::string DataTypeSetString(const std::vector<DataType>& types) {
  if (types.empty()) return "any";
  std::string out;
  for (DataType dt : types) {
    if (!out.empty()) out += '|';
    out += IsKnownDataType(dt) ? DataTypeName(dt) : DataTypeGeName(dt);
  }
  return out;
}

std::string OpSchema::ToString() const {
  std::ostringstream os;
  // Symbols in first-use order, each shown once with its set.
  std::vector<const IrDataTypes*> symbols;
  auto constraint = [&](const IrDataTypes& d) {
    if (!d.symbol.empty()) {
      bool seen = false;
      for (const IrDataTypes* s : symbols) seen = seen || s->symbol == d.symbol;
      if (!seen) symbols.push_back(&d);
      os << ": " << d.symbol;
    } else if (!d.allowed.empty()) {
      os << ": " << DataTypeSetString(d.allowed);
    }
  };
  os << op_type << '(';
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    os << (i ? ", " : "") << inputs[i].name
       << (inputs[i].kind == IrInputKind::kOptional ? "?" : inputs[i].kind == IrInputKind::kDynamic ? "*" : "");
    constraint(inputs[i].dtypes);
  }
  os << ") -> (";
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    os << (i ? ", " : "") << outputs[i].name << (outputs[i].kind == IrOutputKind::kDynamic ? "*" : "");
    constraint(outputs[i].dtypes);
  }
  os << ')';
  if (!symbols.empty()) {
    os << " [";
    for (std::size_t i = 0; i < symbols.size(); ++i) {
      os << (i ? ", " : "") << symbols[i]->symbol << ": " << DataTypeSetString(symbols[i]->allowed);
    }
    os << ']';
  }
  if (!attrs.empty()) {
    os << " {";
    for (std::size_t i = 0; i < attrs.size(); ++i) {
      os << (i ? ", " : "") << attrs[i].name << ": " << AttrTypeName(attrs[i].type)
         << (attrs[i].default_value ? " = " + AttrValueText(*attrs[i].default_value) : "");
    }
    os << '}';
  }
  return os.str();
}

std::string Status::Describe() const {
  if (ok_) return "ok";
  std::ostringstream os;
  os << info_.message;
  std::string where;
  if (!info_.plugin.empty()) where += "plugin '" + info_.plugin + "'";
  if (!info_.location.empty()) {
    where += (where.empty() ? "" : ", ") + info_.location;
  } else if (!info_.file.empty()) {
    where += (where.empty() ? "" : ", ") + std::string("file ") + info_.file;
  }
  if (!info_.call_site.empty()) where += (where.empty() ? "during " : ", during ") + info_.call_site;
  if (!where.empty()) os << " (" << where << ')';
  if (!info_.traceback.empty()) os << '\n' << info_.traceback;
  return os.str();
}

}  // namespace ge
