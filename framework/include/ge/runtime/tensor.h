// ge/runtime/tensor.h: TensorDesc (metadata) and Tensor (metadata + host memory).
//
// A Tensor either owns its host buffer (shared, reference counted) or borrows
// memory that someone else owns; see the ownership notes on each constructor.
// Not thread-safe for concurrent mutation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ge/runtime/shape.h"
#include "ge/runtime/types.h"

namespace ge {

// Shape, format and dtype of a tensor, without data (gert::CompileTimeTensorDesc
// plus the shape). Owned value type.
struct TensorDesc {
  StorageShape shape;
  StorageFormat format;
  DataType data_type = DT_FLOAT;
  TensorPlacement placement = kOnHost;

  TensorDesc() = default;
  TensorDesc(const Shape& s, DataType dt) : shape(s), data_type(dt) {}
  // Bytes needed for the storage shape; 0 for unknown dims or sizeless dtypes.
  std::size_t ByteSize() const noexcept;
  std::string ToString() const;  // "float32[2, 3]"
  bool operator==(const TensorDesc& o) const noexcept {
    return shape == o.shape && format == o.format && data_type == o.data_type;
  }
};

class Tensor {
 public:
  Tensor() = default;

  // Allocates an owned, zero-filled, 64-byte aligned host buffer of
  // desc.ByteSize() bytes. Throws std::invalid_argument for unknown dims.
  static Tensor Allocate(const TensorDesc& desc);
  // Borrows `addr`: the caller keeps the memory alive and unmoved for the
  // Tensor's lifetime (and every copy of it). `size` is in bytes.
  static Tensor Borrow(const TensorDesc& desc, void* addr, std::size_t size, bool read_only = false);
  // Wraps `addr` (`size` bytes) whose lifetime `owner` manages: the memory
  // stays valid while any copy of the Tensor (or of `owner`) lives; the
  // owner's deleter releases it. How a process-isolated plugin's outputs,
  // which live in its worker's shared arena, become engine tensors
  // (share/docs/host-design.md, "Process isolation"). Never throws.
  static Tensor Adopt(const TensorDesc& desc, void* addr, std::size_t size, std::shared_ptr<void> owner);
  // Metadata only: no data (compile-time tensors); GetAddr() is null.
  static Tensor MetaOnly(const TensorDesc& desc);
  // The same buffer (and ownership), marked read-only: what an op that does not
  // declare the input as mutated receives. A guard for views (Python's
  // Tensor.data is read-only), not a sandbox: GetAddr() is still the address.
  Tensor ReadOnlyView() const {
    Tensor t = *this;
    t.read_only_ = true;
    return t;
  }
  // An owned copy of the data (and metadata), writable.
  Tensor Clone() const;

  const TensorDesc& Desc() const noexcept { return desc_; }
  TensorDesc& MutableDesc() noexcept { return desc_; }
  DataType GetDataType() const noexcept { return desc_.data_type; }
  const StorageShape& GetShape() const noexcept { return desc_.shape; }
  const Shape& GetOriginShape() const noexcept { return desc_.shape.GetOriginShape(); }
  const Shape& GetStorageShape() const noexcept { return desc_.shape.GetStorageShape(); }
  int64_t GetShapeSize() const noexcept { return desc_.shape.GetStorageShape().GetShapeSize(); }

  // GE's accessors (gert::Tensor): formats, placement, typed data.
  const StorageFormat& GetFormat() const noexcept { return desc_.format; }
  StorageFormat& MutableFormat() noexcept { return desc_.format; }
  Format GetOriginFormat() const noexcept { return desc_.format.GetOriginFormat(); }
  Format GetStorageFormat() const noexcept { return desc_.format.GetStorageFormat(); }
  void SetOriginFormat(Format f) noexcept { desc_.format.SetOriginFormat(f); }
  void SetStorageFormat(Format f) noexcept { desc_.format.SetStorageFormat(f); }
  const ExpandDimsType& GetExpandDimsType() const noexcept { return desc_.format.GetExpandDimsType(); }
  TensorPlacement GetPlacement() const noexcept { return desc_.placement; }
  // The data as T (null for a metadata-only tensor); borrowed like GetAddr().
  template <typename T>
  const T* GetData() const noexcept { return static_cast<const T*>(addr_); }
  template <typename T>
  T* GetData() noexcept { return static_cast<T*>(addr_); }

  void* GetAddr() const noexcept { return addr_; }
  std::size_t GetSize() const noexcept { return size_; }  // bytes
  bool HasData() const noexcept { return addr_ != nullptr || (size_ == 0 && has_data_); }
  bool IsReadOnly() const noexcept { return read_only_; }
  bool IsOwned() const noexcept { return static_cast<bool>(owner_); }
  // Shared ownership token of the buffer (null when borrowed or meta-only).
  const std::shared_ptr<void>& Owner() const noexcept { return owner_; }

  template <typename T>
  T* Data() const noexcept { return static_cast<T*>(addr_); }

 private:
  TensorDesc desc_;
  void* addr_ = nullptr;
  std::size_t size_ = 0;
  std::shared_ptr<void> owner_;
  bool read_only_ = false;
  bool has_data_ = false;
};

// Where Allocate takes its buffers from. The default is the heap
// (aligned_alloc). A host that runs plugins in worker processes installs a
// shared-memory arena, so tensors the engine allocates are visible to the
// workers without a copy (share/docs/host-design.md, "Process isolation").
// A source returns an owning pointer to at least `bytes` bytes (64-byte
// aligned; not necessarily zeroed), or null to fall back to the heap (arena
// full); it may be called from any thread at once. Process-wide: install it
// once, before tensors are allocated on other threads; it is never removed
// (buffers it handed out keep their own owners). Passing null restores the heap.
using TensorBufferSource = std::shared_ptr<void> (*)(std::size_t bytes);
void SetTensorBufferSource(TensorBufferSource source) noexcept;
TensorBufferSource GetTensorBufferSource() noexcept;

}  // namespace ge
