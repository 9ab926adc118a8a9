// ge/log_spdlog.h (internal, not installed): the spdlog loggers behind
// ge/log.h, for the project's own libraries and tools. Engines use ge/log.h
// (levels, LogSink); spdlog stays out of the installed headers so that our
// libraries' ABI is not spdlog's.
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "ge/log.h"

namespace ge {

// The spdlog level of `l` (kOff: off).
constexpr spdlog::level::level_enum ToSpdlog(LogLevel l) noexcept {
  switch (l) {
    case LogLevel::kTrace: return spdlog::level::trace;
    case LogLevel::kDebug: return spdlog::level::debug;
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kWarn: return spdlog::level::warn;
    case LogLevel::kError: return spdlog::level::err;
    case LogLevel::kCritical: return spdlog::level::critical;
    case LogLevel::kOff: return spdlog::level::off;
  }
  return spdlog::level::warn;
}

// The LogLevel of spdlog's `l` (anything past critical: kOff).
constexpr LogLevel FromSpdlog(spdlog::level::level_enum l) noexcept {
  switch (l) {
    case spdlog::level::trace: return LogLevel::kTrace;
    case spdlog::level::debug: return LogLevel::kDebug;
    case spdlog::level::info: return LogLevel::kInfo;
    case spdlog::level::warn: return LogLevel::kWarn;
    case spdlog::level::err: return LogLevel::kError;
    case spdlog::level::critical: return LogLevel::kCritical;
    default: return LogLevel::kOff;
  }
}

// The logger of `component`, created on first use on the shared sink
// (stderr, or the LogSink of SetLogSink). Never null. Thread-safe.
std::shared_ptr<spdlog::logger> Logger(const std::string& component);

}  // namespace ge
