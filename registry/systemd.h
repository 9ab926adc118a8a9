// systemd.h: what ge-plugin-registryd says to and takes from systemd
// (share/systemd/ge-plugin-registryd.{service,socket}.in; share/docs/registry.md,
// "systemd"), through libsystemd (sd_notify(3), sd_listen_fds(3)). Outside
// systemd (no NOTIFY_SOCKET, no LISTEN_FDS) every function does nothing.
// Call from the daemon's main thread only (they read and clear the environment).
#pragma once

#include <string>

namespace ge::registry {

// A listening Unix stream socket passed by socket activation (LISTEN_FDS for
// this process: the socket unit), or -1 when there is none. Exactly one
// socket is expected; anything else (several, or one that is not a listening
// AF_UNIX stream socket) is an error: -1 with `why` set. On success `path` is
// the socket's file system path (for logs and the status reply). The
// descriptor (close-on-exec: scanner children never get it) belongs to the caller; the environment variables are removed so
// that scanner children do not see them.
int InheritedListenSocket(std::string* path, std::string* why);

// sd_notify: "READY=1" with a STATUS line once serving; "STOPPING=1" when
// stopping. Errors are ignored (systemd's Type=notify start-up times out and
// says so).
void NotifyReady(const std::string& status);
void NotifyStopping();

}  // namespace ge::registry
