// Component loggers on a shared stderr sink.
#include "ge/log.h"

#include <cstdlib>
#include <mutex>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "ge/text.h"

namespace ge {

namespace {
std::mutex g_mu;  // leaf lock: never held while waiting for anything else
std::optional<spdlog::level::level_enum> g_level;

spdlog::level::level_enum CurrentLevel() {
  if (g_level) return *g_level;
  const char* env = std::getenv("GE_LOG_LEVEL");
  if (env != nullptr) {
    if (auto l = ParseLogLevel(env)) return *l;
  }
  return spdlog::level::warn;
}

// %* : the message with control characters escaped (ge/text.h): log lines
// carry plugin text (exception messages, names), which must not drive the
// terminal. Newlines and tabs stay (tracebacks).
class TerminalSafePayload final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string safe = TerminalSafe(std::string_view(msg.payload.data(), msg.payload.size()), true);
    dest.append(safe.data(), safe.data() + safe.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<TerminalSafePayload>(); }
};

std::shared_ptr<spdlog::sinks::sink> Sink() {
  static auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  return sink;
}
}  // namespace

std::optional<spdlog::level::level_enum> ParseLogLevel(const std::string& name) {
  static const std::pair<const char*, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"warning", spdlog::level::warn}, {"error", spdlog::level::err},
      {"critical", spdlog::level::critical}, {"off", spdlog::level::off}};
  for (const auto& [n, l] : kLevels) {
    if (name == n) return l;
  }
  return std::nullopt;
}

std::shared_ptr<spdlog::logger> Logger(const std::string& component) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (auto existing = spdlog::get(component)) return existing;
  auto logger = std::make_shared<spdlog::logger>(component, Sink());
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<TerminalSafePayload>('*').set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %*");
  logger->set_formatter(std::move(formatter));
  logger->set_level(CurrentLevel());
  spdlog::register_logger(logger);
  return logger;
}

void SetLogLevel(spdlog::level::level_enum level) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_level = level;
  spdlog::apply_all([level](const std::shared_ptr<spdlog::logger>& l) { l->set_level(level); });
}

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
