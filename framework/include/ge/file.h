// ge/file.h: reading a whole file the tools were given, safely; and telling
// whether a tool's output was written.
//
// Every file a tool reads whole (a graph, a .npy input, the registry cache and
// its listing index) goes through ReadBoundedFile: it must be a regular file
// (a FIFO would block, /dev/zero never end) of at most `max_bytes`, checked on
// the opened descriptor before a byte is read, so nothing is read until memory
// runs out and nothing changes between the check and the read.
// Thread-safe; no exceptions.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>

namespace ge {

// The file's bytes, or nullopt with `why` (when given) naming the path and the
// reason: cannot open (strerror), "is not a regular file", "is N bytes, more
// than the M a <what> may be". `what` names the kind of file in that message
// ("graph", "registry file", ...).
std::optional<std::string> ReadBoundedFile(const std::string& path, std::size_t max_bytes, const std::string& what,
                                           std::string* why);

// A tool's exit status once its result went to `out`: `out` is flushed; if it
// could not be written (a full disk, a closed pipe: the stream failed), says
// "<tool>: error: cannot write the output" on `err` and returns 1 (or `rc`
// when that already is a failure), else returns `rc`. So a script never takes
// an empty or cut output for success. Not thread-safe for one `out`.
int FinishOutput(const char* tool, std::ostream& out, std::ostream& err, int rc);

}  // namespace ge
