// graph/types.h: GE's element-type vocabulary for operator prototypes (TensorType and friends).
//
// Operator prototype headers written for GE include this file (directly or
// through graph/operator_reg.h) and name element types as GE spells them:
// DT_FLOAT, DT_QINT8, TensorType({DT_FLOAT, DT_FLOAT16}), TensorType::ALL().
// The enums themselves live in ge/runtime/types.h (GE's numbering); members a
// tensor of this project cannot hold are declarable here but rejected by
// every tensor, attribute and graph (see IsKnownDataType).
//
// The names, constructors and the members of each predefined set follow GE's
// graph/types.h (facts of its API); the implementation is ours: a TensorType
// is a plain value (a sorted set of DataType), copyable, immutable after
// construction and safe to read from several threads. Nothing here throws
// except std::bad_alloc. See share/docs/op-prototypes.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ge/runtime/types.h"
#include "graph/ascend_string.h"
#include "graph/error_codes.h"

namespace ge {

// GE's scalar spellings, used in prototype and op_impl signatures.
using char_t = char;
using float32_t = float;
using float64_t = double;

#ifndef GE_FUNC_HOST_VISIBILITY
#define GE_FUNC_HOST_VISIBILITY
#endif
#ifndef GE_FUNC_DEV_VISIBILITY
#define GE_FUNC_DEV_VISIBILITY
#endif

// A set of allowed element types, as an INPUT/OUTPUT/DATATYPE of REG_OP
// declares it. Kept sorted by GE number without repeats; DataTypes() is
// borrowed and valid while the TensorType lives.
struct TensorType {
  explicit TensorType(DataType dt) : types_{dt} {}
  TensorType(const std::initializer_list<DataType>& types) : types_(types) {
    std::sort(types_.begin(), types_.end());
    types_.erase(std::unique(types_.begin(), types_.end()), types_.end());
  }

  // The members, ascending by GE number (this project's accessor; GE keeps them private).
  const std::vector<DataType>& DataTypes() const noexcept { return types_; }

  // GE's predefined sets (same names, same members).
  static TensorType ALL() {
    return {DT_BOOL,  DT_COMPLEX128, DT_COMPLEX64, DT_DOUBLE, DT_FLOAT,  DT_FLOAT16, DT_INT16, DT_INT32,
            DT_INT64, DT_INT8,       DT_QINT16,    DT_QINT32, DT_QINT8,  DT_QUINT16, DT_QUINT8, DT_RESOURCE,
            DT_STRING, DT_UINT16,    DT_UINT32,    DT_UINT64, DT_UINT8,  DT_BF16,    DT_COMPLEX32};
  }
  static TensorType QuantifiedType() { return {DT_QINT16, DT_QINT32, DT_QINT8, DT_QUINT16, DT_QUINT8}; }
  static TensorType OrdinaryType() {
    return {DT_BOOL,  DT_COMPLEX128, DT_COMPLEX64, DT_DOUBLE, DT_FLOAT,  DT_FLOAT16, DT_INT16, DT_INT32,
            DT_INT64, DT_INT8,       DT_UINT16,    DT_UINT32, DT_UINT64, DT_UINT8,   DT_BF16,  DT_COMPLEX32};
  }
  static TensorType BasicType() {
    return {DT_COMPLEX128, DT_COMPLEX64, DT_DOUBLE, DT_FLOAT,  DT_FLOAT16, DT_INT16,   DT_INT32,
            DT_INT64,      DT_INT8,      DT_QINT16, DT_QINT32, DT_QINT8,   DT_QUINT16, DT_QUINT8,
            DT_UINT16,     DT_UINT32,    DT_UINT64, DT_UINT8,  DT_BF16,    DT_COMPLEX32};
  }
  static TensorType NumberType() {
    return {DT_COMPLEX128, DT_COMPLEX64, DT_DOUBLE, DT_FLOAT,  DT_FLOAT16, DT_INT16,
            DT_INT32,      DT_INT64,     DT_INT8,   DT_QINT32, DT_QINT8,   DT_QUINT8,
            DT_UINT16,     DT_UINT32,    DT_UINT64, DT_UINT8,  DT_BF16,    DT_COMPLEX32};
  }
  static TensorType RealNumberType() {
    return {DT_DOUBLE, DT_FLOAT,  DT_FLOAT16, DT_INT16,  DT_INT32, DT_INT64,
            DT_INT8,   DT_UINT16, DT_UINT32,  DT_UINT64, DT_UINT8, DT_BF16};
  }
  static TensorType ComplexDataType() { return {DT_COMPLEX128, DT_COMPLEX64, DT_COMPLEX32}; }
  static TensorType IntegerDataType() {
    return {DT_INT16, DT_INT32, DT_INT64, DT_INT8, DT_UINT16, DT_UINT32, DT_UINT64, DT_UINT8};
  }
  static TensorType SignedDataType() { return {DT_INT16, DT_INT32, DT_INT64, DT_INT8}; }
  static TensorType UnsignedDataType() { return {DT_UINT16, DT_UINT32, DT_UINT64, DT_UINT8}; }
  static TensorType FloatingDataType() { return {DT_DOUBLE, DT_FLOAT, DT_FLOAT16}; }
  static TensorType IndexNumberType() { return {DT_INT32, DT_INT64}; }
  static TensorType UnaryDataType() {
    return {DT_COMPLEX128, DT_COMPLEX64, DT_DOUBLE, DT_FLOAT, DT_FLOAT16, DT_BF16, DT_COMPLEX32};
  }
  static TensorType FLOAT() { return {DT_FLOAT, DT_FLOAT16, DT_BF16}; }

 private:
  std::vector<DataType> types_;
};

// DATATYPE(sym, ListTensorType(...)): each tensor under `sym` (typically the
// instances of a dynamic input) takes any member of the set independently.
struct ListTensorType {
  explicit ListTensorType(const TensorType& type) : tensor_type(type) {}
  TensorType tensor_type;
};

// DATATYPE(sym, Promote({"T1", "T2"})): `sym` is the promotion of the named
// symbols' types. This project checks it against the union of their sets.
// The names are borrowed: pass string literals (as GE's prototypes do).
class Promote {
 public:
  Promote(const std::initializer_list<const char*>& syms) : syms_(syms) {}
  Promote(const Promote&) = delete;
  Promote& operator=(const Promote&) = delete;
  Promote(Promote&&) noexcept = default;
  Promote& operator=(Promote&&) noexcept = default;
  std::vector<const char*> Syms() const { return syms_; }

 private:
  std::vector<const char*> syms_;
};

}  // namespace ge
