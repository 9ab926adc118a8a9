// ge_run.h: the ge-run command as a library function (tests call it directly).
#pragma once

#include <functional>
#include <ostream>

namespace ge::tools {

// Runs `ge-run` with argv-style arguments, printing the summary to `out` and
// errors to `err`. Returns the exit code: 0 success, 1 error (bad graph,
// unknown op, mismatch, plugin failure; no output file is left behind),
// 2 usage error. Never throws. `before_teardown`, when given, is called with
// the exit code just before the plugin host is torn down (ge-run's main passes
// BoundTheExit; an in-process caller such as a test passes nothing, so its
// process is never ended behind its back).
int RunGeRun(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
             const std::function<void(int)>& before_teardown = {});

// Once a run's outputs are written and its status known, tearing down still
// runs plugin code: sub-interpreters ending (their atexit handlers) and
// Python's finalization (__del__ methods, module clean-up). BoundTheExit starts
// a watchdog that, if the process has not exited within kExitGraceS seconds,
// says so on stderr and ends it with `rc` without further clean-up. For the
// command only: main passes it to RunGeRun, and arms it again on return.
inline constexpr int kExitGraceS = 5;
void BoundTheExit(int rc);

}  // namespace ge::tools
