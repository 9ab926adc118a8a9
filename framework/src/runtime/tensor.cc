// TensorDesc and Tensor: metadata plus owned or borrowed host memory.
#include "ge/runtime/tensor.h"

#include <atomic>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

namespace ge {

namespace {
std::atomic<TensorBufferSource> g_buffer_source{nullptr};
}  // namespace

void SetTensorBufferSource(TensorBufferSource source) noexcept { g_buffer_source.store(source); }
TensorBufferSource GetTensorBufferSource() noexcept { return g_buffer_source.load(); }

std::size_t TensorDesc::ByteSize() const noexcept {
  const int64_t n = shape.GetStorageShape().GetShapeSize();
  if (n < 0) return 0;
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(n), DataTypeSize(data_type), &bytes)) return 0;
  return bytes;
}

std::string TensorDesc::ToString() const {
  return DataTypeName(data_type) + shape.GetStorageShape().ToString();
}

Tensor Tensor::Allocate(const TensorDesc& desc) {
  const Shape& s = desc.shape.GetStorageShape();
  for (std::size_t i = 0; i < s.GetDimNum(); ++i) {
    if (s.GetDim(i) < 0) throw std::invalid_argument("cannot allocate a tensor with unknown dims " + s.ToString());
  }
  if (s.GetShapeSize() < 0) {
    throw std::invalid_argument("cannot allocate a tensor of shape " + s.ToString() + ": more than 2^63 elements");
  }
  if (DataTypeSize(desc.data_type) == 0) {
    throw std::invalid_argument("cannot allocate a tensor of dtype " + DataTypeName(desc.data_type));
  }
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(s.GetShapeSize()), DataTypeSize(desc.data_type), &bytes) ||
      bytes > (std::size_t{1} << 62)) {
    throw std::invalid_argument("cannot allocate a tensor of shape " + s.ToString() + " and dtype " +
                                DataTypeName(desc.data_type) + ": its size in bytes does not fit");
  }
  Tensor t;
  t.desc_ = desc;
  t.size_ = desc.ByteSize();
  constexpr std::size_t kAlign = 64;
  const std::size_t rounded = ((t.size_ + kAlign - 1) / kAlign) * kAlign;
  const std::size_t bytes_held = rounded == 0 ? kAlign : rounded;
  if (TensorBufferSource source = g_buffer_source.load()) {
    t.owner_ = source(bytes_held);
  }
  if (!t.owner_) {
    void* p = std::aligned_alloc(kAlign, bytes_held);
    if (p == nullptr) throw std::bad_alloc();
    t.owner_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  }
  void* p = t.owner_.get();
  std::memset(p, 0, bytes_held);
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

Tensor Tensor::Adopt(const TensorDesc& desc, void* addr, std::size_t size, std::shared_ptr<void> owner) {
  Tensor t;
  t.desc_ = desc;
  t.addr_ = addr;
  t.size_ = size;
  t.owner_ = std::move(owner);
  t.has_data_ = true;
  return t;
}

Tensor Tensor::Clone() const {
  Tensor t = Allocate(desc_);
  if (t.size_ != 0 && addr_ != nullptr) std::memcpy(t.addr_, addr_, std::min(t.size_, size_));
  return t;
}

Tensor Tensor::MetaOnly(const TensorDesc& desc) {
  Tensor t;
  t.desc_ = desc;
  t.read_only_ = true;
  return t;
}

}  // namespace ge
