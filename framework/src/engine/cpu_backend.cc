// CPU kernel backend: in-memory ELF loading, block pool, crash reporting.
#include "ge/engine/cpu_backend.h"

#include "ge/crash_report.h"

#include <cxxabi.h>

#include <csetjmp>
#include <exception>
#include <string>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

namespace ge {

// ---- crash guard ---------------------------------------------------------------------
// While a thread runs kernel code (a block, or a binary's constructors during
// dlopen), fatal signals raised on that thread jump back to the guard, which
// reports them. Signals elsewhere go to the handler that was installed before
// ours (the engine's, or the default action). Each guarded thread has an
// alternate signal stack, so a kernel's stack overflow is reported too.
namespace {

thread_local sigjmp_buf t_jump;
thread_local volatile sig_atomic_t t_in_kernel = 0;
thread_local const char* t_label = nullptr;  // the kernel being run, for fail-fast reports
thread_local uint64_t t_block = 0;
// What the guarded code on this thread does, set by Guarded's caller (a plain
// thread-local: read by the signal handler).
enum class GuardedPhase { kRunningBlock, kLoadingBinary };
thread_local GuardedPhase t_phase = GuardedPhase::kRunningBlock;
std::atomic<const char*> g_crash_exit_prefix{nullptr};
std::atomic<const char*> g_report_prefix{nullptr};  // InstallCrashReport
std::atomic<const char*> g_report_hint{nullptr};
// CrashBreadcrumb: set and restored around every plugin callback, so the
// initial-exec TLS model (an offset from the thread pointer, no __tls_get_addr
// call; also safe to read in the signal handler); nine bytes fit the static TLS
// block glibc keeps for libraries loaded with dlopen.
thread_local const char* t_breadcrumb __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_breadcrumb_loading __attribute__((tls_model("initial-exec"))) = false;

// Async-signal-safe output: write(2) only, no allocation, no locale.
void SafeWrite(const char* s) {
  if (s != nullptr) (void)!::write(STDERR_FILENO, s, std::strlen(s));
}
void SafeWriteNumber(uint64_t v) {
  char buf[24];
  int i = sizeof(buf);
  buf[--i] = '\0';
  do {
    buf[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && i > 0);
  SafeWrite(buf + i);
}
std::once_flag g_handlers_once;
constexpr int kExitWhileLoadingCode = 1;  // exit(0) while loading: never a success
constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_previous[NSIG];
std::atomic<int> g_kernels_running{0};  // threads inside kernel code (for the exit() guard)

// One report per process: a terminate report (OnTerminate) stands for the
// SIGABRT that follows it.
std::atomic<int> g_reported{0};
std::terminate_handler g_previous_terminate = nullptr;

// std::terminate while loading (a C++ exception escaping a library's static
// constructor, which the dynamic loader cannot pass on): says which exception
// before the abort. Not a signal handler: it may allocate.
[[noreturn]] void OnTerminate() {
  const char* prefix = g_report_prefix.load();
  if (prefix != nullptr && t_breadcrumb != nullptr && t_breadcrumb_loading) {
    const std::string what = ge::DescribeCurrentException();
    if (!what.empty() && g_reported.exchange(1) == 0) {
      const std::string line = std::string(prefix) + "C++ exception " + what + " escaped while " + t_breadcrumb + "\n";
      (void)!::write(STDERR_FILENO, line.data(), line.size());
      if (const char* hint = g_report_hint.load()) {
        SafeWrite(hint);
        SafeWrite("\n");
      }
    }
  }
  if (g_previous_terminate != nullptr) g_previous_terminate();
  std::abort();
}

void OnFatalSignal(int sig) {
  if (t_in_kernel) {
    if (const char* prefix = g_crash_exit_prefix.load()) {
      // One report: a second block crashing at the same time waits for the exit.
      static std::atomic<int> reporting{0};
      if (reporting.exchange(1) != 0) {
        for (;;) ::pause();
      }
      const bool loading = t_phase == GuardedPhase::kLoadingBinary;
      SafeWrite(prefix);
      SafeWrite(t_label ? t_label : "a kernel");
      SafeWrite(loading ? " crashed while loading: signal SIG" : " crashed: signal SIG");
      const char* abbrev = sigabbrev_np(sig);
      SafeWrite(abbrev ? abbrev : "?");
      if (!loading) {
        SafeWrite(" in block ");
        SafeWriteNumber(t_block);
      }
      SafeWrite("\n");
      _exit(1);
    }
    t_in_kernel = 0;
    siglongjmp(t_jump, sig);
  }
  if (const char* prefix = g_report_prefix.load()) {
    if (g_reported.exchange(1) == 0) {
      const char* abbrev = sigabbrev_np(sig);
      SafeWrite(prefix);
      SafeWrite("fatal signal SIG");
      SafeWrite(abbrev ? abbrev : "?");
      if (const char* what = t_breadcrumb) {
        SafeWrite(" while ");
        SafeWrite(what);
      }
      SafeWrite("\n");
      if (const char* hint = g_report_hint.load(); hint != nullptr && t_breadcrumb != nullptr && t_breadcrumb_loading) {
        SafeWrite(hint);
        SafeWrite("\n");
      }
    }
  }
  sigaction(sig, &g_previous[sig], nullptr);  // chain: the previous handler or the default action
  raise(sig);
}

// A kernel (or a binary's constructor) calling exit() would otherwise end the
// process looking like a success.
void ExitGuard() {
  if (g_kernels_running.load() > 0) {
    static const char kMsg[] = "ge: a kernel called exit() while running; the run is aborted\n";
    (void)!::write(STDERR_FILENO, kMsg, sizeof(kMsg) - 1);
    _exit(70);
  }
}

// A plugin or op library calling exit() while it is loaded (its static
// constructors, its module code) would otherwise end the process with the
// code it chose, 0 included, reporting nothing (ge/crash_report.h). Runs on
// the exiting thread, whose breadcrumb names what it was loading.
void ExitWhileLoading(int status, void*) {
  const char* what = t_breadcrumb;
  if (what == nullptr || !t_breadcrumb_loading) return;
  static const char kLoading[] = "loading ";
  if (std::strncmp(what, kLoading, sizeof(kLoading) - 1) == 0) what += sizeof(kLoading) - 1;
  const char* prefix = g_report_prefix.load();
  SafeWrite(prefix != nullptr ? prefix : "ge: error: ");
  SafeWrite(what);
  SafeWrite(" called exit(");
  if (status < 0) SafeWrite("-");
  SafeWriteNumber(status < 0 ? -static_cast<int64_t>(status) : status);
  SafeWrite(") while loading\n");
  _exit(status != 0 ? status : kExitWhileLoadingCode);
}

void InstallHandlers() {
  std::call_once(g_handlers_once, [] {
    for (int sig : kSignals) {
      struct sigaction sa {};
      sa.sa_handler = OnFatalSignal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_NODEFER | SA_ONSTACK;
      sigaction(sig, &sa, &g_previous[sig]);
    }
    g_previous_terminate = std::set_terminate(OnTerminate);
    std::atexit(ExitGuard);
    ::on_exit(ExitWhileLoading, nullptr);  // glibc: unlike atexit, it is given exit()'s status
  });
}

// The alternate signal stack a guarded thread needs to report a kernel's stack
// overflow. A thread that already has one (an embedding program's, or a
// sanitizer's) keeps it; otherwise ours is installed on first use and, at the
// thread's exit, the previous setting is restored and ours freed.
class AltStack {
 public:
  void Ensure() {
    if (checked_) return;
    checked_ = true;
    stack_t current{};
    if (sigaltstack(nullptr, &current) != 0 || !(current.ss_flags & SS_DISABLE)) return;  // one is set: keep it
    constexpr std::size_t kSize = 1 << 16;
    mem_ = std::malloc(kSize);
    if (mem_ == nullptr) return;
    stack_t ss{};
    ss.ss_sp = mem_;
    ss.ss_size = kSize;
    if (sigaltstack(&ss, &previous_) != 0) {
      std::free(mem_);
      mem_ = nullptr;
    }
  }
  ~AltStack() {
    if (mem_ == nullptr) return;
    if (sigaltstack(&previous_, nullptr) == 0) std::free(mem_);  // else still in use: leak rather than free it
  }

 private:
  bool checked_ = false;
  void* mem_ = nullptr;
  stack_t previous_{};
};
thread_local AltStack t_altstack;

void EnsureAltStack() { t_altstack.Ensure(); }

// Runs f() guarded; returns 0 or the signal that ended it. `phase` says what
// f does (a fail-fast report names a crash while loading as such).
template <typename F>
int Guarded(F&& f, GuardedPhase phase, const char* label = nullptr, uint64_t block = 0) {
  EnsureAltStack();
  t_phase = phase;
  t_label = label;
  t_block = block;
  g_kernels_running.fetch_add(1);
  const int sig = sigsetjmp(t_jump, 1);
  if (sig != 0) {
    g_kernels_running.fetch_sub(1);
    return sig;
  }
  t_in_kernel = 1;
  f();
  t_in_kernel = 0;
  g_kernels_running.fetch_sub(1);
  return 0;
}

// "signal SIGSEGV (Segmentation fault)" (sigabbrev_np gives the name without "SIG").
std::string SignalText(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return "signal " + (abbrev ? "SIG" + std::string(abbrev) : std::to_string(sig)) + " (" + strsignal(sig) + ")";
}

std::string CrashText(int sig, uint64_t block) { return SignalText(sig) + " in block " + std::to_string(block); }

unsigned DefaultThreads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return static_cast<unsigned>(CPU_COUNT(&set));
  const unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
constexpr uint16_t kHostMachine = EM_NONE;
#endif

// Checks what dlopen would otherwise discover by crashing or failing obscurely:
// a 64-bit little-endian shared object for this machine whose headers and
// loadable segments lie within the bytes.
void CheckElf(const std::string& bin) {
  const std::string size = std::to_string(bin.size()) + " bytes";
  if (bin.size() < 4 || std::memcmp(bin.data(), ELFMAG, SELFMAG) != 0) {
    throw KernelError("kernel_bin is not an ELF shared object (" + size + " without the ELF magic)");
  }
  if (bin.size() < sizeof(Elf64_Ehdr)) throw KernelError("kernel_bin is not an ELF shared object (truncated header, " + size + ")");
  Elf64_Ehdr eh;
  std::memcpy(&eh, bin.data(), sizeof(eh));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    throw KernelError("kernel_bin is not a 64-bit little-endian ELF object");
  }
  if (eh.e_type != ET_DYN) {
    throw KernelError("kernel_bin is an ELF object of type " + std::to_string(eh.e_type) +
                      ", not a shared object (build it with -shared -fPIC)");
  }
  if (kHostMachine != EM_NONE && eh.e_machine != kHostMachine) {
    throw KernelError("kernel_bin is built for ELF machine " + std::to_string(eh.e_machine) + ", this host is " +
                      std::to_string(kHostMachine));
  }
  const uint64_t ph_end = eh.e_phoff + static_cast<uint64_t>(eh.e_phnum) * eh.e_phentsize;
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || ph_end > bin.size() || ph_end < eh.e_phoff) {
    throw KernelError("kernel_bin is not a valid ELF shared object (program headers outside its " + size + ")");
  }
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, bin.data() + eh.e_phoff + static_cast<uint64_t>(i) * sizeof(ph), sizeof(ph));
    if (ph.p_type == PT_LOAD && (ph.p_offset + ph.p_filesz > bin.size() || ph.p_offset + ph.p_filesz < ph.p_offset)) {
      throw KernelError("kernel_bin is truncated: a loadable segment ends at byte " +
                        std::to_string(ph.p_offset + ph.p_filesz) + " of " + size);
    }
  }
}

}  // namespace

// ---- KernelCache -------------------------------------------------------------------------

KernelCache::~KernelCache() {
  if (poisoned_) return;  // the loader may be locked by a crashed constructor
  for (auto& kv : loaded_) {
    dlclose(kv.second.handle);
    ::close(kv.second.fd);
  }
}

std::size_t KernelCache::LoadedBinaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return loaded_.size();
}

std::string DescribeCurrentException() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) return {};
  int status = 0;
  char* demangled = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
  std::string out = status == 0 && demangled != nullptr ? demangled : type->name();
  std::free(demangled);
  try {
    std::rethrow_exception(std::current_exception());
  } catch (const std::exception& e) {
    out += std::string(" (what(): ") + e.what() + ")";
  } catch (...) {
  }
  return out;
}

void SetKernelCrashExit(const char* prefix) { g_crash_exit_prefix.store(prefix); }

void InstallCrashReport(const char* prefix, const char* hint) {
  g_report_hint.store(hint);
  g_report_prefix.store(prefix);
  // The installing thread (a tool's main thread, which runs the plugins) gets
  // an alternate signal stack, so a stack overflow in plugin code is reported too.
  EnsureAltStack();
  InstallHandlers();
}

CrashBreadcrumb::CrashBreadcrumb(const char* what, Phase phase) noexcept
    : previous_(t_breadcrumb), previous_loading_(t_breadcrumb_loading) {
  t_breadcrumb = what;
  t_breadcrumb_loading = phase == Phase::kLoading;
}
CrashBreadcrumb::~CrashBreadcrumb() {
  t_breadcrumb = previous_;
  t_breadcrumb_loading = previous_loading_;
}

CpuKernelFn KernelCache::Resolve(const std::string& bin, const std::string& kernel_name, const char* label) {
  CheckElf(bin);
  if (kernel_name.empty() || kernel_name.find('\0') != std::string::npos) {
    throw KernelError("kernel name must be non-empty and contain no NUL byte");
  }
  InstallHandlers();
  std::lock_guard<std::mutex> lock(mu_);
  if (poisoned_) {
    throw KernelError::CrashedWhileLoading("kernel loading is disabled: an earlier kernel_bin crashed while loading");
  }
  const std::size_t h = std::hash<std::string>{}(bin);
  const Entry* entry = nullptr;
  for (auto [it, end] = loaded_.equal_range(h); it != end; ++it) {
    if (it->second.bytes == bin) entry = &it->second;
  }
  if (entry == nullptr) {
    // Load from memory: an anonymous file, opened through /proc.
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
    void* handle = nullptr;
    dlerror();
    // Constructors of the binary run here: guard them like kernel code.
    const int sig =
        Guarded([&] { handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL); }, GuardedPhase::kLoadingBinary, label);
    if (sig != 0) {
      poisoned_ = true;
      throw KernelError::CrashedWhileLoading("kernel_bin crashed while loading (in its constructors): " +
                                             SignalText(sig));
    }
    if (handle == nullptr) {
      ::close(fd);
      const char* e = dlerror();
      throw KernelError(std::string("cannot load kernel_bin as a shared object: ") + (e ? e : "unknown error"));
    }
    entry = &loaded_.emplace(h, Entry{bin, handle, fd, path})->second;
  }
  dlerror();
  void* sym = dlsym(entry->handle, kernel_name.c_str());
  // dlsym also searches the object's dependencies (libc): only the binary's own
  // definitions are kernels.
  Dl_info info{};
  if (sym == nullptr || dladdr(sym, &info) == 0 || info.dli_fname == nullptr || entry->name != info.dli_fname) {
    throw KernelError("kernel '" + kernel_name + "' not found in kernel_bin (" + std::to_string(bin.size()) + " bytes)");
  }
  return reinterpret_cast<CpuKernelFn>(sym);
}

// ---- BlockPool -------------------------------------------------------------------------------

struct BlockPool::State {
  std::mutex mu;
  std::condition_variable cv, done_cv;
  bool stop = false;
  uint64_t generation = 0;
  // The current job.
  const char* label = nullptr;
  CpuKernelFn fn = nullptr;
  uint32_t block_dim = 0;
  const uint64_t* args = nullptr;
  std::atomic<uint64_t> next{0};  // 64-bit: never wraps past a uint32 block_dim
  std::atomic<uint64_t> finished{0};
  unsigned active_workers = 0;
  std::mutex crash_mu;
  std::optional<std::string> crash;
  std::atomic<bool> abandoned{false};

  void RunBlocks() {
    for (;;) {
      if (abandoned.load()) break;
      const uint64_t idx = next.fetch_add(1);
      if (idx >= block_dim) break;
      const int sig =
          Guarded([&] { fn(static_cast<uint32_t>(idx), block_dim, args); }, GuardedPhase::kRunningBlock, label, idx);
      if (sig != 0) {
        {
          std::lock_guard<std::mutex> lock(crash_mu);
          if (!crash) crash = CrashText(sig, idx);
        }
        {
          std::lock_guard<std::mutex> lock(mu);  // no lost wake-up of the waiting caller
          abandoned.store(true);
        }
        done_cv.notify_all();
        return;
      }
      finished.fetch_add(1);
    }
  }

  static void Worker(std::shared_ptr<State> st) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(st->mu);
        st->cv.wait(lock, [&] { return st->stop || st->generation != seen; });
        if (st->stop) return;
        seen = st->generation;
        ++st->active_workers;
      }
      st->RunBlocks();
      {
        std::lock_guard<std::mutex> lock(st->mu);
        --st->active_workers;
      }
      st->done_cv.notify_all();
    }
  }
};

BlockPool::BlockPool(unsigned threads) : st_(std::make_shared<State>()) {
  InstallHandlers();
  threads_ = threads ? threads : DefaultThreads();
  for (unsigned i = 1; i < threads_; ++i) workers_.emplace_back(&State::Worker, st_);
}

BlockPool::~BlockPool() {
  {
    std::lock_guard<std::mutex> lock(st_->mu);
    st_->stop = true;
  }
  st_->cv.notify_all();
  const bool abandoned = st_->abandoned.load();
  for (auto& t : workers_) {
    if (abandoned) {
      t.detach();  // may be stuck in a crashed kernel's lock; it holds the state alive
    } else {
      t.join();
    }
  }
}

bool BlockPool::Abandoned() const noexcept { return st_->abandoned.load(); }

std::optional<std::string> BlockPool::Run(CpuKernelFn fn, uint32_t block_dim, const uint64_t* args,
                                          const char* label) {
  std::lock_guard<std::mutex> run_lock(run_mu_);
  State& st = *st_;
  if (st.abandoned.load()) return std::string("the kernel pool was abandoned after an earlier kernel crash");
  {
    std::lock_guard<std::mutex> lock(st.crash_mu);
    st.crash.reset();
  }
  if (block_dim == 1 || workers_.empty()) {
    // No hand-off: the calling thread runs every block (the common small case
    // stays well under a microsecond of host overhead).
    for (uint64_t i = 0; i < block_dim; ++i) {
      const int sig =
          Guarded([&] { fn(static_cast<uint32_t>(i), block_dim, args); }, GuardedPhase::kRunningBlock, label, i);
      if (sig != 0) {
        st.abandoned.store(true);
        return CrashText(sig, i);
      }
    }
    return std::nullopt;
  }
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.fn = fn;
    st.label = label;
    st.block_dim = block_dim;
    st.args = args;
    st.next.store(0);
    st.finished.store(0);
    ++st.generation;
  }
  st.cv.notify_all();
  st.RunBlocks();
  {
    std::unique_lock<std::mutex> lock(st.mu);
    st.done_cv.wait(lock, [&] {
      return st.abandoned.load() || (st.finished.load() >= st.block_dim && st.active_workers == 0);
    });
  }
  std::lock_guard<std::mutex> lock(st.crash_mu);
  return st.crash;
}

}  // namespace ge
