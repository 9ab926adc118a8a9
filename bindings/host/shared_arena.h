// shared_arena.h: memfd-backed shared memory both the engine and its plugin workers map, and the allocator over it.
//
// A SharedMapping is one memfd, mapped read-write, of a fixed capacity:
// sparse (pages cost memory only once touched). A SharedArena allocates
// 64-byte aligned blocks in a mapping with Boost.Interprocess's
// managed_external_buffer (a best-fit allocator whose bookkeeping lives in the
// buffer itself; a well-kept Debian library instead of an allocator of ours).
// Only the process that created an arena allocates in it; the other side
// addresses its blocks by offset. share/docs/host-design.md, "Process
// isolation".
//
// Thread-safety: Allocate, FreeBytes and the deleters may run on any thread
// at once (the arena's mutex serializes the allocator, which has none). Lifetime: a mapping stays mapped while
// any SharedMapping reference lives; every block an arena hands out holds the
// arena (and so its mapping) alive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ge::host {

class SharedMapping {
 public:
  // A new memfd named `name` of `capacity` bytes, mapped. Throws
  // std::runtime_error naming the failed call (memfd_create, ftruncate, mmap).
  static std::shared_ptr<SharedMapping> Create(const std::string& name, std::size_t capacity);
  // The same for an arena of up to `wanted` bytes: ArenaCapacity(wanted),
  // halved while mmap runs out of address space (ENOMEM), down to
  // kMinArenaBytes. Throws std::runtime_error naming the call and, when one
  // is set, the address-space limit.
  static std::shared_ptr<SharedMapping> CreateFitting(const std::string& name, std::size_t wanted);
  // Maps `fd` (taking ownership of it) at its whole size. Throws
  // std::runtime_error naming the failed call.
  static std::shared_ptr<SharedMapping> Map(int fd);
  ~SharedMapping();
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;

  uint8_t* base() const noexcept { return base_; }
  std::size_t size() const noexcept { return size_; }
  int fd() const noexcept { return fd_; }
  // True when [p, p + n) lies inside the mapping.
  bool Contains(const void* p, std::size_t n) const noexcept;
  uint64_t OffsetOf(const void* p) const noexcept { return static_cast<uint64_t>(static_cast<const uint8_t*>(p) - base_); }
  // Gives the pages of [p, p + n) back to the kernel (they read as zeros
  // afterwards); only whole pages inside the range. Never fails loudly.
  void Release(void* p, std::size_t n) noexcept;

 private:
  SharedMapping(int fd, uint8_t* base, std::size_t size) : fd_(fd), base_(base), size_(size) {}
  int fd_;
  uint8_t* base_;
  std::size_t size_;
};

class SharedArena : public std::enable_shared_from_this<SharedArena> {
 public:
  // Lays an empty allocator over `mapping` (which it keeps).
  explicit SharedArena(std::shared_ptr<SharedMapping> mapping);
  ~SharedArena();
  // An owning pointer to `bytes` bytes (64-byte aligned, not zeroed) whose
  // deleter frees the block; null when the arena has no room.
  std::shared_ptr<void> Allocate(std::size_t bytes);
  const std::shared_ptr<SharedMapping>& mapping() const noexcept { return mapping_; }
  // Bytes free in the arena now.
  std::size_t FreeBytes() const;

 private:
  void Free(void* p, std::size_t bytes) noexcept;
  struct Impl;
  std::shared_ptr<SharedMapping> mapping_;
  std::unique_ptr<Impl> impl_;
};

// Capacity of the engine's arena and of each worker's (sparse; a tensor that
// does not fit is allocated on the heap and copied once when it crosses).
inline constexpr std::size_t kEngineArenaBytes = std::size_t{1} << 32;
inline constexpr std::size_t kWorkerArenaBytes = std::size_t{1} << 32;
// The smallest arena made: below it every tensor would take the heap path.
inline constexpr std::size_t kMinArenaBytes = std::size_t{1} << 24;
// The capacity an arena of up to `wanted` bytes gets: `wanted`, or under an
// address-space limit (RLIMIT_AS, `ulimit -v`, as batch schedulers set) the
// largest power of two up to an eighth of it (a worker maps two arenas beside
// its Python), at least kMinArenaBytes. Thread-safe.
std::size_t ArenaCapacity(std::size_t wanted);

// The engine's arena, created on first call and installed as Tensor's buffer
// source (ge::SetTensorBufferSource) for the rest of the process: every
// tensor the engine allocates from then on is visible to workers. Throws
// std::runtime_error when the memfd cannot be made.
std::shared_ptr<SharedArena> EngineArena();

// Makes `arena` the buffer source of this process's Tensor::Allocate (a
// worker's own arena). Process-wide; call once at worker start.
void InstallArenaAsTensorSource(std::shared_ptr<SharedArena> arena);

}  // namespace ge::host
