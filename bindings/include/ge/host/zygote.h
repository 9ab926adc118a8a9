// ge/host/zygote.h: a pre-initialized, single-threaded process that forks one
// child per request (client and server; share/docs/host-design.md, "The zygote").
//
// The zygote is a separately started helper (never a fork of the engine or of
// the registry daemon, which have threads): it initializes what its children
// need once (the server's caller does: CPython and the `ge` package, nothing of
// any plugin; ge/host/python_fork.h), then serves requests on one end of a
// unix SOCK_SEQPACKET socketpair. Per request it forks a child that runs one
// role (an entry of a role table: "scan" is the registry's scanner,
// registry/scan_child.cc), so children start without paying Python's start-up.
//
// Protocol (one JSON object per datagram, nlohmann-json; both ends built together):
//   zygote -> client, once at start:  {"ready": true, "pid": P}  or  {"ready": false, "error": "..."}
//   client -> zygote:  {"op": "fork", "id": N, "role": "scan", "args": [...], "fds": ["channel", "stderr"]}
//                      args are bytes in the lossless PathText spelling (ge/text.h: a non-UTF-8 byte
//                      is \xNN, a backslash \\), with the fds named in "fds" attached in that order
//                      (SCM_RIGHTS). Names:
//                      "channel" (given to the role), "stdin", "stdout", "stderr" (dup2'ed onto 0, 1, 2).
//   zygote -> client:  {"id": N, "pid": P}  or  {"id": N, "error": "..."} (unknown role, bad request, the
//                      zygote has threads, fork failed)
//   client -> zygote:  {"op": "kill", "pid": P, "signal": S}  (only a child not yet reaped is signalled)
//   zygote -> client:  {"exit": P, "status": W}  when it reaps child P (W: the waitpid status, WIFSIGNALED ...)
// The zygote is the children's parent and reaps them (the client cannot
// waitpid); a child gets PR_SET_PDEATHSIG SIGKILL, so children do not outlive
// their zygote. When the client closes its end the zygote kills its children,
// reaps them and exits.
//
// Why not Boost.Asio: Asio's local sockets have no ancillary-data (SCM_RIGHTS)
// API, the server must stay single-threaded and fork between events, and the
// client is driven from the registry's poll() loop; sendmsg/recvmsg with
// poll are the whole of it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ge::host {

// A role's entry, run in the forked child: `channel_fd` is the request's
// "channel" descriptor (owned by the child; -1 when none was sent), `args` the
// request's args. Returns the child's exit code (the child _exits with it).
using ZygoteRole = std::function<int(int channel_fd, const std::vector<std::string>& args)>;
// Role name -> entry. A new role is one line in the table its server is given.
using ZygoteRoles = std::map<std::string, ZygoteRole>;

// Called by the server around each fork, on its only thread: `before` just
// before fork(), `after_parent`/`after_child` right after it in the zygote or
// the child (how CPython's PyOS_BeforeFork/AfterFork_* are called; any may be empty).
struct ZygoteForkHooks {
  std::function<void()> before, after_parent, after_child;
};

// Serves requests on `socket_fd` (a SOCK_SEQPACKET unix socket) until the
// peer closes it; sends {"ready": true} first. Blocks SIGCHLD (read through a
// signalfd) and ignores SIGPIPE in the calling process. Refuses (error reply,
// nothing forked) a fork request when the process has more than one thread
// (/proc/self/task), names an unknown role, or is malformed. In the child:
// the zygote's sockets are closed, every signal handler is reset to SIG_DFL
// and the mask emptied, the named std fds are dup2'ed, then the role runs and
// the child _exits with its code. Returns the server's exit code (0 when the
// client closed its end). Not thread-safe: call from a single-threaded process.
int ServeZygote(int socket_fd, const ZygoteRoles& roles, const ZygoteForkHooks& hooks = {});

// The error ServeZygote sends to the client when it cannot start (before
// serving): {"ready": false, "error": why}.
void RefuseZygote(int socket_fd, const std::string& why);

// One child's end, as reported by the zygote.
struct ZygoteExit {
  pid_t pid = -1;
  int status = 0;  // the waitpid status (WIFEXITED/WEXITSTATUS, WIFSIGNALED/WTERMSIG)
};

// Descriptors a child gets (borrowed: the caller keeps and closes its own; -1: not sent).
struct ZygoteFds {
  int channel = -1;
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
};

// The client side: starts a zygote and asks it for children. Not
// thread-safe (one thread at a time); no Python in it.
class ZygoteClient {
 public:
  // Starts `argv[0]` with `argv` (posix_spawn, signal mask emptied, handlers
  // reset) with the zygote's end of the socketpair as descriptor 3,
  // `stderr_fd` (-1: the caller's) as its stderr and stdout, /dev/null as stdin, and waits up to
  // `ready_timeout_s` seconds for its "ready". Null with `*why` set when it
  // cannot start, refuses (its error) or does not answer (it is then killed).
  static std::unique_ptr<ZygoteClient> Start(const std::vector<std::string>& argv, int stderr_fd, std::string* why,
                                             double ready_timeout_s = 30.0);
  // Closes the socket (the zygote kills and reaps its children, then exits)
  // and waits for the zygote (it is this process's child) for at most 2 s,
  // then kills it.
  ~ZygoteClient();
  ZygoteClient(const ZygoteClient&) = delete;
  ZygoteClient& operator=(const ZygoteClient&) = delete;

  // Asks for a child running `role` with `args` and `fds`; returns its pid,
  // or -1 with `*why` (the zygote's error, e.g. "unknown role 'x'; supported:
  // scan", or that the zygote is gone: then alive() is false). Blocks until
  // the zygote answers, at most `answer_timeout_s` seconds: a zygote that
  // does not answer by then, or that is found stopped (SIGSTOP, SIGTSTP) or
  // dead meanwhile, is killed and gone. Exit reports read meanwhile are kept
  // for TakeExits.
  pid_t Fork(const std::string& role, const std::vector<std::string>& args, const ZygoteFds& fds, std::string* why,
             double answer_timeout_s = 10.0);
  // Asks the zygote to send `sig` to its child `pid` (ignored once reaped).
  // False when the zygote is gone.
  bool Kill(pid_t pid, int sig);
  // Readable when the zygote has sent something (poll it with POLLIN).
  int fd() const noexcept { return sock_; }
  // Reads what has arrived, without blocking, and returns the exit reports
  // so far (each once). It also looks at the zygote process (waitpid
  // WNOHANG|WUNTRACED: it is this process's child): one that ended is gone,
  // one found stopped is killed (SIGKILL) and gone, since it could serve no
  // request again. After it, alive() says whether the zygote is still there.
  std::vector<ZygoteExit> TakeExits();
  // Gives the zygote up: kills it (SIGKILL; its children die with it,
  // PR_SET_PDEATHSIG), reaps it and makes it gone with `why`. For a zygote
  // that stopped answering (an exit report that never comes).
  void Abandon(const std::string& why);
  bool alive() const noexcept { return sock_ >= 0 && alive_; }
  // Why the zygote is gone ("" while alive), e.g. "the zygote (pid P) was
  // killed by SIGKILL".
  const std::string& gone_reason() const noexcept { return gone_; }
  // The zygote's waitpid status once this client reaped it (WIFSIGNALED,
  // WIFEXITED; WIFSTOPPED for one found stopped, which was then killed);
  // -1 while alive or when unknown.
  int end_status() const noexcept { return end_status_; }
  pid_t pid() const noexcept { return pid_; }

 private:
  ZygoteClient() = default;
  // Reads one datagram (blocking or not); false when none (or the zygote is gone).
  bool ReadOne(bool block, std::string* text);
  void Gone(const std::string& why);
  // Looks at the zygote process without blocking (up to `settle_ms` for one
  // whose socket closed, to learn how it ended); false once it is gone.
  bool CheckProcess(int settle_ms = 0);
  int sock_ = -1;
  bool reaped_ = false;
  int end_status_ = -1;
  pid_t pid_ = -1;
  bool alive_ = true;
  std::string gone_;
  long next_id_ = 1;
  std::vector<ZygoteExit> exits_;
};

}  // namespace ge::host
