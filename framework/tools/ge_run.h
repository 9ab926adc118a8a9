// ge_run.h: the ge-run command as a library function (tests call it directly).
#pragma once

#include <ostream>

namespace ge::tools {

// Runs `ge-run` with argv-style arguments, printing the summary to `out` and
// errors to `err`. Returns the exit code: 0 success, 1 error (bad graph,
// unknown op, mismatch, plugin failure; no output file is left behind),
// 2 usage error. Never throws.
int RunGeRun(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace ge::tools
