// systemd.cc: see systemd.h.
#include "systemd.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace ge::registry {

int InheritedListenSocket(std::string* path, std::string* why) {
  const int n = sd_listen_fds(/*unset_environment=*/1);
  if (n <= 0) {
    if (n < 0) *why = std::string("LISTEN_FDS: ") + std::strerror(-n);
    return -1;
  }
  if (n != 1) {
    *why = "socket activation passed " + std::to_string(n) +
           " sockets; ge-plugin-registryd serves one (one ListenStream= in the .socket unit)";
    return -1;
  }
  const int fd = SD_LISTEN_FDS_START;
  if (sd_is_socket_unix(fd, SOCK_STREAM, /*listening=*/1, nullptr, 0) <= 0) {
    *why = "the socket passed by systemd is not a listening Unix stream socket (ListenStream=/path in the .socket unit)";
    return -1;
  }
  // Not inherited by the scanner children (plugin code).
  if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    *why = std::string("cannot set FD_CLOEXEC on the socket passed by systemd: ") + std::strerror(errno);
    return -1;
  }
  sockaddr_un addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 && len > offsetof(sockaddr_un, sun_path) &&
      addr.sun_path[0] != '\0') {
    *path = std::string(addr.sun_path, strnlen(addr.sun_path, len - offsetof(sockaddr_un, sun_path)));
  } else {
    *path = "(socket passed by systemd)";
  }
  return fd;
}

void NotifyReady(const std::string& status) { (void)sd_notify(0, ("READY=1\nSTATUS=" + status).c_str()); }
void NotifyStopping() { (void)sd_notify(0, "STOPPING=1"); }

}  // namespace ge::registry
