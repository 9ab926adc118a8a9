// shared_arena.cc: memfd mappings and the Boost.Interprocess allocator over them.
#include "shared_arena.h"

#include "ge/runtime/tensor.h"

#include <boost/interprocess/managed_external_buffer.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bi = boost::interprocess;

namespace ge::host {

namespace {

constexpr std::size_t kAlign = 64;
// Blocks at least this big give their pages back when freed (a freed block's
// tmpfs pages would otherwise stay resident).
constexpr std::size_t kReleaseAtLeast = std::size_t{1} << 20;

std::runtime_error SysError(const std::string& what) {
  return std::runtime_error(what + " failed: " + std::strerror(errno));
}

}  // namespace

std::shared_ptr<SharedMapping> SharedMapping::Create(const std::string& name, std::size_t capacity) {
  const int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) throw SysError("memfd_create(" + name + ")");
  if (::ftruncate(fd, static_cast<off_t>(capacity)) != 0) {
    auto e = SysError("ftruncate of the shared arena to " + std::to_string(capacity) + " bytes");
    ::close(fd);
    throw e;
  }
  return Map(fd);
}

std::size_t ArenaCapacity(std::size_t wanted) {
  struct rlimit as {};
  if (::getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return wanted;
  // A worker maps two arenas (the engine's and its own) beside its Python:
  // each takes at most an eighth of the limit.
  const std::size_t budget = static_cast<std::size_t>(as.rlim_cur / 8);
  std::size_t cap = kMinArenaBytes;
  while (cap * 2 <= budget && cap * 2 <= wanted) cap *= 2;
  return std::min(cap, wanted);
}

std::shared_ptr<SharedMapping> SharedMapping::CreateFitting(const std::string& name, std::size_t wanted) {
  const int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) throw SysError("memfd_create(" + name + ")");
  for (std::size_t capacity = ArenaCapacity(wanted);; capacity /= 2) {
    std::string failed;
    int err = 0;
    if (::ftruncate(fd, static_cast<off_t>(capacity)) != 0) {
      err = errno;
      failed = "ftruncate of the shared arena to " + std::to_string(capacity) + " bytes";
    } else {
      void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
      if (p != MAP_FAILED) return std::shared_ptr<SharedMapping>(new SharedMapping(fd, static_cast<uint8_t*>(p), capacity));
      err = errno;
      failed = "mmap of a shared arena of " + std::to_string(capacity) + " bytes";
    }
    // Address space is what runs out (ENOMEM from mmap): a smaller arena
    // still works, tensors that do not fit go through the heap.
    if (err == ENOMEM && capacity / 2 >= kMinArenaBytes) continue;
    ::close(fd);
    std::string limit;
    struct rlimit as {};
    if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
      limit = " (the address-space limit, ulimit -v / RLIMIT_AS, is " + std::to_string(as.rlim_cur) +
              " bytes; a process plugin needs room for two shared arenas of at least " + std::to_string(kMinArenaBytes) +
              " bytes beside its Python)";
    }
    throw std::runtime_error("cannot make the shared arena " + name + ": " + failed + " failed: " + std::strerror(err) +
                             limit);
  }
}

std::shared_ptr<SharedMapping> SharedMapping::Map(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    auto e = SysError("fstat of a shared arena");
    ::close(fd);
    throw e;
  }
  const std::size_t size = static_cast<std::size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    auto e = SysError("mmap of a shared arena of " + std::to_string(size) + " bytes");
    ::close(fd);
    throw e;
  }
  return std::shared_ptr<SharedMapping>(new SharedMapping(fd, static_cast<uint8_t*>(p), size));
}

SharedMapping::~SharedMapping() {
  ::munmap(base_, size_);
  ::close(fd_);
}

bool SharedMapping::Contains(const void* p, std::size_t n) const noexcept {
  const auto* b = static_cast<const uint8_t*>(p);
  return b >= base_ && b <= base_ + size_ && n <= static_cast<std::size_t>(base_ + size_ - b);
}

void SharedMapping::Release(void* p, std::size_t n) noexcept {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t begin = (OffsetOf(p) + page - 1) / page * page;
  const uint64_t end = (OffsetOf(p) + n) / page * page;
  if (end > begin) {
    (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(begin),
                      static_cast<off_t>(end - begin));
  }
}

// managed_external_buffer's allocator is rbtree_best_fit<null_mutex_family>:
// it takes no lock of its own, so every use of it is under `mu` (only the
// process that created the arena allocates in it, so a process-local mutex
// is enough; an interprocess one in the buffer could be left locked by a
// crashed worker).
struct SharedArena::Impl {
  bi::managed_external_buffer segment;
  std::mutex mu;
};

SharedArena::SharedArena(std::shared_ptr<SharedMapping> mapping)
    : mapping_(std::move(mapping)),
      impl_(new Impl{bi::managed_external_buffer(bi::create_only, mapping_->base(), mapping_->size()), {}}) {}

SharedArena::~SharedArena() = default;

std::shared_ptr<void> SharedArena::Allocate(std::size_t bytes) {
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    p = impl_->segment.allocate_aligned(bytes == 0 ? kAlign : bytes, kAlign, std::nothrow);
  }
  if (p == nullptr) return nullptr;
  std::shared_ptr<SharedArena> self = shared_from_this();
  return std::shared_ptr<void>(p, [self, bytes](void* q) { self->Free(q, bytes); });
}

void SharedArena::Free(void* p, std::size_t bytes) noexcept {
  if (bytes >= kReleaseAtLeast) mapping_->Release(p, bytes);
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->segment.deallocate(p);
}

std::size_t SharedArena::FreeBytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->segment.get_free_memory();
}

namespace {

std::shared_ptr<SharedArena>& SourceArena() {
  static std::shared_ptr<SharedArena> arena;
  return arena;
}

std::shared_ptr<void> FromSourceArena(std::size_t bytes) {
  const std::shared_ptr<SharedArena>& a = SourceArena();
  return a ? a->Allocate(bytes) : nullptr;
}

}  // namespace

void InstallArenaAsTensorSource(std::shared_ptr<SharedArena> arena) {
  SourceArena() = std::move(arena);
  SetTensorBufferSource(&FromSourceArena);
}

std::shared_ptr<SharedArena> EngineArena() {
  static std::once_flag once;
  static std::shared_ptr<SharedArena> arena;
  std::call_once(once, [] {
    arena = std::make_shared<SharedArena>(SharedMapping::CreateFitting("ge-engine-arena", kEngineArenaBytes));
    InstallArenaAsTensorSource(arena);
  });
  return arena;
}

}  // namespace ge::host
