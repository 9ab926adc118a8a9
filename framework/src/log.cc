// Component loggers on a shared stderr sink.
#include "ge/log.h"

#include <cstdlib>
#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>

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
  logger->set_pattern("[%H:%M:%S.%e] [%n] [%^%l%$] %v");
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
