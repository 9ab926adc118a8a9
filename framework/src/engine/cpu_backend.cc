// CPU kernel backend: in-memory ELF loading, block pool, crash reporting.
#include "ge/engine/cpu_backend.h"

#include <csetjmp>
#include <csignal>
#include <cstring>
#include <dlfcn.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

namespace ge {

// ---- crash guard ---------------------------------------------------------------------
// While a pool thread runs a kernel block, fatal signals raised on that thread
// jump back to the block runner, which reports them. Signals on any other
// thread get the default action.
namespace {

thread_local sigjmp_buf t_jump;
thread_local volatile sig_atomic_t t_in_kernel = 0;
std::once_flag g_handlers_once;
constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

void OnFatalSignal(int sig) {
  if (t_in_kernel) {
    t_in_kernel = 0;
    siglongjmp(t_jump, sig);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void InstallHandlers() {
  std::call_once(g_handlers_once, [] {
    for (int sig : kSignals) {
      struct sigaction sa {};
      sa.sa_handler = OnFatalSignal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_NODEFER;
      sigaction(sig, &sa, nullptr);
    }
  });
}

// Runs one block; returns 0 or the signal that ended it.
int GuardedBlock(CpuKernelFn fn, uint32_t idx, uint32_t dim, const uint64_t* args) {
  const int sig = sigsetjmp(t_jump, 1);
  if (sig != 0) return sig;
  t_in_kernel = 1;
  fn(idx, dim, args);
  t_in_kernel = 0;
  return 0;
}

// "signal SIGSEGV (Segmentation fault) in block 3" (sigabbrev_np gives the name without "SIG").
std::string CrashText(int sig, uint32_t block) {
  const char* abbrev = sigabbrev_np(sig);
  return "signal " + (abbrev ? "SIG" + std::string(abbrev) : std::to_string(sig)) + " (" + strsignal(sig) +
         ") in block " + std::to_string(block);
}

unsigned DefaultThreads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return static_cast<unsigned>(CPU_COUNT(&set));
  const unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

}  // namespace

// ---- KernelCache -------------------------------------------------------------------------

KernelCache::~KernelCache() {
  for (auto& kv : loaded_) {
    dlclose(kv.second.handle);
    ::close(kv.second.fd);
  }
}

std::size_t KernelCache::LoadedBinaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loaded_.size();
}

CpuKernelFn KernelCache::Resolve(const std::string& bin, const std::string& kernel_name) {
  if (bin.size() < 4 || std::memcmp(bin.data(), "\x7f" "ELF", 4) != 0) {
    throw KernelError("kernel_bin is not an ELF shared object (" + std::to_string(bin.size()) +
                      " bytes without the ELF magic)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::size_t h = std::hash<std::string>{}(bin);
  void* handle = nullptr;
  for (auto [it, end] = loaded_.equal_range(h); it != end; ++it) {
    if (it->second.bytes == bin) handle = it->second.handle;
  }
  if (handle == nullptr) {
    // Load from memory: a sealed anonymous file, opened through /proc.
    const int fd = memfd_create("ge-kernel", MFD_CLOEXEC);
    if (fd < 0) throw KernelError(std::string("cannot load kernel_bin: memfd_create: ") + std::strerror(errno));
    std::size_t off = 0;
    while (off < bin.size()) {
      const ssize_t n = ::write(fd, bin.data() + off, bin.size() - off);
      if (n <= 0) {
        ::close(fd);
        throw KernelError(std::string("cannot load kernel_bin: write: ") + std::strerror(errno));
      }
      off += static_cast<std::size_t>(n);
    }
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    dlerror();
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      ::close(fd);
      const char* e = dlerror();
      throw KernelError(std::string("cannot load kernel_bin as a shared object: ") + (e ? e : "unknown error"));
    }
    loaded_.emplace(h, Entry{bin, handle, fd});
  }
  dlerror();
  void* sym = dlsym(handle, kernel_name.c_str());
  if (sym == nullptr) {
    throw KernelError("kernel '" + kernel_name + "' not found in kernel_bin (" + std::to_string(bin.size()) + " bytes)");
  }
  return reinterpret_cast<CpuKernelFn>(sym);
}

// ---- BlockPool -------------------------------------------------------------------------------

BlockPool::BlockPool(unsigned threads) {
  InstallHandlers();
  const unsigned n = threads ? threads : DefaultThreads();
  for (unsigned i = 1; i < n; ++i) workers_.emplace_back([this] { Worker(); });
}

BlockPool::~BlockPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void BlockPool::RunBlocks() {
  for (;;) {
    const uint32_t idx = next_.fetch_add(1);
    if (idx >= block_dim_) break;
    const int sig = GuardedBlock(fn_, idx, block_dim_, args_);
    if (sig != 0) {
      std::lock_guard<std::mutex> lock(crash_mu_);
      if (!crash_) crash_ = CrashText(sig, idx);
    }
    finished_.fetch_add(1);
  }
}

void BlockPool::Worker() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++active_workers_;
    }
    RunBlocks();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --active_workers_;
    }
    done_cv_.notify_all();
  }
}

std::optional<std::string> BlockPool::Run(CpuKernelFn fn, uint32_t block_dim, const uint64_t* args) {
  std::lock_guard<std::mutex> run_lock(run_mu_);
  crash_.reset();
  if (block_dim == 1 || workers_.empty()) {
    // No hand-off: the calling thread runs every block (the common small case
    // stays well under a microsecond of host overhead).
    for (uint32_t i = 0; i < block_dim; ++i) {
      const int sig = GuardedBlock(fn, i, block_dim, args);
      if (sig != 0) {
        return CrashText(sig, i);
      }
    }
    return std::nullopt;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = fn;
    block_dim_ = block_dim;
    args_ = args;
    next_.store(0);
    finished_.store(0);
    ++generation_;
  }
  cv_.notify_all();
  RunBlocks();
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return finished_.load() >= block_dim_ && active_workers_ == 0; });
  }
  std::lock_guard<std::mutex> lock(crash_mu_);
  return crash_;
}

}  // namespace ge
