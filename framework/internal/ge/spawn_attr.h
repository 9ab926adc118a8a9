// ge/spawn_attr.h (internal, not installed): posix_spawn attributes for a plain child process.
//
// A child our tools or the engine spawn (a zygote, a scanner, a plugin worker)
// starts with no signal blocked and every signal at its default disposition,
// whatever its parent did to its own: an engine that ignores SIGCHLD or
// blocks SIGTERM would otherwise pass that on through exec (ignored
// dispositions and the mask survive it), and a zygote or worker that cannot
// wait for its children, or be asked to end, misreports its plugins.
#pragma once

#include <signal.h>
#include <spawn.h>

namespace ge {

// RAII: posix_spawnattr_t with POSIX_SPAWN_SETSIGMASK (empty) and
// POSIX_SPAWN_SETSIGDEF (all signals), and optionally its own process group
// (POSIX_SPAWN_SETPGROUP, group 0: the child leads a new one). Pass get() to
// posix_spawn. Not copyable; single-threaded use.
class PlainSpawnAttr {
 public:
  explicit PlainSpawnAttr(bool own_process_group = false) {
    posix_spawnattr_init(&attr_);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr_, &none);
    posix_spawnattr_setsigdefault(&attr_, &all);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (own_process_group) {
      posix_spawnattr_setpgroup(&attr_, 0);
      flags |= POSIX_SPAWN_SETPGROUP;
    }
    posix_spawnattr_setflags(&attr_, flags);
  }
  ~PlainSpawnAttr() { posix_spawnattr_destroy(&attr_); }
  PlainSpawnAttr(const PlainSpawnAttr&) = delete;
  PlainSpawnAttr& operator=(const PlainSpawnAttr&) = delete;
  const posix_spawnattr_t* get() const noexcept { return &attr_; }

 private:
  posix_spawnattr_t attr_;
};

}  // namespace ge
