// TensorDesc and Tensor: metadata plus owned or borrowed host memory.
#include "ge/runtime/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace ge {

std::size_t TensorDesc::ByteSize() const noexcept {
  const int64_t n = shape.GetStorageShape().GetShapeSize();
  if (n < 0) return 0;
  return static_cast<std::size_t>(n) * DataTypeSize(data_type);
}

std::string TensorDesc::ToString() const {
  return DataTypeName(data_type) + shape.GetStorageShape().ToString();
}

Tensor Tensor::Allocate(const TensorDesc& desc) {
  if (desc.shape.GetStorageShape().GetShapeSize() < 0) {
    throw std::invalid_argument("cannot allocate a tensor with unknown dims " + desc.shape.GetStorageShape().ToString());
  }
  if (DataTypeSize(desc.data_type) == 0) {
    throw std::invalid_argument("cannot allocate a tensor of dtype " + DataTypeName(desc.data_type));
  }
  Tensor t;
  t.desc_ = desc;
  t.size_ = desc.ByteSize();
  constexpr std::size_t kAlign = 64;
  const std::size_t rounded = ((t.size_ + kAlign - 1) / kAlign) * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded == 0 ? kAlign : rounded);
  t.owner_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.addr_ = p;
  t.has_data_ = true;
  return t;
}

Tensor Tensor::Borrow(const TensorDesc& desc, void* addr, std::size_t size, bool read_only) {
  Tensor t;
  t.desc_ = desc;
  t.addr_ = addr;
  t.size_ = size;
  t.read_only_ = read_only;
  t.has_data_ = true;
  return t;
}

Tensor Tensor::MetaOnly(const TensorDesc& desc) {
  Tensor t;
  t.desc_ = desc;
  t.read_only_ = true;
  return t;
}

}  // namespace ge
