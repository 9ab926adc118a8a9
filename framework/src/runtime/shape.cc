// Shape, ExpandDimsType: fixed-capacity value types.
#include "ge/runtime/shape.h"

#include <sstream>

namespace ge {

namespace {
void CheckRank(std::size_t n) {
  if (n > kMaxDimNum) {
    throw std::invalid_argument("shape has " + std::to_string(n) + " dims, more than the maximum rank " +
                                std::to_string(kMaxDimNum));
  }
}
}  // namespace

Shape::Shape(std::initializer_list<int64_t> dims) {
  CheckRank(dims.size());
  for (int64_t d : dims) dims_[dim_num_++] = d;
}

Shape::Shape(const std::vector<int64_t>& dims) {
  CheckRank(dims.size());
  for (int64_t d : dims) dims_[dim_num_++] = d;
}

int64_t Shape::GetDim(std::size_t idx) const {
  if (idx >= dim_num_) {
    throw std::out_of_range("dim index " + std::to_string(idx) + " out of range for rank " + std::to_string(dim_num_));
  }
  return dims_[idx];
}

void Shape::SetDim(std::size_t idx, int64_t v) {
  if (idx >= dim_num_) {
    throw std::out_of_range("dim index " + std::to_string(idx) + " out of range for rank " + std::to_string(dim_num_));
  }
  dims_[idx] = v;
}

Shape& Shape::AppendDim(int64_t v) {
  CheckRank(dim_num_ + 1);
  dims_[dim_num_++] = v;
  return *this;
}

void Shape::SetDimNum(std::size_t n) {
  CheckRank(n);
  for (std::size_t i = dim_num_; i < n; ++i) dims_[i] = 0;
  dim_num_ = n;
}

int64_t Shape::GetShapeSize() const noexcept {
  int64_t size = 1;
  for (std::size_t i = 0; i < dim_num_; ++i) {
    if (dims_[i] < 0) return -1;
    if (__builtin_mul_overflow(size, dims_[i], &size)) return -1;  // more than 2^63 elements
  }
  return size;
}

std::string Shape::ToString() const {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < dim_num_; ++i) os << (i ? ", " : "") << dims_[i];
  os << ']';
  return os.str();
}

bool Shape::operator==(const Shape& o) const noexcept {
  if (dim_num_ != o.dim_num_) return false;
  for (std::size_t i = 0; i < dim_num_; ++i) {
    if (dims_[i] != o.dims_[i]) return false;
  }
  return true;
}

ExpandDimsType::ExpandDimsType(const std::string& rule) {
  if (rule.size() > kMaxDimNum) {
    throw std::invalid_argument("expand dims rule '" + rule + "' is longer than the maximum rank " +
                                std::to_string(kMaxDimNum));
  }
  for (std::size_t i = 0; i < rule.size(); ++i) {
    if (rule[i] == '1') {
      mask_ |= (uint64_t{1} << i);
    } else if (rule[i] != '0') {
      throw std::invalid_argument("expand dims rule '" + rule + "' may only contain '0' and '1'");
    }
  }
  size_ = rule.size();
}

ExpandDimsType::ExpandDimsType(int64_t mask) {
  if (mask < 0 || mask >= (int64_t{1} << kMaxDimNum)) {
    throw std::invalid_argument("expand dims mask " + std::to_string(mask) + " must be in [0, " +
                                std::to_string((1 << kMaxDimNum) - 1) + "]");
  }
  mask_ = static_cast<uint64_t>(mask);
  size_ = 0;
  for (std::size_t i = 0; i < kMaxDimNum; ++i) {
    if ((mask_ >> i) & 1U) size_ = i + 1;
  }
}

void ExpandDimsType::SetExpandIndex(std::size_t index) {
  if (index >= size_) {
    throw std::out_of_range("expand index " + std::to_string(index) + " is out of range for a rule of full_size " +
                            std::to_string(size_));
  }
  mask_ |= uint64_t{1} << index;
}

std::string ExpandDimsType::ToString() const {
  std::string s(size_, '0');
  for (std::size_t i = 0; i < size_; ++i) {
    if (IsExpandIndex(i)) s[i] = '1';
  }
  return s;
}

void ExpandDimsType::Expand(const Shape& origin, Shape& out) const {
  if (size_ == 0) {
    out = origin;
    return;
  }
  std::size_t inserted = 0;
  for (std::size_t i = 0; i < size_; ++i) inserted += IsExpandIndex(i) ? 1 : 0;
  if (size_ - inserted != origin.GetDimNum()) {
    throw std::invalid_argument("expand dims rule '" + ToString() + "' does not fit a shape of rank " +
                                std::to_string(origin.GetDimNum()));
  }
  Shape result;
  std::size_t src = 0;
  for (std::size_t i = 0; i < size_; ++i) result.AppendDim(IsExpandIndex(i) ? 1 : origin.GetDim(src++));
  out = result;
}

}  // namespace ge
