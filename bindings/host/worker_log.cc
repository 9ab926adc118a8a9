// worker_log.cc: a process worker's log lines over a stream socket (worker_log.h).
#include "worker_log.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "ge/log_spdlog.h"
#include "ge/text.h"
#include "worker_wire.h"

namespace ge::host {

namespace {

using Json = nlohmann::json;

// The largest frame the reader takes: a record of the longest message the
// sink writes, with room for its keys and component.
constexpr std::size_t kMaxRecordFrame = kMaxLogMessage + 4096;

class WorkerLogSink final : public LogSink {
 public:
  WorkerLogSink(int fd, std::atomic<uint32_t>* written) : fd_(fd), written_(written) {}
  ~WorkerLogSink() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void Write(LogLevel level, std::string_view component, std::string_view message) override {
    std::string cut;
    if (message.size() > kMaxLogMessage) {
      cut.assign(message.substr(0, kMaxLogMessage - 64));
      cut += " ... (" + std::to_string(message.size()) + " bytes; cut)";
      message = cut;
    }
    // Text, as nlohmann's MessagePack needs it: the sink's text is already
    // TerminalSafe; Utf8Text makes any byte that is not UTF-8 a \xNN.
    const Json rec = {{"level", static_cast<int>(level)},
                      {"component", Utf8Text(component)},
                      {"message", Utf8Text(message)}};
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ < 0) return;
    if (!wire::Send(fd_, rec)) {
      // The engine closed its end (EPIPE): ours is closed with the sink. A
      // descriptor that is not a socket any more (a plugin closed ours, and
      // may have reopened the number) is left alone: it is not ours.
      if (errno == EBADF || errno == ENOTSOCK) {
        fd_ = -1;
      } else {
        ::close(fd_);
        fd_ = -1;
      }
      return;
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

WorkerLogReader::WorkerLogReader(int fd, std::string plugin, std::string who)
    : fd_(fd), plugin_(std::move(plugin)), who_(std::move(who)) {
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
  if (!ended_ && !buf_.empty()) {
    Refuse("its log channel ended inside a record (" + std::to_string(buf_.size()) + " bytes left)");
  }
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
      if (!ReadAvailable()) return;
    }
  }
}

void WorkerLogReader::Refuse(const std::string& why) {
  Logger("host")->warn("{}: {} (a plugin writing on the log socket's descriptor?); its later log lines are dropped",
                       who_, why);
  buf_.clear();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ended_ = true;
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
  while (buf_.size() - at >= sizeof(uint32_t)) {
    uint32_t len = 0;
    std::memcpy(&len, buf_.data() + at, sizeof(len));
    if (len > kMaxRecordFrame) {
      Refuse("its log channel announced a record of " + std::to_string(len) + " bytes (at most " +
             std::to_string(kMaxRecordFrame) + ")");
      return false;
    }
    if (buf_.size() - at - sizeof(uint32_t) < len) break;
    const auto* body = reinterpret_cast<const uint8_t*>(buf_.data() + at + sizeof(uint32_t));
    const Json rec = Json::from_msgpack(body, body + len, /*strict=*/true, /*allow_exceptions=*/false);
    at += sizeof(uint32_t) + len;
    const bool fields = rec.is_object() && rec.contains("level") && rec["level"].is_number_integer() &&
                        rec.contains("component") && rec["component"].is_string() && rec.contains("message") &&
                        rec["message"].is_string();
    const int level = fields ? rec["level"].get<int>() : -1;
    if (level < static_cast<int>(LogLevel::kTrace) || level > static_cast<int>(LogLevel::kCritical)) {
      Refuse("its log channel carried a frame that is not a log record");
      return false;
    }
    // The worker's own components keep their name; anything else is the
    // plugin's doing and is filed as the plugin's, with its name.
    const std::string& component = rec["component"].get_ref<const std::string&>();
    const std::string message = Utf8Text(rec["message"].get_ref<const std::string&>());
    if (component == "host" || component == "plugin") {
      Logger(component)->log(ToSpdlog(static_cast<LogLevel>(level)), "{}", message);
    } else {
      Logger("plugin")->log(ToSpdlog(static_cast<LogLevel>(level)), "[{}] {}", plugin_, message);
    }
  }
  buf_.erase(0, at);
  return open;
}

}  // namespace ge::host
