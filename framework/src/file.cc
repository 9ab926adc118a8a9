// file.cc: see ge/file.h.
#include "ge/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ostream>

namespace ge {

std::optional<std::string> ReadBoundedFile(const std::string& path, std::size_t max_bytes, const std::string& what,
                                           std::string* why) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (why) *why = path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  std::optional<std::string> text;
  if (::fstat(fd, &st) != 0) {
    if (why) *why = path + ": " + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    if (why) *why = path + " is not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    if (why) *why = path + " is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                    " a " + what + " may be";
  } else {
    std::string buf(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t off = 0;
    while (off < buf.size()) {
      const ssize_t n = ::read(fd, buf.data() + off, buf.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    buf.resize(off);  // a file that shrank while read: what is there
    text = std::move(buf);
  }
  ::close(fd);
  return text;
}

int FinishOutput(const char* tool, std::ostream& out, std::ostream& err, int rc) {
  errno = 0;
  out.flush();
  if (out) return rc;
  const int e = errno;
  err << tool << ": error: cannot write the output" << (e ? std::string(": ") + std::strerror(e) : std::string()) << "\n";
  return rc != 0 ? rc : 1;
}

}  // namespace ge
