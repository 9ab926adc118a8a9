// ge/op/attrs.h: attribute values of the 12 IR kinds, and RuntimeAttrs.
//
// Pure C++ value types. RuntimeAttrs is immutable once built and may be read
// from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "ge/runtime/tensor.h"
#include "ge/runtime/types.h"

namespace ge {

// The attribute kinds of the canonical IR (share/docs/plugin-authors.md, "The prototype"; GE's AnyValue VT_* names).
enum class AttrType : int32_t {
  VT_INT = 0,
  VT_FLOAT,
  VT_BOOL,
  VT_STRING,
  VT_DATA_TYPE,
  VT_TENSOR,
  VT_LIST_INT,
  VT_LIST_FLOAT,
  VT_LIST_BOOL,
  VT_LIST_STRING,
  VT_LIST_DATA_TYPE,
  VT_LIST_LIST_INT,
};

std::string_view AttrTypeName(AttrType t) noexcept;             // "VT_INT"
std::optional<AttrType> AttrTypeFromName(std::string_view name);  // inverse

// A tensor-valued attribute owns its tensor (shared, immutable after build).
using TensorAttr = std::shared_ptr<const Tensor>;

// One attribute value. The variant index equals static_cast<int>(AttrType).
using AttrValue = std::variant<int64_t, float, bool, std::string, DataType, TensorAttr,
                               std::vector<int64_t>, std::vector<float>, std::vector<bool>,
                               std::vector<std::string>, std::vector<DataType>,
                               std::vector<std::vector<int64_t>>>;

inline AttrType TypeOf(const AttrValue& v) noexcept { return static_cast<AttrType>(v.index()); }

// Attribute values of one node, in the IR's attribute order (gert::RuntimeAttrs).
class RuntimeAttrs {
 public:
  RuntimeAttrs() = default;
  explicit RuntimeAttrs(std::vector<AttrValue> values) : values_(std::move(values)) {}

  std::size_t GetAttrNum() const noexcept { return values_.size(); }
  // Borrowed pointer valid while this RuntimeAttrs lives; null when the index is
  // out of range or the value has another type.
  // T = char reads a VT_STRING attribute as its NUL-terminated bytes (GE's GetStr).
  template <typename T>
  const T* GetAttrPointer(std::size_t index) const noexcept {
    if (index >= values_.size()) return nullptr;
    if constexpr (std::is_same_v<T, char>) {
      const std::string* s = std::get_if<std::string>(&values_[index]);
      return s != nullptr ? s->c_str() : nullptr;
    } else {
      return std::get_if<T>(&values_[index]);
    }
  }
  // GE's typed readers (gert::RuntimeAttrs); each is null when the index is
  // out of range or the attribute has another type. Borrowed like GetAttrPointer.
  const int64_t* GetInt(std::size_t index) const noexcept { return GetAttrPointer<int64_t>(index); }
  const float* GetFloat(std::size_t index) const noexcept { return GetAttrPointer<float>(index); }
  const bool* GetBool(std::size_t index) const noexcept { return GetAttrPointer<bool>(index); }
  const char* GetStr(std::size_t index) const noexcept { return GetAttrPointer<char>(index); }
  const Tensor* GetTensor(std::size_t index) const noexcept {
    const TensorAttr* t = GetAttrPointer<TensorAttr>(index);
    return t != nullptr ? t->get() : nullptr;
  }
  const AttrValue& At(std::size_t index) const { return values_.at(index); }
  const std::vector<AttrValue>& Values() const noexcept { return values_; }

 private:
  std::vector<AttrValue> values_;
};

}  // namespace ge
