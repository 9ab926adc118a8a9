// graph/error_codes.h: graphStatus, the result code of GE's C++ operator API.
//
// Source-compatible with GE's public header of the same path: an upstream
// custom op or prototype library that returns ge::GRAPH_SUCCESS or
// ge::GRAPH_FAILED compiles unchanged against it. The values are GE's, so a
// code that crosses a library boundary means the same on both sides.
// Details of a failure travel beside the code (see share/docs/embedding.md,
// "Errors from ops"), never inside it.
#pragma once

#include <cstdint>

namespace ge {

using graphStatus = uint32_t;

inline constexpr graphStatus GRAPH_SUCCESS = 0U;
inline constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFFU;
// GE's "invalid parameter" code (its module 3, code 1).
inline constexpr graphStatus GRAPH_PARAM_INVALID = 50331649U;
// Returned by an interface an op declares but does not support for this call.
inline constexpr graphStatus GRAPH_NOT_CHANGED = 1343242304U;

}  // namespace ge
