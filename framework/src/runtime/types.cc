// Element type tables: sizes, numpy names, struct formats, array typestrs.
#include "ge/runtime/types.h"

#include <array>

namespace ge {
namespace {

struct TypeRow {
  DataType dt;
  const char* name;     // numpy name
  std::size_t size;     // bytes
  char fmt;             // struct format, 0 for none
  const char* typestr;  // array interface typestr
};

// Byte order is the host's (little-endian on every target we build for).
constexpr std::array<TypeRow, 16> kRows{{
    {DT_FLOAT, "float32", 4, 'f', "<f4"},
    {DT_FLOAT16, "float16", 2, 'e', "<f2"},
    {DT_INT8, "int8", 1, 'b', "|i1"},
    {DT_INT32, "int32", 4, 'i', "<i4"},
    {DT_UINT8, "uint8", 1, 'B', "|u1"},
    {DT_INT16, "int16", 2, 'h', "<i2"},
    {DT_UINT16, "uint16", 2, 'H', "<u2"},
    {DT_UINT32, "uint32", 4, 'I', "<u4"},
    {DT_INT64, "int64", 8, 'q', "<i8"},
    {DT_UINT64, "uint64", 8, 'Q', "<u8"},
    {DT_DOUBLE, "float64", 8, 'd', "<f8"},
    {DT_BOOL, "bool", 1, '?', "|b1"},
    {DT_COMPLEX64, "complex64", 8, 0, "<c8"},
    {DT_COMPLEX128, "complex128", 16, 0, "<c16"},
    {DT_BF16, "bfloat16", 2, 0, "<V2"},
    {DT_STRING, "string", 0, 0, "|O"},
}};

const TypeRow* FindRow(DataType dt) noexcept {
  for (const auto& r : kRows) {
    if (r.dt == dt) return &r;
  }
  return nullptr;
}

}  // namespace

bool IsKnownDataType(int64_t value) noexcept {
  if (value == DT_UNDEFINED) return true;
  for (const auto& r : kRows) {
    if (r.dt == value) return true;
  }
  return false;
}

std::size_t DataTypeSize(DataType dt) noexcept {
  const TypeRow* r = FindRow(dt);
  return r ? r->size : 0;
}

std::string DataTypeName(DataType dt) {
  if (dt == DT_UNDEFINED) return "undefined";
  const TypeRow* r = FindRow(dt);
  return r ? std::string(r->name) : "DT_" + std::to_string(static_cast<int>(dt));
}

std::string DataTypeGeName(DataType dt) {
  // Indexed by GE's number; empty where GE leaves a gap.
  static constexpr std::array<std::string_view, 43> kGe{
      "DT_FLOAT",       "DT_FLOAT16",         "DT_INT8",        "DT_INT32",          "DT_UINT8",
      "",               "DT_INT16",           "DT_UINT16",      "DT_UINT32",         "DT_INT64",
      "DT_UINT64",      "DT_DOUBLE",          "DT_BOOL",        "DT_STRING",         "DT_DUAL_SUB_INT8",
      "DT_DUAL_SUB_UINT8", "DT_COMPLEX64",    "DT_COMPLEX128",  "DT_QINT8",          "DT_QINT16",
      "DT_QINT32",      "DT_QUINT8",          "DT_QUINT16",     "DT_RESOURCE",       "DT_STRING_REF",
      "DT_DUAL",        "DT_VARIANT",         "DT_BF16",        "DT_UNDEFINED",      "DT_INT4",
      "DT_UINT1",       "DT_INT2",            "DT_UINT2",       "DT_COMPLEX32",      "DT_HIFLOAT8",
      "DT_FLOAT8_E5M2", "DT_FLOAT8_E4M3FN",   "DT_FLOAT8_E8M0", "DT_FLOAT6_E3M2",    "DT_FLOAT6_E2M3",
      "DT_FLOAT4_E2M1", "DT_FLOAT4_E1M2",     "DT_HIFLOAT4"};
  const auto i = static_cast<int64_t>(dt);
  if (i >= 0 && i < static_cast<int64_t>(kGe.size()) && !kGe[static_cast<std::size_t>(i)].empty()) {
    return std::string(kGe[static_cast<std::size_t>(i)]);
  }
  return "DT_" + std::to_string(i);
}

std::optional<DataType> DataTypeFromName(std::string_view name) {
  for (const auto& r : kRows) {
    if (name == r.name) return r.dt;
  }
  static constexpr std::array<std::pair<std::string_view, DataType>, 14> kGeNames{{
      {"DT_FLOAT", DT_FLOAT}, {"DT_FLOAT16", DT_FLOAT16}, {"DT_INT8", DT_INT8},
      {"DT_INT32", DT_INT32}, {"DT_UINT8", DT_UINT8}, {"DT_INT16", DT_INT16},
      {"DT_UINT16", DT_UINT16}, {"DT_UINT32", DT_UINT32}, {"DT_INT64", DT_INT64},
      {"DT_UINT64", DT_UINT64}, {"DT_DOUBLE", DT_DOUBLE}, {"DT_BOOL", DT_BOOL},
      {"DT_BF16", DT_BF16}, {"DT_STRING", DT_STRING},
  }};
  for (const auto& [n, dt] : kGeNames) {
    if (name == n) return dt;
  }
  return std::nullopt;
}

std::optional<char> DataTypeStructFormat(DataType dt) {
  const TypeRow* r = FindRow(dt);
  if (r == nullptr || r->fmt == 0) return std::nullopt;
  return r->fmt;
}

std::string DataTypeTypestr(DataType dt) {
  const TypeRow* r = FindRow(dt);
  return r ? std::string(r->typestr) : std::string("|V1");
}

std::optional<DataType> DataTypeFromTypestr(std::string_view typestr) {
  if (typestr.size() < 2) return std::nullopt;
  // '=' and '|' mean native / not applicable; '>' is refused by the caller.
  std::string_view body = typestr.substr(1);
  for (const auto& r : kRows) {
    if (r.dt == DT_BF16 || r.dt == DT_STRING) continue;
    if (body == std::string_view(r.typestr).substr(1)) return r.dt;
  }
  if (body == "b1") return DT_BOOL;
  return std::nullopt;
}

}  // namespace ge
