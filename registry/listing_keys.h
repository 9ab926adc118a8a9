// listing_keys.h: the fields of a listing summary (plugin::ToJson(r, false)),
// shared by the two checks of listing_json.h (internal to registry/).
#pragma once

#include <array>
#include <string_view>

namespace ge::registry::listing_keys {

// The summary's keys, in the order of the bit that marks each as seen: the
// order nlohmann::json writes them in (sorted), so that a key is looked for
// first where the one before it was found, plus one.
// In the order nlohmann::json writes them (sorted). `unprototyped` holds op
// objects like `ops` (a legacy execute registered without a prototype).
constexpr std::array<std::string_view, 10> kSummaryKeys{"error",      "isolation", "kind",         "name",   "ops",
                                                        "path",       "prototypes", "status",      "unprototyped",
                                                        "version"};
enum SummaryKey { kError, kIsolation, kKind, kName, kOps, kPath, kPrototypes, kStatus, kUnprototyped, kVersion };
constexpr std::array<std::string_view, 3> kOpKeys{"capabilities", "op_type", "prototype_library"};
enum OpKey { kCapabilities, kOpType, kPrototypeLibrary };

// The index of `k` in keys[0, n), looked for from `start` on (wrapping), or -1.
inline int IndexOf(std::string_view k, const std::string_view* keys, int n, int start = 0) {
  for (int j = 0; j < n; ++j) {
    const int i = (start + j) % n;
    if (keys[i] == k) return i;
  }
  return -1;
}

inline bool KnownIsolation(std::string_view s) {
  return s.empty() || s == "subinterpreter" || s == "main" || s == "process";
}

}  // namespace ge::registry::listing_keys
