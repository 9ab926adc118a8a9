// ge/log.h: one spdlog logger per component, on one shared stderr sink.
//
// Components: "host", "plugin" (captured plugin stdout/stderr), "engine",
// "ge-run", ... The level comes from SetLogLevel (the --log-level option) or
// else the GE_LOG_LEVEL environment variable (trace, debug, info, warn, error,
// critical, off; default warn). Thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include <spdlog/spdlog.h>

namespace ge {

// The logger of `component`, created on first use. Never null.
std::shared_ptr<spdlog::logger> Logger(const std::string& component);
// Parses a level name; nullopt when unknown.
std::optional<spdlog::level::level_enum> ParseLogLevel(const std::string& name);
// Sets the level of every component logger, present and future.
void SetLogLevel(spdlog::level::level_enum level);

// For command lines: applies a --log-level value (empty: keep the current
// level). On an unknown name prints "<tool>: unknown --log-level 'x' (trace,
// ...)" to `err` and returns false (a usage error).
bool ApplyLogLevelOption(const std::string& value, const char* tool, std::ostream& err);

}  // namespace ge
