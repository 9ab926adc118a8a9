// ge/engine/cpu_backend.h: running declared kernels on the host CPU.
//
// A kernel binary is an ELF shared object (bytes) exporting kernels with the
// C ABI  void kernel(uint32_t block_idx, uint32_t block_dim, const uint64_t* args).
// KernelCache loads each distinct binary once, from memory (memfd: no file is
// left behind) and resolves kernel names. BlockPool runs block_dim blocks of a
// kernel on a pool sized to the machine, without Python and without the GIL.
// A kernel that crashes (SIGSEGV incl. stack overflow, SIGBUS, SIGFPE, SIGILL,
// SIGABRT) while running a block, or while its binary is loaded (a crashing
// constructor), is reported as that kernel's failure. After such a crash the
// process is unreliable (the kernel may have held a lock, e.g. the heap's):
// the pool is abandoned, and callers should report the error and end the
// process without further clean-up (ge-run does). A kernel that calls exit()
// ends the process with status 70 and a message, never as a silent success.
// A kernel that never returns blocks its run: there is no watchdog.
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

// Fail-fast mode for tools: when `prefix` is non-null, a kernel crash is
// reported from the signal handler itself, with async-signal-safe calls only
// ("<prefix><label> crashed: signal SIGSEGV in block 3"), and the process exits
// with status 1 at once. Nothing is allocated after the crash, so a kernel that
// died holding the heap's lock cannot deadlock the report. `prefix` must stay
// valid for the process's life. Without it (the default, for embedders) the
// crash is returned as an error (see BlockPool::Run).
void SetKernelCrashExit(const char* prefix);

class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // The error of a binary whose constructors crashed while loading (in this
  // call, or in an earlier one of the cache, which then refuses to load).
  static KernelError CrashedWhileLoading(const std::string& what) {
    KernelError e(what);
    e.crashed_while_loading_ = true;
    return e;
  }
  // A binary crashed while loading: the process is unreliable (the loader's
  // lock may be held); report and end it without further clean-up.
  bool crashed_while_loading() const noexcept { return crashed_while_loading_; }

 private:
  bool crashed_while_loading_ = false;
};

// Thread-safe. Loaded binaries stay loaded until the cache is destroyed;
// resolved function pointers are valid until then.
class KernelCache {
 public:
  KernelCache() = default;
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // Throws KernelError: "kernel_bin is not an ELF shared object" (also for a
  // truncated file, another architecture, or an executable), "cannot load
  // kernel_bin: <dlerror>", "kernel_bin crashed while loading: signal ...",
  // "kernel 'name' not found in kernel_bin" (symbols of other libraries, such
  // as libc's, are never used). Resolve after a crash throws too.
  // `label` (e.g. "node 'n' (Op): kernel 'k'") names the kernel in fail-fast
  // reports of a constructor crash; it must stay valid during the call.
  CpuKernelFn Resolve(const std::string& bin, const std::string& kernel_name, const char* label = nullptr);
  std::size_t LoadedBinaries() const;

 private:
  struct Entry {
    std::string bytes;
    void* handle;
    int fd;  // the memfd stays open: glibc would otherwise reuse a handle for a recycled /proc/self/fd/N name
    std::string name;  // "/proc/self/fd/N", the object's name for the dynamic loader
  };
  mutable std::mutex mu_;
  bool poisoned_ = false;  // a binary crashed while loading
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
  // After a crash the pool is abandoned: Run returns as soon as the crash is
  // known (other blocks may be stuck on a lock the crashed one held), later
  // Runs fail, and the destructor does not wait for its threads.
  // `label` names the kernel in fail-fast reports; valid during the call.
  std::optional<std::string> Run(CpuKernelFn fn, uint32_t block_dim, const uint64_t* args, const char* label = nullptr);
  bool Abandoned() const noexcept;
  unsigned Threads() const noexcept { return threads_; }

  struct State;  // shared with the workers, so that an abandoned worker never outlives it

 private:
  std::mutex run_mu_;  // one Run at a time
  std::shared_ptr<State> st_;
  std::vector<std::thread> workers_;
  unsigned threads_ = 1;
};

}  // namespace ge
