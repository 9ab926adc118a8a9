// Component loggers (spdlog) on one shared sink: stderr, or the engine's
// ge::LogSink (ge/log.h). spdlog is private to this library and the project's
// own tools (ge/log_spdlog.h).
#include "ge/log_spdlog.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "ge/text.h"

namespace ge {

namespace {
std::mutex g_mu;  // leaf lock: never held while waiting for anything else
std::optional<LogLevel> g_level;
std::shared_ptr<LogSink> g_user_sink;  // read and written with std::atomic_load/store

LogLevel LevelLocked() {
  if (g_level) return *g_level;
  const char* env = std::getenv("GE_LOG_LEVEL");
  if (env != nullptr) {
    if (auto l = ParseLogLevel(env)) return *l;
  }
  return LogLevel::kWarn;
}

std::string SafePayload(const spdlog::details::log_msg& msg) {
  return TerminalSafe(std::string_view(msg.payload.data(), msg.payload.size()), true);
}

// %* : the message with control characters escaped (ge/text.h): log lines
// carry plugin text (exception messages, names), which must not drive the
// terminal. Newlines and tabs stay (tracebacks).
class TerminalSafePayload final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string safe = SafePayload(msg);
    dest.append(safe.data(), safe.data() + safe.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<TerminalSafePayload>(); }
};

// The one sink of every logger: the engine's LogSink when installed, else
// stderr (formatted with the loggers' pattern).
class RoutingSink final : public spdlog::sinks::sink {
 public:
  void log(const spdlog::details::log_msg& msg) override {
    if (std::shared_ptr<LogSink> user = std::atomic_load(&g_user_sink)) {
      const std::string text = SafePayload(msg);
      user->Write(FromSpdlog(msg.level), std::string_view(msg.logger_name.data(), msg.logger_name.size()), text);
      return;
    }
    stderr_->log(msg);
  }
  void flush() override {
    if (std::shared_ptr<LogSink> user = std::atomic_load(&g_user_sink)) user->Flush();
    stderr_->flush();
  }
  void set_pattern(const std::string& pattern) override { stderr_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> f) override { stderr_->set_formatter(std::move(f)); }

 private:
  std::shared_ptr<spdlog::sinks::stderr_color_sink_mt> stderr_ = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
};

std::shared_ptr<spdlog::sinks::sink> Sink() {
  static auto sink = std::make_shared<RoutingSink>();
  return sink;
}
}  // namespace

std::optional<LogLevel> ParseLogLevel(const std::string& name) {
  static const std::pair<const char*, LogLevel> kLevels[] = {
      {"trace", LogLevel::kTrace}, {"debug", LogLevel::kDebug}, {"info", LogLevel::kInfo},
      {"warn", LogLevel::kWarn},   {"warning", LogLevel::kWarn}, {"error", LogLevel::kError},
      {"critical", LogLevel::kCritical}, {"off", LogLevel::kOff}};
  for (const auto& [n, l] : kLevels) {
    if (name == n) return l;
  }
  return std::nullopt;
}

const char* LogLevelName(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kTrace: return "trace";
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
    case LogLevel::kCritical: return "critical";
    case LogLevel::kOff: return "off";
  }
  return "warn";
}

std::shared_ptr<spdlog::logger> Logger(const std::string& component) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (auto existing = spdlog::get(component)) return existing;
  auto logger = std::make_shared<spdlog::logger>(component, Sink());
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<TerminalSafePayload>('*').set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %*");
  logger->set_formatter(std::move(formatter));
  logger->set_level(ToSpdlog(LevelLocked()));
  spdlog::register_logger(logger);
  return logger;
}

void SetLogLevel(LogLevel level) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_level = level;
  spdlog::apply_all([level](const std::shared_ptr<spdlog::logger>& l) { l->set_level(ToSpdlog(level)); });
}

LogLevel CurrentLogLevel() {
  std::lock_guard<std::mutex> lock(g_mu);
  return LevelLocked();
}

void SetLogSink(std::shared_ptr<LogSink> sink) { std::atomic_store(&g_user_sink, std::move(sink)); }

bool ApplyLogLevelOption(const std::string& value, const char* tool, std::ostream& err) {
  if (value.empty()) return true;
  auto level = ParseLogLevel(value);
  if (!level) {
    err << tool << ": unknown --log-level '" << value << "' (trace, debug, info, warn, error, critical, off)\n";
    return false;
  }
  SetLogLevel(*level);
  return true;
}

}  // namespace ge
