// ge-plugin-scan: the out-of-process scanner child (internal tool).
//
// Reads plugin paths (each ending with a NUL byte) on stdin, loads each with
// a fresh ge::host::PluginHost in its declared isolation (an op library with
// dlopen; `--prototype-library PATH`, repeated: libraries whose prototypes
// the plugins may bind to) and streams, per
// plugin, a line {"begin": PATH} before loading it and its record
// (ge::plugin::ToJson) after; paths in the PathText spelling (scan.h). The
// parent (ge-plugin-registryd / ge-plugin-ls) enforces the time limit and turns
// a crash, hang or early exit into a verdict for the plugin being scanned.
// Results go to a private duplicate of stdout; fd 1 is pointed at stderr so
// that plugin output cannot forge result lines by printing.
//
// `ge-plugin-scan --zygote`: the registry's zygote (ge/host/zygote.h) on
// descriptor 3: CPython and `ge` initialized once, then forked children,
// role "scan", each scanning up to 16 plugins in sequence (RunScan below: the
// same lines on the request's channel, the next paths from it). It lives
// in this binary because the scan role and the Python host are already
// linked here (one libexec program to find and install); the
// engine's "worker" role (ge::host::RunWorker, in ge_host) is one more line
// in kRoles; the engine starts its zygote with `--python-dir DIR`, its own ge
// package, so that its workers' Python is the engine's.
// After each import the scanner looks for threads the plugin left running:
// one still using CPU marks the plugin "hung" (error kind "busy_thread";
// share/docs/registry.md, "Statuses").
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>
#include <cstdio>
#include <fstream>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "ge/host/plugin_host.h"
#include "ge/host/python_fork.h"
#include "ge/host/zygote.h"
#include "ge/log.h"
#include "ge/op/op_registry.h"
#include "ge/runtime/types.h"
#include "ge/plugin/record.h"
#include "ge/text.h"
#include "process_worker.h"

using nlohmann::json;

namespace {

json AttrValueJson(const ge::AttrValue& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ge::DataType>) {
          return ge::DataTypeName(x);
        } else if constexpr (std::is_same_v<T, std::vector<ge::DataType>>) {
          json a = json::array();
          for (auto d : x) a.push_back(ge::DataTypeName(d));
          return a;
        } else if constexpr (std::is_same_v<T, ge::TensorAttr>) {
          return nullptr;  // tensor attributes have no default (share/docs/plugin-authors.md, "The prototype")
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          json a = json::array();
          for (bool b : x) a.push_back(b);
          return a;
        } else {
          return json(x);
        }
      },
      v);
}

json SchemaJson(const ge::OpSchema& s) {
  json in = json::array(), out = json::array(), attrs = json::array();
  for (const auto& i : s.inputs) in.push_back({{"name", i.name}, {"kind", std::string(ge::IrInputKindName(i.kind))}});
  for (const auto& o : s.outputs) out.push_back({{"name", o.name}, {"kind", std::string(ge::IrOutputKindName(o.kind))}});
  for (const auto& a : s.attrs) {
    json j = {{"name", a.name}, {"type", std::string(ge::AttrTypeName(a.type))}, {"required", !a.default_value}};
    if (a.default_value) j["default"] = AttrValueJson(*a.default_value);
    attrs.push_back(j);
  }
  return {{"inputs", in}, {"outputs", out}, {"attrs", attrs}, {"signature", s.ToString()}};
}

// Version and description from the module source when pyproject.toml gives
// none: `__version__ = "..."` and the first line of the module docstring.
// Read statically (no code runs for it).
void SourceMetadata(const std::string& path, bool is_package, std::string& version, std::string& description) {
  const std::string file = is_package ? path + "/__init__.py" : path;
  boost::system::error_code ec;
  if (!boost::filesystem::is_regular_file(file, ec)) return;
  std::ifstream f(file);
  if (!f) return;
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text.size() > (1u << 20)) text.resize(1u << 20);
  if (version.empty()) {
    static const std::regex kVer(R"((?:^|\n)__version__\s*(?::\s*str\s*)?=\s*['"]([^'"\n]{1,64})['"])");
    std::smatch m;
    if (std::regex_search(text, m, kVer)) version = m[1];
  }
  if (description.empty()) {
    std::size_t i = 0;
    while (i < text.size()) {  // skip blank and comment lines
      if (text[i] == '#') {
        while (i < text.size() && text[i] != '\n') ++i;
      } else if (std::isspace(static_cast<unsigned char>(text[i]))) {
        ++i;
      } else {
        break;
      }
    }
    if (i < text.size() && (text[i] == 'r' || text[i] == 'R')) ++i;
    for (const char* q : {"\"\"\"", "'''", "\"", "'"}) {
      const std::string qs(q);
      if (text.compare(i, qs.size(), qs) != 0) continue;
      std::size_t start = i + qs.size();
      std::size_t end = text.find(qs, start);
      if (end == std::string::npos) break;
      std::stringstream ss(text.substr(start, end - start));
      std::string line;
      while (std::getline(ss, line)) {
        const auto b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos) continue;
        description = line.substr(b);
        while (!description.empty() && std::isspace(static_cast<unsigned char>(description.back()))) description.pop_back();
        break;
      }
      break;
    }
  }
}

// The threads of this process (/proc/self/task), by tid.
std::set<long> Tasks() {
  std::set<long> out;
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') out.insert(std::strtol(e->d_name, nullptr, 10));
  }
  ::closedir(d);
  return out;
}

// How much of the time a thread wanted a CPU, in ns: schedstat's time on a
// CPU plus its time waiting on a run queue (a spinning thread wants a CPU all
// the time, even on a loaded machine where it gets less); without schedstat,
// utime + stime of its stat (clock ticks). -1 when the thread is gone.
long long TaskDemandNs(long tid) {
  const std::string dir = "/proc/self/task/" + std::to_string(tid);
  {
    std::ifstream f(dir + "/schedstat");
    long long run_ns, wait_ns;
    if (f >> run_ns >> wait_ns) return run_ns + wait_ns;
  }
  std::ifstream f(dir + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15 (1-based): utime, stime
    if (i == 14) utime = std::atoll(field.c_str());
    if (i == 15) stime = std::atoll(field.c_str());
  }
  return (utime + stime) * (1000000000LL / std::max(1L, ::sysconf(_SC_CLK_TCK)));
}

// How long a leftover thread is watched, and the share of it that it must
// want a CPU to be called busy (an idle thread, blocked on a queue or a
// sleep, wants ~0).
constexpr int kBusyWindowMs = 100;
constexpr double kBusyShare = 0.5;

// A thread that a plugin left running and that keeps using CPU: it starves
// every interpreter of the process (the GIL) and its neighbours would be
// blamed for it. "" when there is none among the threads not in `before`.
std::string BusyThread(const std::set<long>& before, double* window_s) {
  std::vector<std::pair<long, long long>> watched;
  for (long tid : Tasks()) {
    if (!before.count(tid)) watched.emplace_back(tid, TaskDemandNs(tid));
  }
  if (watched.empty()) return {};
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(kBusyWindowMs));
  const double wall_ns =
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  *window_s = wall_ns / 1e9;
  for (const auto& [tid, cpu0] : watched) {
    const long long cpu1 = TaskDemandNs(tid);
    if (cpu0 < 0 || cpu1 < 0) continue;
    const double used = static_cast<double>(cpu1 - cpu0);
    if (used >= kBusyShare * wall_ns) {
      char t[160];
      std::snprintf(t, sizeof(t), "thread %ld was running or ready to run for %.0f ms of the %.0f ms after the import",
                    tid, used / 1e6, wall_ns / 1e6);
      return t;
    }
  }
  return {};
}

// The scanner's settings (its command line, or a zygote request's args).
struct ScanConfig {
  std::string log_level = "error";
  bool allow_insecure = false;
  std::vector<std::string> prototype_libraries;  // ScanOptions::prototype_libraries
  std::vector<std::pair<std::string, std::string>> failed_libraries;  // ScanOptions::failed_libraries
  std::vector<std::string> paths;  // after "--" (zygote requests); stdin otherwise
  bool zygote = false;
  bool more_on_channel = false;  // --more-on-channel: further paths come on the (zygote role's) channel
  std::string python_dir;  // --python-dir (the zygote's ge package; empty: HostOptions::python_dir's rules)
};

ScanConfig ParseArgs(const std::vector<std::string>& args) {
  ScanConfig c;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      c.paths.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (a == "--log-level" && i + 1 < args.size()) c.log_level = args[++i];
    if (a == "--allow-insecure") c.allow_insecure = true;
    if (a == "--zygote") c.zygote = true;
    if (a == "--more-on-channel") c.more_on_channel = true;
    if (a == "--python-dir" && i + 1 < args.size()) c.python_dir = args[++i];
    if (a == "--prototype-library" && i + 1 < args.size()) c.prototype_libraries.push_back(args[++i]);
    if (a == "--failed-library" && i + 2 < args.size()) {
      c.failed_libraries.emplace_back(args[i + 1], args[i + 2]);
      i += 2;
    }
  }
  return c;
}

// Loads one plugin with a fresh host and registry and returns its record.
// `unload`: end the plugin before returning (the plain scanner, which loads
// more plugins after it); else it stays loaded until the process _exits.
// `*left_threads` (if given): whether the plugin left any new thread running.
ge::plugin::PluginRecord ScanOne(const std::string& path, const std::string& absolute_path, const ScanConfig& cfg,
                                 bool unload, bool* left_threads = nullptr) {
  if (left_threads) *left_threads = false;
  ge::plugin::PluginRecord r;
  try {
    // The engine's built-in ops are there too, so that a plugin redefining
    // one is a conflict here as in ge-run.
    auto registry = std::make_unique<ge::OpRegistry>();
    if (ge::Status st = ge::RegisterBuiltinOps(*registry); !st.ok()) throw std::runtime_error(st.message());
    ge::host::HostOptions opts;
    opts.use_env_opp_path = false;
    opts.allow_insecure = cfg.allow_insecure;
    opts.prototype_libraries = cfg.prototype_libraries;
    opts.failed_libraries = cfg.failed_libraries;
    const std::set<long> before = Tasks();
    auto host = std::make_unique<ge::host::PluginHost>(opts, *registry);
    r = host->LoadPlugin(absolute_path);
    if (!r.op_library) {
      if (r.isolation.empty()) r.isolation = "subinterpreter";
      SourceMetadata(r.path, boost::filesystem::is_directory(r.path), r.version, r.description);
    }
    for (auto& op : r.ops) {
      if (auto reg = registry->Find(op.op_type)) op.prototype = SchemaJson(*reg->schema);
    }
    if (left_threads) {
      for (long tid : Tasks()) *left_threads = *left_threads || !before.count(tid);
    }
    double window_s = 0;
    const std::string busy = BusyThread(before, &window_s);
    if (!busy.empty()) {
      ge::plugin::PluginRecord b = ge::plugin::ProblemRecord(r.name, path, ge::plugin::PluginStatus::kHung,
                                                             ge::plugin::ErrorKind::kBusyThread,
                                                             "importing " + path +
                                                                 " left a thread running that keeps the CPU busy (" +
                                                                 busy + "); it would starve every other plugin of the process");
      b.timeout_s = window_s;
      b.isolation = r.isolation;
      b.version = r.version;
      b.description = r.description;
      r = std::move(b);
    }
    // Unloading ends the sub-interpreter (cheap, and memory stays flat) and
    // makes a main-interpreter plugin forget its modules before the next.
    if (unload) {
      host.reset();
    } else {
      // The process ends after this plugin (_exit): nothing is torn down, and
      // the registry's ops (holding Python objects) are never destroyed
      // without their host.
      (void)host.release();
      (void)registry.release();
    }
  } catch (const std::exception& e) {
    r.status = ge::plugin::PluginStatus::kError;
    r.error.kind = ge::plugin::ErrorKind::kScan;
    r.error.message = std::string("scanner: ") + e.what();
  }
  r.path = path;  // answered as asked
  return r;
}

void Emit(FILE* res, const json& j) {
  const std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::fwrite(s.data(), 1, s.size(), res);
  std::fflush(res);
}

// The next path the registry gives on the channel (a socket), ending with a
// NUL byte; false at its end (it has no more for this child).
bool NextPathOnChannel(int channel_fd, std::string* path) {
  path->clear();
  for (;;) {
    char ch;
    const ssize_t n = ::read(channel_fd, &ch, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1) return false;
    if (ch == '\0') return true;
    path->push_back(ch);
  }
}

// The zygote's "scan" role: loads the plugins after "--" in args, then (with
// `--more-on-channel`) each path the registry sends on the channel after a
// record, in order, and writes the scanner's lines on `channel_fd`:
// {"begin": PATH} before loading a plugin, its record after. Every plugin
// stays loaded (nothing of it runs between plugins: no unloading, no
// atexit; the process _exits), as the engine keeps them. The child stops early, leaving the rest unbegun for
// the registry to give to a fresh child (share/docs/registry.md, "Processes:
// the zygote"):
// - after a plugin that left any new thread (busy or idle): no later plugin
//   shares a process with a thread of another;
// - after a plugin whose isolation is not "subinterpreter" (main, process, an
//   op library), and before one that is not, unless it comes first: such a
//   plugin is loaded only into a fresh child, before any sub-interpreter
//   exists (numpy and the like need that; share/docs/host-design.md), and
//   nothing is loaded after it.
int RunScan(int channel_fd, const std::vector<std::string>& args) {
  if (channel_fd < 0) {
    std::fprintf(stderr, "ge-plugin-scan: the scan role needs a channel descriptor\n");
    return 3;
  }
  ::dup2(STDERR_FILENO, STDOUT_FILENO);  // plugin prints cannot reach the results (nor the client's stdout)
  // A process group of its own: a plugin signalling its group (os.killpg(0,
  // SIGKILL)) hits only its own scanner child, never the zygote nor the tool
  // that lists (share/docs/registry.md, "Processes: the zygote").
  ::setpgid(0, 0);
  FILE* res = ::fdopen(channel_fd, "w");
  if (res == nullptr) return 3;
  const ScanConfig cfg = ParseArgs(args);
  if (auto lvl = ge::ParseLogLevel(cfg.log_level)) ge::SetLogLevel(*lvl);
  ge::OpRegistry ordering_registry;
  std::unique_ptr<ge::host::PluginHost> ordering;  // reads isolations; loads nothing
  std::string path;
  for (std::size_t i = 0;; ++i) {
    if (i < cfg.paths.size()) {
      path = cfg.paths[i];
    } else if (!cfg.more_on_channel || !NextPathOnChannel(channel_fd, &path)) {
      break;
    }
    // Its declared isolation, read as the load reads it (pyproject.toml with
    // tomllib, no plugin code); unknown (a bad pyproject.toml: the load
    // reports it) counts as not "subinterpreter".
    bool shares = false;
    try {
      if (!ordering) {
        ge::host::HostOptions opts;
        opts.use_env_opp_path = false;
        opts.allow_insecure = cfg.allow_insecure;
        ordering = std::make_unique<ge::host::PluginHost>(opts, ordering_registry);
      }
      shares = ordering->DeclaredIsolation(path) == "subinterpreter";
    } catch (const std::exception&) {
    }
    if (i > 0 && !shares) break;
    Emit(res, {{"begin", ge::PathText(path)}});
    bool left_threads = false;
    Emit(res, ge::plugin::ToJson(ScanOne(path, path, cfg, /*unload=*/false, &left_threads), /*with_detail=*/true));
    if (left_threads || !shares) break;
  }
  (void)ordering.release();  // the process _exits: nothing is torn down
  std::fflush(stderr);
  return 0;
}

// Role name -> entry (ge/host/zygote.h): the children this zygote forks.
const ge::host::ZygoteRoles& Roles() {
  static const ge::host::ZygoteRoles kRoles = {
      {"scan", RunScan},
      {"worker", ge::host::RunWorker},  // the engine's plugin workers (isolation "process")
  };
  return kRoles;
}

// `ge-plugin-scan --zygote`: serves the zygote on descriptor 3.
int Zygote(const std::string& python_dir) {
  constexpr int kSocket = 3;
  // Python cannot start in a folder that is gone; every path loaded is absolute.
  boost::system::error_code cwd_ec;
  boost::filesystem::current_path(cwd_ec);
  if (cwd_ec && ::chdir("/") != 0) std::cerr << "ge-plugin-scan: cannot change to /: " << std::strerror(errno) << "\n";
  ge::host::ZygoteForkHooks hooks;
  try {
    hooks = ge::host::PreparePythonForFork(python_dir);
  } catch (const std::exception& e) {
    ge::host::RefuseZygote(kSocket, std::string("ge-plugin-scan --zygote: ") + e.what());
    ::_exit(1);
  }
  const int rc = ge::host::ServeZygote(kSocket, Roles(), hooks);
  std::fflush(stderr);
  ::_exit(rc);  // no interpreter tear-down
}

}  // namespace

// Run plainly (posix_spawn'ed by the tools, one plugin each), the scanner
// puts a process of its own between its caller and the plugins: it forks, the
// parent waits and ends as the child ended (its exit code, or the same
// signal), and the child, which loads the plugins, dies with it
// (PR_SET_PDEATHSIG). A plugin that kills or stops its parent process
// (os.kill(os.getppid(), ...)) so hits that guard, never the tool that lists.
void GuardTheCaller() {
  const pid_t child = ::fork();
  if (child < 0) return;  // no guard: scanned unguarded, as before
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() == 1) ::_exit(125);  // the guard is already gone
    return;
  }
  for (int fd = 0; fd < 3; ++fd) ::close(fd);  // the results pipe closes with the child alone
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    const struct rlimit none{0, 0};
    ::setrlimit(RLIMIT_CORE, &none);  // the child dumped its core already, if any
    ::signal(WTERMSIG(status), SIG_DFL);
    ::kill(::getpid(), WTERMSIG(status));
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 125);
}

int main(int argc, char** argv) {
  const ScanConfig cfg = ParseArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (cfg.zygote) return Zygote(cfg.python_dir);
  GuardTheCaller();
  // Results on a private, high-numbered duplicate of stdout; fd 1 -> stderr.
  int res_fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 200);
  if (res_fd < 0) res_fd = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  FILE* res = ::fdopen(res_fd, "w");
  if (res == nullptr) return 3;
  if (auto lvl = ge::ParseLogLevel(cfg.log_level)) ge::SetLogLevel(*lvl);
  const bool allow_insecure = cfg.allow_insecure;
  std::vector<std::string> paths;
  // Each path is loaded as an absolute path fixed before any plugin runs: a
  // plugin calling os.chdir must not change which file the next path names.
  // The paths the scanner is given are absolute; a relative one needs the
  // current directory, which may be gone (then it is kept as given, and its
  // load reports that it cannot be found).
  boost::system::error_code cwd_ec;
  const boost::filesystem::path start_dir = boost::filesystem::current_path(cwd_ec);
  // Python cannot start in a folder that is gone (the listing was run from a
  // deleted folder): the scan runs from / then; every path it loads is absolute.
  if (cwd_ec && ::chdir("/") != 0) std::cerr << "ge-plugin-scan: cannot change to /: " << std::strerror(errno) << "\n";
  auto absolute = [&](const std::string& p) {
    if (!p.empty() && p[0] == '/') return p;
    return cwd_ec ? p : boost::filesystem::absolute(p, start_dir).string();
  };
  for (std::string line; std::getline(std::cin, line, '\0');) {
    if (!line.empty()) paths.push_back(line);
  }
  // Main-interpreter plugins first (numpy must be loaded by the main
  // interpreter before any sub-interpreter exists; share/docs/host-design.md).
  // The isolation is read as the load reads it (PluginHost::DeclaredIsolation:
  // the pyproject.toml parsed with tomllib); a plugin whose pyproject.toml is
  // bad keeps its place, and its load reports the error.
  {
    std::vector<char> wants_main(paths.size(), 0);
    try {
      ge::OpRegistry ordering_registry;
      ge::host::HostOptions opts;
      opts.use_env_opp_path = false;
      opts.allow_insecure = allow_insecure;
      ge::host::PluginHost ordering(opts, ordering_registry);
      for (std::size_t i = 0; i < paths.size(); ++i) {
        try {
          wants_main[i] = ordering.DeclaredIsolation(absolute(paths[i])) == "main";
        } catch (const std::exception&) {
        }
      }
    } catch (const std::exception&) {
      // No Python runtime: every load below reports it.
    }
    std::vector<std::string> ordered;
    ordered.reserve(paths.size());
    for (int main_pass = 1; main_pass >= 0; --main_pass) {
      for (std::size_t i = 0; i < paths.size(); ++i) {
        if (wants_main[i] == main_pass) ordered.push_back(paths[i]);
      }
    }
    paths.swap(ordered);
  }

  // Each plugin gets its own host and registry: conflicts are resolved by the
  // parent, in path order, over every plugin (also across scanner children).
  for (const auto& path : paths) {
    Emit(res, {{"begin", ge::PathText(path)}});
    Emit(res, ge::plugin::ToJson(ScanOne(path, absolute(path), cfg, /*unload=*/true), /*with_detail=*/true));
  }
  std::fflush(res);
  std::fflush(stderr);
  ::_exit(0);  // no interpreter tear-down: the process ends here
}
