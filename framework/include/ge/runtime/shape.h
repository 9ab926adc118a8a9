// ge/runtime/shape.h: Shape, StorageShape, StorageFormat, ExpandDimsType.
//
// Value types with no heap allocation (fixed maximum rank, as gert::Shape).
// Not thread-safe for concurrent mutation; concurrent reads are fine.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "ge/runtime/types.h"

namespace ge {

// Maximum rank of a Shape (gert::Shape::kMaxDimNum).
inline constexpr std::size_t kMaxDimNum = 8;

// A tensor shape: up to kMaxDimNum dims of int64 elements each. A rank-0 shape is
// a scalar (size 1).
class Shape {
 public:
  Shape() = default;
  // Throws std::invalid_argument when dims.size() > kMaxDimNum.
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);

  std::size_t GetDimNum() const noexcept { return dim_num_; }
  // Throws std::out_of_range for idx >= GetDimNum().
  int64_t GetDim(std::size_t idx) const;
  void SetDim(std::size_t idx, int64_t v);
  // Throws std::invalid_argument when the shape already has kMaxDimNum dims.
  Shape& AppendDim(int64_t v);
  void SetDimNum(std::size_t n);  // new dims are 0; throws past kMaxDimNum
  bool IsScalar() const noexcept { return dim_num_ == 0; }
  void SetScalar() noexcept { dim_num_ = 0; }
  // Product of the dims (1 for a scalar). Negative (unknown) dims, or a product
  // that does not fit int64, give -1.
  int64_t GetShapeSize() const noexcept;
  std::vector<int64_t> Dims() const { return {dims_.begin(), dims_.begin() + dim_num_}; }
  std::string ToString() const;  // "[2, 3]"

  bool operator==(const Shape& o) const noexcept;
  bool operator!=(const Shape& o) const noexcept { return !(*this == o); }

 private:
  std::array<int64_t, kMaxDimNum> dims_{};
  std::size_t dim_num_ = 0;
};

// Origin (logical) and storage (physical) shapes of a tensor.
class StorageShape {
 public:
  StorageShape() = default;
  StorageShape(const Shape& origin, const Shape& storage) : origin_(origin), storage_(storage) {}
  explicit StorageShape(const Shape& both) : origin_(both), storage_(both) {}

  const Shape& GetOriginShape() const noexcept { return origin_; }
  const Shape& GetStorageShape() const noexcept { return storage_; }
  Shape& MutableOriginShape() noexcept { return origin_; }
  Shape& MutableStorageShape() noexcept { return storage_; }

  bool operator==(const StorageShape& o) const noexcept { return origin_ == o.origin_ && storage_ == o.storage_; }

 private:
  Shape origin_;
  Shape storage_;
};

// How the origin shape is padded to the storage rank, GE's ExpandDimsType: a rule
// string of '0'/'1' characters, one per storage dim, '1' where a dim of size 1 is
// inserted ("1001"), kept as a bit mask. Rule strings longer than kMaxDimNum or
// with other characters are rejected with std::invalid_argument.
class ExpandDimsType {
 public:
  ExpandDimsType() = default;
  explicit ExpandDimsType(const std::string& rule);
  explicit ExpandDimsType(int64_t mask);  // throws for negative / too wide masks

  std::size_t GetRuleSize() const noexcept { return size_; }
  bool IsExpandIndex(std::size_t index) const noexcept { return index < size_ && ((mask_ >> index) & 1U) != 0; }
  uint64_t GetMask() const noexcept { return mask_; }
  // Marks `index` (< GetRuleSize()) as an inserted axis (GE's SetExpandIndex).
  // Throws std::out_of_range for an index past the rule.
  void SetExpandIndex(std::size_t index);
  std::string ToString() const;  // the rule string, "" when no rule is set
  // Applies the rule to `origin`, writing the expanded shape to `out`.
  // Throws std::invalid_argument when the rule does not fit origin's rank.
  void Expand(const Shape& origin, Shape& out) const;

  bool operator==(const ExpandDimsType& o) const noexcept { return mask_ == o.mask_ && size_ == o.size_; }

 private:
  uint64_t mask_ = 0;
  std::size_t size_ = 0;
};

// Origin and storage formats plus the expand-dims rule.
class StorageFormat {
 public:
  StorageFormat() = default;
  StorageFormat(Format origin, Format storage, ExpandDimsType expand = {})
      : origin_(origin), storage_(storage), expand_(expand) {}

  Format GetOriginFormat() const noexcept { return origin_; }
  Format GetStorageFormat() const noexcept { return storage_; }
  const ExpandDimsType& GetExpandDimsType() const noexcept { return expand_; }
  ExpandDimsType& MutableExpandDimsType() noexcept { return expand_; }
  void SetOriginFormat(Format f) noexcept { origin_ = f; }
  void SetStorageFormat(Format f) noexcept { storage_ = f; }
  void SetExpandDimsType(const ExpandDimsType& e) noexcept { expand_ = e; }

  bool operator==(const StorageFormat& o) const noexcept {
    return origin_ == o.origin_ && storage_ == o.storage_ && expand_ == o.expand_;
  }

 private:
  Format origin_ = FORMAT_ND;
  Format storage_ = FORMAT_ND;
  ExpandDimsType expand_;
};

}  // namespace ge
