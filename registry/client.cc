// client.cc: see client.h.
#include "client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "paths.h"

namespace ge::registry {

Client::~Client() {
  if (fd_ >= 0) ::close(fd_);
}

bool Client::Connect(const std::string& path, int timeout_ms, std::string* why) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (auto problem = SocketPathProblem(path)) {
    *why = *problem;
    return false;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *why = "no registry daemon at " + path + " (" + std::strerror(errno) + ")";
    if (fd_ >= 0) ::close(fd_), fd_ = -1;
    return false;
  }
  auto hello = Request({{"cmd", "hello"}, {"protocol", kProtocolVersion}, {"client", "ge-plugin-ls"}}, why, timeout_ms);
  if (!hello) return false;
  if (!hello->value("ok", false)) {
    *why = "registry daemon at " + path + " refused the handshake: " + hello->value("error", std::string("?"));
    return false;
  }
  hello_ = *hello;
  return true;
}

std::optional<std::string> Client::RequestRaw(const std::string& line, std::string* why, int timeout_ms) {
  if (fd_ < 0) {
    *why = "not connected";
    return std::nullopt;
  }
  std::string msg = line + "\n";
  std::size_t off = 0;
  while (off < msg.size()) {
    const ssize_t n = ::send(fd_, msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = std::string("cannot send to the registry daemon: ") + std::strerror(errno);
      return std::nullopt;
    }
    off += static_cast<std::size_t>(n);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto nl = buf_.find('\n');
    if (nl != std::string::npos) {
      std::string out = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return out;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      *why = "the registry daemon did not answer in time";
      return std::nullopt;
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char tmp[1 << 16];
    const ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = "the registry daemon closed the connection";
      return std::nullopt;
    }
    buf_.append(tmp, static_cast<std::size_t>(n));
  }
}

std::optional<nlohmann::json> Client::Request(const nlohmann::json& req, std::string* why, int timeout_ms) {
  auto line = RequestRaw(req.dump(), why, timeout_ms);
  if (!line) return std::nullopt;
  auto j = nlohmann::json::parse(*line, nullptr, false);
  if (!j.is_object()) {
    *why = "the registry daemon sent a malformed reply";
    return std::nullopt;
  }
  return j;
}

}  // namespace ge::registry
