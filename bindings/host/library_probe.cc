// library_probe.cc: see library_probe.h.
#include "library_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include <nlohmann/json.hpp>

#include "ge/crash_report.h"
#include "ge/plugin/op_library.h"
#include "ge/plugin/record.h"
#include "ge/spawn_attr.h"

extern char** environ;

namespace ge::host {
namespace {

using Clock = std::chrono::steady_clock;

int g_result_fd = -1;  // the probe process's result descriptor (one probe per process)

void WriteLine(int fd, const nlohmann::json& j) {
  const std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

[[noreturn]] void OnProbeTerminate() {
  const std::string what = DescribeCurrentException();
  if (g_result_fd >= 0) WriteLine(g_result_fd, {{"exception", what.empty() ? "an unknown exception" : what}});
  std::abort();
}

struct Probe {
  pid_t pid = -1;
  int fd = -1;  // our end of its result pipe, -1 once at its end
  std::string out;
  bool done = false;  // reaped
  int status = 0;
  bool killed = false;
};

std::string Prefix(const std::string& path) { return "cannot load op library " + path + ": "; }

LibraryVerdict Judge(const std::string& path, const Probe& p, double timeout_s) {
  LibraryVerdict v;
  nlohmann::json last;
  for (std::size_t at = 0; at < p.out.size();) {
    const std::size_t nl = p.out.find('\n', at);
    if (nl == std::string::npos) break;
    try {
      last = nlohmann::json::parse(p.out.substr(at, nl - at));
    } catch (const nlohmann::json::exception&) {
    }
    at = nl + 1;
  }
  auto text = [&](const char* key) -> std::string {
    return last.is_object() && last.contains(key) && last[key].is_string() ? last[key].get<std::string>() : std::string();
  };
  if (p.killed) {
    char t[32];
    std::snprintf(t, sizeof t, "%g", timeout_s);
    v.outcome = LibraryVerdict::Outcome::kHung;
    v.timeout_s = timeout_s;
    v.message = Prefix(path) + "loading it (its static constructors) did not finish within " + t + " s";
    return v;
  }
  if (!text("exception").empty()) {
    v.outcome = LibraryVerdict::Outcome::kCrashed;
    v.exception = text("exception");
    v.signal = WIFSIGNALED(p.status) ? WTERMSIG(p.status) : SIGABRT;
    v.message = Prefix(path) + "a static constructor threw C++ exception " + v.exception;
    return v;
  }
  if (WIFSIGNALED(p.status)) {
    v.outcome = LibraryVerdict::Outcome::kCrashed;
    v.signal = WTERMSIG(p.status);
    v.message = Prefix(path) + "fatal signal " + plugin::SignalName(v.signal) + " while loading it (its static constructors)";
    return v;
  }
  if (last.is_object() && last.value("loaded", false)) {
    v.outcome = LibraryVerdict::Outcome::kLoaded;
    return v;
  }
  if (!text("error").empty()) {
    v.outcome = LibraryVerdict::Outcome::kRefused;
    v.message = text("error");
    return v;
  }
  // No verdict line: its constructors ended the process with exit().
  v.outcome = LibraryVerdict::Outcome::kExited;
  v.exit_code = WIFEXITED(p.status) ? WEXITSTATUS(p.status) : -1;
  v.message = "op library " + path + " called exit(" + std::to_string(v.exit_code) + ") while loading";
  return v;
}

}  // namespace

int RunLibraryProbe(const std::string& path, int result_fd) {
  g_result_fd = result_fd;
  std::set_terminate(OnProbeTerminate);
  // A constructor's exit(N) ends the probe with exactly N: nothing else of
  // the process (a leak checker's exit handler, in a sanitized build) may
  // change the code the host reads.
  ::on_exit([](int status, void*) { ::_exit(status); }, nullptr);
  const plugin::OpLibraryLoad load = plugin::LoadOpLibrary(path);
  if (load.error.empty()) {
    WriteLine(result_fd, {{"loaded", true}});
  } else {
    WriteLine(result_fd, {{"error", load.error}});
  }
  // Nothing of the library is torn down (its destructors are not part of loading it).
  std::fflush(nullptr);
  ::_exit(0);
}

std::vector<LibraryVerdict> ProbeOpLibraries(const std::vector<std::string>& paths, const std::string& worker,
                                             double timeout_s) {
  std::vector<LibraryVerdict> out(paths.size());
  std::vector<Probe> probes(paths.size());
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      out[i].message = std::string("cannot start the op library probe: pipe: ") + std::strerror(errno);
      continue;
    }
    constexpr int kResultFd = 3;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    int child_end = fds[1];
    if (child_end == kResultFd) {
      child_end = ::fcntl(fds[1], F_DUPFD_CLOEXEC, kResultFd + 1);
      ::close(fds[1]);
      fds[1] = child_end;
    }
    if (devnull >= 0) {
      for (int std_fd : {0, 1, 2}) posix_spawn_file_actions_adddup2(&actions, devnull, std_fd);
    }
    posix_spawn_file_actions_adddup2(&actions, child_end, kResultFd);
    std::vector<char*> argv{const_cast<char*>(worker.c_str()), const_cast<char*>("--probe-op-library"),
                            const_cast<char*>(paths[i].c_str()), nullptr};
    const PlainSpawnAttr attr;
    const int rc = ::posix_spawn(&probes[i].pid, worker.c_str(), &actions, attr.get(), argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) {
      ::close(fds[0]);
      probes[i].pid = -1;
      out[i].message = "cannot start the op library probe " + worker + ": " + std::strerror(rc);
      continue;
    }
    probes[i].fd = fds[0];
  }
  if (devnull >= 0) ::close(devnull);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  for (;;) {
    std::vector<pollfd> pfds;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < probes.size(); ++i) {
      if (probes[i].fd >= 0) {
        pfds.push_back({probes[i].fd, POLLIN, 0});
        which.push_back(i);
      }
    }
    if (pfds.empty()) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      for (std::size_t i : which) {
        ::kill(probes[i].pid, SIGKILL);
        probes[i].killed = true;
        ::close(probes[i].fd);
        probes[i].fd = -1;
      }
      break;
    }
    const int n = ::poll(pfds.data(), pfds.size(), static_cast<int>(left));
    if (n < 0 && errno != EINTR) break;
    for (std::size_t k = 0; k < pfds.size() && n > 0; ++k) {
      if (pfds[k].revents == 0) continue;
      Probe& p = probes[which[k]];
      char buf[4096];
      const ssize_t got = ::read(p.fd, buf, sizeof buf);
      if (got > 0 && p.out.size() < (1u << 20)) {
        p.out.append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        ::close(p.fd);
        p.fd = -1;
      }
    }
  }
  for (std::size_t i = 0; i < probes.size(); ++i) {
    Probe& p = probes[i];
    if (p.pid < 0) continue;
    if (p.fd >= 0) ::close(p.fd);
    // Its pipe is at its end: the probe is exiting (or was killed); a probe
    // that closed its descriptor and went on is killed after the deadline.
    for (;;) {
      const pid_t w = ::waitpid(p.pid, &p.status, p.killed ? 0 : WNOHANG);
      if (w == p.pid) break;
      if (w < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (Clock::now() >= deadline) {
        ::kill(p.pid, SIGKILL);
        p.killed = true;
      } else {
        ::usleep(1000);
      }
    }
    out[i] = Judge(paths[i], p, timeout_s);
  }
  return out;
}

}  // namespace ge::host
