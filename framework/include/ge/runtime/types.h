// ge/runtime/types.h: element types, formats and placements (GE numbering).
//
// Values match GE's public C++ enums (graph/types.h) for every member listed,
// so a number stored by a GE plugin means the same here. Pure C++, no Python.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ge {

enum DataType : int32_t {
  DT_FLOAT = 0,
  DT_FLOAT16 = 1,
  DT_INT8 = 2,
  DT_INT32 = 3,
  DT_UINT8 = 4,
  DT_INT16 = 6,
  DT_UINT16 = 7,
  DT_UINT32 = 8,
  DT_INT64 = 9,
  DT_UINT64 = 10,
  DT_DOUBLE = 11,
  DT_BOOL = 12,
  DT_STRING = 13,
  DT_DUAL_SUB_INT8 = 14,   // declarable in prototypes only (see below)
  DT_DUAL_SUB_UINT8 = 15,  // declarable in prototypes only
  DT_COMPLEX64 = 16,
  DT_COMPLEX128 = 17,
  DT_QINT8 = 18,       // declarable in prototypes only
  DT_QINT16 = 19,      // declarable in prototypes only
  DT_QINT32 = 20,      // declarable in prototypes only
  DT_QUINT8 = 21,      // declarable in prototypes only
  DT_QUINT16 = 22,     // declarable in prototypes only
  DT_RESOURCE = 23,    // declarable in prototypes only
  DT_STRING_REF = 24,  // declarable in prototypes only
  DT_DUAL = 25,        // declarable in prototypes only
  DT_VARIANT = 26,     // declarable in prototypes only
  DT_BF16 = 27,
  DT_UNDEFINED = 28,
  DT_MAX = 29,  // this project's bound; members at or past it are unsupported
  // Members past the bound, numbered as GE numbers them, so that operator
  // prototypes naming them (graph/types.h, TensorType) compile.
  DT_INT4 = 29,
  DT_UINT1 = 30,
  DT_INT2 = 31,
  DT_UINT2 = 32,
  DT_COMPLEX32 = 33,
  DT_HIFLOAT8 = 34,
  DT_FLOAT8_E5M2 = 35,
  DT_FLOAT8_E4M3FN = 36,
  DT_FLOAT8_E8M0 = 37,
  DT_FLOAT6_E3M2 = 38,
  DT_FLOAT6_E2M3 = 39,
  DT_FLOAT4_E2M1 = 40,
  DT_FLOAT4_E1M2 = 41,
  DT_HIFLOAT4 = 42,
};
// The members marked "declarable in prototypes only" and those past DT_MAX
// exist so that GE operator prototypes naming them compile and their dtype
// sets keep GE's numbers; no tensor, attribute or graph of this project can
// hold them (IsKnownDataType is false for them, DataTypeSize is 0).

enum Format : int32_t {
  FORMAT_NCHW = 0,
  FORMAT_NHWC = 1,
  FORMAT_ND = 2,
  FORMAT_NC1HWC0 = 3,
  FORMAT_FRACTAL_Z = 4,
  FORMAT_NC1HWC0_C04 = 12,
  FORMAT_HWCN = 16,
  FORMAT_NDHWC = 27,
  FORMAT_FRACTAL_NZ = 29,
  FORMAT_NCDHW = 30,
};

// Where a tensor's memory lives (gert::TensorPlacement numbering).
enum TensorPlacement : int32_t {
  kOnDeviceHbm = 0,
  kOnHost = 1,
  kFollowing = 2,
  kOnDeviceP2p = 3,
  kTensorPlacementEnd = 4,
};

// True for the members declared above that are below DT_MAX.
bool IsKnownDataType(int64_t value) noexcept;

// Bytes per element; 0 for types without a fixed size (DT_STRING, DT_UNDEFINED).
std::size_t DataTypeSize(DataType dt) noexcept;

// numpy-style name ("float32", "float16", "bfloat16", "int64", "bool", ...).
// Returns "DT_<n>" for a type with no numpy name.
std::string DataTypeName(DataType dt);

// GE's enumerator name ("DT_FLOAT", "DT_QINT8", "DT_HIFLOAT4", ...) of every
// member above except DT_MAX; "DT_<n>" for any other value.
std::string DataTypeGeName(DataType dt);

// Inverse of DataTypeName; also accepts GE names ("DT_FLOAT", "float" is not
// accepted: it is ambiguous). Returns nullopt for an unknown name.
std::optional<DataType> DataTypeFromName(std::string_view name);

// Python `struct` format character of the element type ("f", "e", "d", "b",
// "i", "q", "B", "?", ...); nullopt when there is none (e.g. bfloat16).
std::optional<char> DataTypeStructFormat(DataType dt);

// numpy array-interface typestr ("<f4", "<f2", "|b1", "<V2" for bfloat16, ...).
std::string DataTypeTypestr(DataType dt);

// Inverse used by the .npy reader: typestr ("<f4", "|u1", "<i8", ...) to type.
std::optional<DataType> DataTypeFromTypestr(std::string_view typestr);

}  // namespace ge
