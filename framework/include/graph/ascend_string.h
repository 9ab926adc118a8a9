// graph/ascend_string.h: ge::AscendString, the string type of GE's C++ API.
//
// Source-compatible with GE's class of the same name (op_type names in
// REG_AUTO_MAPPING_OP, option keys and values in OpCompileContext::GetOption).
// A value type: copies share one immutable buffer, so a copy is cheap and
// safe to hand to another thread. Contents are bytes (UTF-8 by convention);
// GetString() is NUL-terminated and valid as long as any copy lives.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace ge {

class AscendString {
 public:
  AscendString() = default;
  // A null `name` makes the empty string (GE does the same).
  AscendString(const char* name);  // NOLINT(google-explicit-constructor): GE converts implicitly
  AscendString(const char* name, std::size_t length);
  explicit AscendString(std::string name);

  // Never null: "" for an empty string.
  const char* GetString() const noexcept;
  std::size_t GetLength() const noexcept;
  // Byte offset of the first occurrence of `part`, std::string::npos if none.
  std::size_t Find(const AscendString& part) const noexcept;
  std::size_t Hash() const noexcept;
  std::string ToStdString() const { return std::string(GetString(), GetLength()); }

  bool operator<(const AscendString& o) const noexcept { return Compare(o) < 0; }
  bool operator>(const AscendString& o) const noexcept { return Compare(o) > 0; }
  bool operator<=(const AscendString& o) const noexcept { return Compare(o) <= 0; }
  bool operator>=(const AscendString& o) const noexcept { return Compare(o) >= 0; }
  bool operator==(const AscendString& o) const noexcept { return Compare(o) == 0; }
  bool operator!=(const AscendString& o) const noexcept { return Compare(o) != 0; }
  bool operator==(const char* o) const noexcept { return *this == AscendString(o); }
  bool operator!=(const char* o) const noexcept { return !(*this == o); }

 private:
  int Compare(const AscendString& o) const noexcept;
  std::shared_ptr<const std::string> name_;  // null: the empty string
};

}  // namespace ge

template <>
struct std::hash<ge::AscendString> {
  std::size_t operator()(const ge::AscendString& s) const noexcept { return s.Hash(); }
};
