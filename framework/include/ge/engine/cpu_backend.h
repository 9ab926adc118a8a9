// ge/engine/cpu_backend.h: running declared kernels on the host CPU.
//
// A kernel binary is an ELF shared object (bytes) exporting kernels with the
// C ABI  void kernel(uint32_t block_idx, uint32_t block_dim, const uint64_t* args).
// KernelCache loads each distinct binary once, from memory (memfd: no file is
// left behind) and resolves kernel names. BlockPool runs block_dim blocks of a
// kernel on a pool sized to the machine, without Python and without the GIL.
// A kernel that crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) while running
// on a pool thread is reported as that kernel's failure where the process can
// survive it; the kernel's memory effects are undefined.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ge {

using CpuKernelFn = void (*)(uint32_t block_idx, uint32_t block_dim, const uint64_t* args);

class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thread-safe. Loaded binaries stay loaded until the cache is destroyed;
// resolved function pointers are valid until then.
class KernelCache {
 public:
  KernelCache() = default;
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // Throws KernelError: "kernel_bin is not an ELF shared object", "cannot load
  // kernel_bin: <dlerror>", "kernel 'name' not found in kernel_bin".
  CpuKernelFn Resolve(const std::string& bin, const std::string& kernel_name);
  std::size_t LoadedBinaries() const;

 private:
  struct Entry {
    std::string bytes;
    void* handle;
    int fd;  // the memfd stays open: glibc would otherwise reuse a handle for a recycled /proc/self/fd/N name
  };
  mutable std::mutex mu_;
  std::multimap<std::size_t, Entry> loaded_;  // by hash of the bytes
};

// Runs blocks on worker threads; the calling thread takes part. Thread-safe:
// concurrent Run calls are serialized.
class BlockPool {
 public:
  explicit BlockPool(unsigned threads = 0);  // 0: one per CPU of the affinity mask
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // Runs fn(block_idx, block_dim, args) for every block; returns nullopt, or
  // the description of a crash ("signal SIGSEGV (Segmentation fault) in block 3").
  std::optional<std::string> Run(CpuKernelFn fn, uint32_t block_dim, const uint64_t* args);
  unsigned Threads() const noexcept { return static_cast<unsigned>(workers_.size()) + 1; }

 private:
  void Worker();
  void RunBlocks();

  std::mutex run_mu_;  // one Run at a time
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
  uint64_t generation_ = 0;
  // The current job.
  CpuKernelFn fn_ = nullptr;
  uint32_t block_dim_ = 0;
  const uint64_t* args_ = nullptr;
  std::atomic<uint32_t> next_{0};
  std::atomic<uint32_t> finished_{0};
  unsigned active_workers_ = 0;
  std::mutex crash_mu_;
  std::optional<std::string> crash_;
};

}  // namespace ge
