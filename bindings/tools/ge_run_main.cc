// ge-run: execute a graph of C++ and Python custom ops (see ge_run.h).
//
// Plugin code may write to file descriptor 1 directly (os.write, subprocesses),
// which would corrupt the summary (e.g. --json) on stdout. So the summary gets
// a private duplicate of stdout and fd 1 is pointed at stderr for the run.
#include <unistd.h>

#include <ext/stdio_filebuf.h>
#include <iostream>

#include "ge_run.h"

int main(int argc, char** argv) {
  const int summary_fd = ::dup(STDOUT_FILENO);
  if (summary_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    const int rc = ge::tools::RunGeRun(argc, argv, std::cout, std::cerr, &ge::tools::BoundTheExit);
    ge::tools::BoundTheExit(rc);
    return rc;
  }
  __gnu_cxx::stdio_filebuf<char> buf(summary_fd, std::ios::out);
  std::ostream summary(&buf);
  const int rc = ge::tools::RunGeRun(argc, argv, summary, std::cerr, &ge::tools::BoundTheExit);
  summary.flush();
  ge::tools::BoundTheExit(rc);
  return rc;
}
