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

// An attribute value as text, for signatures and messages: 3; 0.5 and 1.0
// (the shortest form that reads back, with Python's ".0"); true; "a\"b"
// (quoted and escaped as in JSON); float32 (a dtype's numpy name, GE's DT_
// name where there is none); tensor float32[2, 3]; [1, 2]; [[1], [2, 3]].
// Owned. Throws only std::bad_alloc.
std::string AttrValueText(const AttrValue& v);

}  // namespace ge

namespace gert {

// GE's read-only view of a list attribute (exe_graph/runtime/continuous_vector.h):
// GetSize() elements at GetData(). Borrowed from the RuntimeAttrs that handed it
// out and valid as long as that object lives; GetCapacity() equals GetSize()
// (nothing here grows a list).
template <typename T>
class TypedContinuousVector {
 public:
  TypedContinuousVector() = default;
  TypedContinuousVector(const T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  std::size_t GetSize() const noexcept { return size_; }
  std::size_t GetCapacity() const noexcept { return size_; }
  const T* GetData() const noexcept { return data_; }

 private:
  const T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace gert

namespace ge {

// Attribute values of one node, in the IR's attribute order (gert::RuntimeAttrs).
// Immutable once built; reading from several threads is safe.
class RuntimeAttrs {
 public:
  RuntimeAttrs() = default;
  explicit RuntimeAttrs(std::vector<AttrValue> values) : values_(std::move(values)) { IndexLists(); }
  // A copy indexes its own lists; a move keeps the views valid (the values'
  // buffers move with them).
  RuntimeAttrs(const RuntimeAttrs& other) : values_(other.values_) { IndexLists(); }
  RuntimeAttrs& operator=(const RuntimeAttrs& other) {
    if (this != &other) {
      values_ = other.values_;
      IndexLists();
    }
    return *this;
  }
  RuntimeAttrs(RuntimeAttrs&&) noexcept = default;
  RuntimeAttrs& operator=(RuntimeAttrs&&) noexcept = default;
  ~RuntimeAttrs() = default;

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
  // GE's list readers: a VT_LIST_INT / VT_LIST_FLOAT attribute as a
  // TypedContinuousVector; null when the index is out of range or the
  // attribute has another type. Borrowed like GetAttrPointer.
  const gert::TypedContinuousVector<int64_t>* GetListInt(std::size_t index) const noexcept {
    return index < values_.size() && std::holds_alternative<std::vector<int64_t>>(values_[index]) ? &int_lists_[index]
                                                                                                 : nullptr;
  }
  const gert::TypedContinuousVector<float>* GetListFloat(std::size_t index) const noexcept {
    return index < values_.size() && std::holds_alternative<std::vector<float>>(values_[index]) ? &float_lists_[index]
                                                                                               : nullptr;
  }
  const AttrValue& At(std::size_t index) const { return values_.at(index); }
  const std::vector<AttrValue>& Values() const noexcept { return values_; }

 private:
  void IndexLists() {
    int_lists_.assign(values_.size(), {});
    float_lists_.assign(values_.size(), {});
    for (std::size_t i = 0; i < values_.size(); ++i) {
      if (const auto* v = std::get_if<std::vector<int64_t>>(&values_[i])) int_lists_[i] = {v->data(), v->size()};
      if (const auto* v = std::get_if<std::vector<float>>(&values_[i])) float_lists_[i] = {v->data(), v->size()};
    }
  }

  std::vector<AttrValue> values_;
  // Views of the list values, by attribute index (empty views for the rest).
  std::vector<gert::TypedContinuousVector<int64_t>> int_lists_;
  std::vector<gert::TypedContinuousVector<float>> float_lists_;
};

}  // namespace ge
