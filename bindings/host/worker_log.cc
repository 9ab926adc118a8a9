// worker_log.cc: a process worker's log lines over a stream socket (worker_log.h).
#include "worker_log.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "ge/log_spdlog.h"

namespace ge::host {

namespace {

struct Header {
  uint8_t level;
  uint8_t reserved;
  uint16_t component_len;
  uint32_t message_len;
};
static_assert(sizeof(Header) == 8, "the record header is 8 bytes");

// A component name the engine creates a logger for: the worker's own names
// ("host", "plugin", ...); anything else is filed under "plugin".
bool PlainName(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}

class WorkerLogSink final : public LogSink {
 public:
  WorkerLogSink(int fd, std::atomic<uint32_t>* written) : fd_(fd), written_(written) {}
  ~WorkerLogSink() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void Write(LogLevel level, std::string_view component, std::string_view message) override {
    if (component.size() > kMaxLogComponent) component = component.substr(0, kMaxLogComponent);
    std::string cut;
    if (message.size() > kMaxLogMessage) {
      cut.assign(message.substr(0, kMaxLogMessage - 64));
      cut += " ... (" + std::to_string(message.size()) + " bytes; cut)";
      message = cut;
    }
    Header h{static_cast<uint8_t>(level), 0, static_cast<uint16_t>(component.size()),
             static_cast<uint32_t>(message.size())};
    std::string rec(reinterpret_cast<const char*>(&h), sizeof(h));
    rec.append(component.data(), component.size());
    rec.append(message.data(), message.size());
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ < 0) return;
    for (std::size_t done = 0; done < rec.size();) {
      const ssize_t n = ::send(fd_, rec.data() + done, rec.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {  // the engine closed its end: nobody reads any more
        ::close(fd_);
        fd_ = -1;
        return;
      }
      done += static_cast<std::size_t>(n);
    }
    if (written_ != nullptr) written_->fetch_add(1, std::memory_order_release);
  }

 private:
  std::mutex mu_;  // leaf lock: one record at a time on the socket
  int fd_;
  std::atomic<uint32_t>* written_;
};

}  // namespace

std::shared_ptr<LogSink> MakeWorkerLogSink(int fd, std::atomic<uint32_t>* written) {
  return std::make_shared<WorkerLogSink>(fd, written);
}

WorkerLogReader::WorkerLogReader(int fd, std::string who) : fd_(fd), who_(std::move(who)) {
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
  thread_ = std::thread([this] { Run(); });
}

WorkerLogReader::~WorkerLogReader() {
  Stop();
  for (int f : wake_) {
    if (f >= 0) ::close(f);
  }
}

void WorkerLogReader::Drain() {
  std::lock_guard<std::mutex> lock(mu_);
  ReadAvailable();
}

void WorkerLogReader::Stop() {
  if (wake_[1] >= 0) {
    const char c = 'x';
    (void)!::write(wake_[1], &c, 1);
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  ReadAvailable();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ended_ = true;
}

void WorkerLogReader::Run() {
  for (;;) {
    int fd;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_ || fd_ < 0) return;
      fd = fd_;
    }
    pollfd p[2] = {{fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    const int n = ::poll(p, wake_[0] >= 0 ? 2 : 1, wake_[0] >= 0 ? -1 : 100);
    if (n < 0 && errno != EINTR) return;
    if (wake_[0] >= 0 && (p[1].revents & POLLIN)) return;  // Stop() drains what is left
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!ReadAvailable()) {
        ended_ = true;
        return;
      }
    }
  }
}

bool WorkerLogReader::ReadAvailable() {
  if (fd_ < 0 || ended_) return false;
  bool open = true;
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(fd_, chunk, sizeof(chunk));
    if (n > 0) {
      buf_.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) open = false;
    break;
  }
  std::size_t at = 0;
  while (buf_.size() - at >= sizeof(Header)) {
    Header h;
    std::memcpy(&h, buf_.data() + at, sizeof(h));
    if (h.level > static_cast<uint8_t>(LogLevel::kCritical) || h.component_len > kMaxLogComponent ||
        h.message_len > kMaxLogMessage) {
      Logger("host")->warn("{}: its log channel carried a malformed record (a plugin wrote on the descriptor?); its "
                           "later log lines are dropped",
                           who_);
      buf_.clear();
      ::close(fd_);
      fd_ = -1;
      return false;
    }
    const std::size_t whole = sizeof(Header) + h.component_len + h.message_len;
    if (buf_.size() - at < whole) break;
    std::string component = buf_.substr(at + sizeof(Header), h.component_len);
    if (!PlainName(component)) component = "plugin";
    const std::string_view message(buf_.data() + at + sizeof(Header) + h.component_len, h.message_len);
    Logger(component)->log(ToSpdlog(static_cast<LogLevel>(h.level)), "{}", message);
    at += whole;
  }
  buf_.erase(0, at);
  return open;
}

}  // namespace ge::host
