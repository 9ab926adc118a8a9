// client.h: a blocking client of the registry daemon's socket protocol
// (line-delimited JSON; see share/docs/registry.md).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ge::registry {

class Client {
 public:
  Client() = default;
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  // Connects and does the version handshake. false (with `why`) when no
  // daemon answers or it speaks another protocol version.
  bool Connect(const std::string& socket_path, int timeout_ms, std::string* why);
  // Sends one request, returns the reply (nullopt with `why` on I/O errors).
  std::optional<nlohmann::json> Request(const nlohmann::json& req, std::string* why, int timeout_ms = 600000);
  // The raw reply line of a request (for callers that splice it).
  std::optional<std::string> RequestRaw(const std::string& line, std::string* why, int timeout_ms);
  const nlohmann::json& Hello() const { return hello_; }

 private:
  int fd_ = -1;
  std::string buf_;
  nlohmann::json hello_;
};

}  // namespace ge::registry
