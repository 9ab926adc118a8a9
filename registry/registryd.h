// registryd.h: ge-plugin-registryd as a library function (tests may call it).
#pragma once

#include <ostream>
#include <sys/types.h>

namespace ge::registry {

// Runs the registry daemon until SIGTERM/SIGINT. Exit codes: 0 clean stop,
// 1 runtime error (socket in use, cannot bind), 2 usage error.
int RunRegistryd(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// The SO_PEERCRED rule: may the peer `peer_uid` change the state of a daemon
// running as `daemon_uid`? (root and the daemon's own user may.)
inline bool MayChangeState(uid_t peer_uid, uid_t daemon_uid) { return peer_uid == 0 || peer_uid == daemon_uid; }

}  // namespace ge::registry
