// zygote.cc: the zygote's server and client (ge/host/zygote.h). No Python here.
#include "ge/host/zygote.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "ge/text.h"
#include "ge/spawn_attr.h"

extern char** environ;

namespace ge::host {

using nlohmann::json;

namespace {

// A request carries a few args and paths: 1 MiB bounds one datagram.
constexpr std::size_t kMaxMessage = 1u << 20;
constexpr std::size_t kMaxFds = 8;
const char* const kFdNames[] = {"channel", "stdin", "stdout", "stderr"};

bool SendMessage(int sock, const json& j, const std::vector<int>& fds = {}) {
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control;
  if (!fds.empty()) {
    control.assign(CMSG_SPACE(sizeof(int) * fds.size()), 0);
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    const ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n >= 0) return true;
    if (errno != EINTR) return false;
  }
}

// Receives one datagram and the descriptors attached to it (close-on-exec).
// Returns 1, 0 at EOF, -1 on error or (with `dontwait`) when none is there.
int ReceiveMessage(int sock, std::string* text, std::vector<int>* fds, bool dontwait) {
  text->assign(kMaxMessage, '\0');
  iovec iov{text->data(), text->size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | (dontwait ? MSG_DONTWAIT : 0));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -1;
  std::size_t got = 0;  // descriptors attached (kept in *fds, or closed)
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < k; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      ++got;
      if (fds) {
        fds->push_back(fd);
      } else {
        ::close(fd);
      }
    }
  }
  text->resize(static_cast<std::size_t>(n));
  // SEQPACKET: a zero-length read without descriptors is the peer's close
  // (also when the caller takes no descriptors: else a reader looping until
  // "nothing more" would spin on a closed socket).
  if (n == 0 && got == 0) return 0;
  return 1;
}

int ThreadCount() {
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n;
}

std::string RoleNames(const ZygoteRoles& roles) {
  std::string s;
  for (const auto& [name, _] : roles) s += (s.empty() ? "" : ", ") + name;
  return s;
}

// In the forked child: back to a plain process, then the role.
[[noreturn]] void RunChild(int sock, int sigfd, const ZygoteRole& role, const std::vector<std::string>& args,
                           const std::vector<std::string>& names, const std::vector<int>& fds) {
  ::close(sock);
  ::close(sigfd);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the zygote (its client kills it, or it dies)
  for (int s = 1; s < NSIG; ++s) {
    if (s != SIGKILL && s != SIGSTOP) ::signal(s, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int channel = -1;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const int target = names[i] == "stdin" ? 0 : names[i] == "stdout" ? 1 : names[i] == "stderr" ? 2 : -1;
    if (target >= 0) {
      ::dup2(fds[i], target);  // dup2 clears close-on-exec on the target
    } else if (names[i] == "channel") {
      channel = ::fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    }
  }
  for (int fd : fds) ::close(fd);
  int rc = 125;
  try {
    rc = role(channel, args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zygote child: the role failed: %s\n", e.what());
  }
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(rc);
}

}  // namespace

void RefuseZygote(int socket_fd, const std::string& why) {
  SendMessage(socket_fd, {{"ready", false}, {"error", why}});
}

int ServeZygote(int sock, const ZygoteRoles& roles, const ZygoteForkHooks& hooks) {
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  const int sigfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) {
    RefuseZygote(sock, std::string("zygote: signalfd failed: ") + std::strerror(errno));
    return 1;
  }
  if (!SendMessage(sock, {{"ready", true}, {"pid", ::getpid()}})) return 1;
  std::set<pid_t> live;
  auto reap = [&]() {
    for (;;) {
      int status = 0;
      const pid_t p = ::waitpid(-1, &status, WNOHANG);
      if (p <= 0) break;
      if (live.erase(p)) SendMessage(sock, {{"exit", p}, {"status", status}});
    }
  };
  int rc = 0;
  for (;;) {
    pollfd fds[2] = {{sock, POLLIN, 0}, {sigfd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      rc = 1;
      break;
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo si;
      while (::read(sigfd, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
      }
      reap();
    }
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    std::string text;
    std::vector<int> got;
    const int r = ReceiveMessage(sock, &text, &got, /*dontwait=*/false);
    if (r <= 0) break;  // the client closed its end (or the socket failed)
    auto close_got = [&]() {
      for (int fd : got) ::close(fd);
    };
    json req = json::parse(text, nullptr, false);
    const json id = req.is_object() && req.contains("id") ? req["id"] : json(nullptr);
    auto refuse = [&](const std::string& why) {
      close_got();
      SendMessage(sock, {{"id", id}, {"error", "zygote: " + why}});
    };
    if (!req.is_object() || !req.contains("op") || !req["op"].is_string()) {
      refuse("malformed request (got " + text.substr(0, 200) + "; expected a JSON object with \"op\")");
      continue;
    }
    const std::string op = req["op"].get<std::string>();
    if (op == "kill") {
      close_got();
      const pid_t p = req.value("pid", -1);
      const int sig = req.value("signal", SIGKILL);
      if (live.count(p)) ::kill(p, sig);
      continue;
    }
    if (op != "fork") {
      refuse("unknown op '" + op + "'; supported: fork, kill");
      continue;
    }
    if (!req.contains("role") || !req["role"].is_string()) {
      refuse("a fork request needs \"role\" (a string); roles: " + RoleNames(roles));
      continue;
    }
    const std::string role = req["role"].get<std::string>();
    auto it = roles.find(role);
    if (it == roles.end()) {
      refuse("unknown role '" + role + "'; supported: " + RoleNames(roles));
      continue;
    }
    std::vector<std::string> args, names;
    bool ok = true;
    std::string bad;
    if (req.contains("args")) {
      if (!req["args"].is_array()) ok = false, bad = "\"args\" must be an array of strings";
      for (const auto& a : req["args"]) {
        if (!a.is_string()) {
          ok = false, bad = "\"args\" must be an array of strings";
          break;
        }
        // Args are bytes (paths), sent in the lossless PathText spelling.
        auto bytes = ParsePathText(a.get_ref<const std::string&>());
        if (!bytes) {
          ok = false, bad = "arg " + a.dump() + " is not in the PathText spelling (ge/text.h)";
          break;
        }
        args.push_back(std::move(*bytes));
      }
    }
    if (ok && req.contains("fds")) {
      if (!req["fds"].is_array()) ok = false, bad = "\"fds\" must be an array of names";
      for (const auto& a : req["fds"]) {
        const bool known = a.is_string() && std::find(std::begin(kFdNames), std::end(kFdNames), a.get<std::string>()) !=
                                                std::end(kFdNames);
        if (!known) {
          ok = false, bad = "fd name " + a.dump() + " is not one of channel, stdin, stdout, stderr";
          break;
        }
        names.push_back(a.get<std::string>());
      }
    }
    if (ok && names.size() != got.size()) {
      ok = false;
      bad = "the request names " + std::to_string(names.size()) + " fd(s) but " + std::to_string(got.size()) +
            " were attached";
    }
    if (!ok) {
      refuse("bad fork request for role '" + role + "': " + bad);
      continue;
    }
    // Forking a threaded process would leave the child with locks held by
    // threads that do not exist there: refused, never risked.
    const int threads = ThreadCount();
    if (threads != 1) {
      refuse("the zygote has " + std::to_string(threads) +
             " threads (/proc/self/task); it forks only while single-threaded");
      continue;
    }
    if (hooks.before) hooks.before();
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (hooks.after_child) hooks.after_child();
      RunChild(sock, sigfd, it->second, args, names, got);
    }
    const int fork_errno = errno;
    if (hooks.after_parent) hooks.after_parent();
    close_got();
    got.clear();
    if (pid < 0) {
      refuse(std::string("fork failed: ") + std::strerror(fork_errno));
      continue;
    }
    live.insert(pid);
    SendMessage(sock, {{"id", id}, {"pid", pid}});
  }
  // The client is gone: so are the children.
  for (pid_t p : live) ::kill(p, SIGKILL);
  for (pid_t p : live) {
    int status;
    while (::waitpid(p, &status, 0) < 0 && errno == EINTR) {
    }
  }
  ::close(sigfd);
  return rc;
}

// ---- client ------------------------------------------------------------------------------

std::unique_ptr<ZygoteClient> ZygoteClient::Start(const std::vector<std::string>& argv, int stderr_fd,
                                                  std::string* why, double ready_timeout_s) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    *why = std::string("cannot make the zygote's socket: ") + std::strerror(errno);
    return nullptr;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
  // Nothing of the caller's terminal or output: stdin is /dev/null, stdout
  // goes where stderr goes (a child's prints never reach the caller's output).
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (stderr_fd >= 0) posix_spawn_file_actions_adddup2(&fa, stderr_fd, STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&fa, stderr_fd >= 0 ? stderr_fd : STDERR_FILENO, STDOUT_FILENO);
  const PlainSpawnAttr attr;
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = args.empty() ? EINVAL : posix_spawn(&pid, args[0].c_str(), &fa, attr.get(), cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(sv[1]);
  if (rc != 0) {
    *why = "cannot start the zygote " + (args.empty() ? std::string("(no program)") : args[0]) + ": " +
           std::strerror(rc);
    ::close(sv[0]);
    return nullptr;
  }
  std::unique_ptr<ZygoteClient> z(new ZygoteClient());
  z->sock_ = sv[0];
  z->pid_ = pid;
  pollfd p{z->sock_, POLLIN, 0};
  const int n = ::poll(&p, 1, static_cast<int>(ready_timeout_s * 1000));
  std::string text;
  if (n <= 0 || !z->ReadOne(/*block=*/false, &text)) {
    *why = "the zygote " + args[0] + " did not start (" +
           (n <= 0 ? "no answer within " + std::to_string(static_cast<int>(ready_timeout_s)) + " s"
                   : z->gone_.empty() ? std::string("no answer") : z->gone_) +
           ")";
    return nullptr;  // the destructor kills and reaps it
  }
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.value("ready", false)) {
    *why = "the zygote " + args[0] + " could not start: " +
           (j.is_object() && j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() : text);
    return nullptr;
  }
  return z;
}

ZygoteClient::~ZygoteClient() {
  if (sock_ >= 0) ::close(sock_);
  if (pid_ <= 0 || reaped_) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int status;
  for (;;) {
    const pid_t w = ::waitpid(pid_, &status, WNOHANG);
    if (w == pid_ || (w < 0 && errno != EINTR)) return;
    if (std::chrono::steady_clock::now() >= until) break;
    ::usleep(2000);
  }
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

void ZygoteClient::Gone(const std::string& why) {
  if (!alive_) return;
  alive_ = false;
  gone_ = why;
}

namespace {

// "SIGKILL" (sigabbrev_np, glibc), else the number.
std::string SignalText(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace

bool ZygoteClient::CheckProcess(int settle_ms) {
  if (reaped_ || pid_ <= 0) return alive();
  const std::string who = "the zygote (pid " + std::to_string(pid_) + ")";
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(settle_ms);
  for (;;) {
    int status = 0;
    const pid_t w = ::waitpid(pid_, &status, WNOHANG | WUNTRACED);
    if (w == pid_ && WIFSTOPPED(status)) {
      // Stopped, it answers nothing and reaps nothing: given up for good
      // (SIGKILL ends a stopped process too).
      ::kill(pid_, SIGKILL);
      int ignored;
      while (::waitpid(pid_, &ignored, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
      end_status_ = status;
      Gone(who + " was stopped by " + SignalText(WSTOPSIG(status)) + "; killed");
      return false;
    }
    if (w == pid_) {
      reaped_ = true;
      end_status_ = status;
      Gone(who + (WIFSIGNALED(status) ? " was killed by " + SignalText(WTERMSIG(status))
                                      : " exited with code " + std::to_string(WEXITSTATUS(status))));
      return false;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 || std::chrono::steady_clock::now() >= until) return alive();
    ::usleep(2000);
  }
}

void ZygoteClient::Abandon(const std::string& why) {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    end_status_ = status;
  }
  Gone(why);
}

bool ZygoteClient::ReadOne(bool block, std::string* text) {
  if (sock_ < 0) return false;  // a gone zygote's last datagrams are still read
  const int r = ReceiveMessage(sock_, text, nullptr, !block);
  if (r == 1) return true;
  if (alive_ && (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))) {
    const std::string failed = r == 0 ? "the zygote (pid " + std::to_string(pid_) + ") closed its socket"
                                      : "the zygote's socket failed: " + std::string(std::strerror(errno));
    // How it ended, when it did (its socket closes just before it can be reaped).
    if (CheckProcess(/*settle_ms=*/200)) Gone(failed);
  }
  return false;
}

pid_t ZygoteClient::Fork(const std::string& role, const std::vector<std::string>& args, const ZygoteFds& fds,
                         std::string* why, double answer_timeout_s) {
  if (!alive()) {
    *why = gone_;
    return -1;
  }
  const long id = next_id_++;
  json names = json::array();
  std::vector<int> send;
  for (const auto& [name, fd] : {std::pair<const char*, int>{"channel", fds.channel}, {"stdin", fds.stdin_fd},
                                 {"stdout", fds.stdout_fd}, {"stderr", fds.stderr_fd}}) {
    if (fd < 0) continue;
    names.push_back(name);
    send.push_back(fd);
  }
  json texts = json::array();
  for (const auto& a : args) texts.push_back(PathText(a));  // any bytes, losslessly (ge/text.h)
  if (!SendMessage(sock_, {{"op", "fork"}, {"id", id}, {"role", role}, {"args", texts}, {"fds", names}}, send)) {
    Gone("cannot write to the zygote (pid " + std::to_string(pid_) + "): " + std::strerror(errno));
    *why = gone_;
    return -1;
  }
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(answer_timeout_s * 1000));
  for (;;) {
    // Waited for in slices: a zygote stopped (or killed) meanwhile never answers.
    pollfd p{sock_, POLLIN, 0};
    const int n = ::poll(&p, 1, 50);
    if (n < 0 && errno != EINTR) {
      Gone("cannot wait for the zygote's answer: " + std::string(std::strerror(errno)));
      *why = gone_;
      return -1;
    }
    if (n <= 0) {
      if (!CheckProcess()) {
        *why = gone_;
        return -1;
      }
      if (std::chrono::steady_clock::now() >= until) {
        Abandon("the zygote (pid " + std::to_string(pid_) + ") did not answer a fork request within " +
                std::to_string(static_cast<int>(answer_timeout_s)) + " s; killed");
        *why = gone_;
        return -1;
      }
      continue;
    }
    std::string text;
    if (!ReadOne(/*block=*/false, &text)) {
      if (alive()) continue;
      *why = gone_.empty() ? "no answer from the zygote" : gone_;
      return -1;
    }
    json j = json::parse(text, nullptr, false);
    if (!j.is_object()) continue;
    if (j.contains("exit")) {
      exits_.push_back({j.value("exit", -1), j.value("status", 0)});
      continue;
    }
    if (!j.contains("id") || j["id"] != id) continue;
    if (j.contains("pid") && j["pid"].is_number_integer()) return j["pid"].get<pid_t>();
    *why = j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() : "malformed answer " + text;
    return -1;
  }
}

bool ZygoteClient::Kill(pid_t pid, int sig) {
  if (!alive()) return false;
  if (!SendMessage(sock_, {{"op", "kill"}, {"pid", pid}, {"signal", sig}})) {
    Gone("cannot write to the zygote (pid " + std::to_string(pid_) + "): " + std::strerror(errno));
    return false;
  }
  return true;
}

std::vector<ZygoteExit> ZygoteClient::TakeExits() {
  CheckProcess();  // first: what it sent before it ended is read below
  std::string text;
  while (ReadOne(/*block=*/false, &text)) {
    json j = json::parse(text, nullptr, false);
    if (j.is_object() && j.contains("exit")) exits_.push_back({j.value("exit", -1), j.value("status", 0)});
  }
  std::vector<ZygoteExit> out;
  out.swap(exits_);
  return out;
}

}  // namespace ge::host
