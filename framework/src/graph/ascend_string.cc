// ge::AscendString (graph/ascend_string.h).
#include "graph/ascend_string.h"

#include <string_view>

namespace ge {

AscendString::AscendString(const char* name) {
  if (name != nullptr) name_ = std::make_shared<const std::string>(name);
}

AscendString::AscendString(const char* name, std::size_t length) {
  if (name != nullptr) name_ = std::make_shared<const std::string>(name, length);
}

AscendString::AscendString(std::string name) : name_(std::make_shared<const std::string>(std::move(name))) {}

const char* AscendString::GetString() const noexcept { return name_ ? name_->c_str() : ""; }

std::size_t AscendString::GetLength() const noexcept { return name_ ? name_->size() : 0U; }

std::size_t AscendString::Find(const AscendString& part) const noexcept {
  return std::string_view(GetString(), GetLength()).find(std::string_view(part.GetString(), part.GetLength()));
}

std::size_t AscendString::Hash() const noexcept {
  return std::hash<std::string_view>{}(std::string_view(GetString(), GetLength()));
}

int AscendString::Compare(const AscendString& o) const noexcept {
  return std::string_view(GetString(), GetLength()).compare(std::string_view(o.GetString(), o.GetLength()));
}

}  // namespace ge
