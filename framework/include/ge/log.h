// ge/log.h: the host's log levels and where its log lines go.
//
// Every component ("host", "plugin" (captured plugin stdout/stderr),
// "engine", "ge-run", "registryd", ...) logs through one shared sink: stderr
// by default, or the LogSink an embedding engine installs with SetLogSink.
// The level comes from SetLogLevel (the tools' --log-level option) or else the
// GE_LOG_LEVEL environment variable (trace, debug, info, warn, error,
// critical, off; default warn). This header has no logging library's types
// in it (the implementation's logging library is private to our shared
// libraries), so an engine needs no logging headers to build against ours.
// All functions are thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace ge {

// Severity of a log line, lowest first. kOff as a level turns logging off.
enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };

// Parses a level name: trace, debug, info, warn (or warning), error,
// critical, off. nullopt when unknown.
std::optional<LogLevel> ParseLogLevel(const std::string& name);
// The lower-case name of `level` ("warn" for kWarn), as ParseLogLevel reads it.
const char* LogLevelName(LogLevel level) noexcept;
// Sets the level of every component, present and future: lines below it are
// dropped before they are formatted.
void SetLogLevel(LogLevel level);
// The level in effect (SetLogLevel's, else GE_LOG_LEVEL's, else kWarn).
LogLevel CurrentLogLevel();

// For command lines: applies a --log-level value (empty: keep the current
// level). On an unknown name prints "<tool>: unknown --log-level 'x' (trace,
// ...)" to `err` and returns false (a usage error).
bool ApplyLogLevelOption(const std::string& value, const char* tool, std::ostream& err);

// Receives the log lines of every component instead of stderr.
class LogSink {
 public:
  virtual ~LogSink() = default;
  // One line at or above the current level. `component` is the logger's name
  // ("host", "plugin", ...); `message` is the text without time stamp or
  // level, control characters other than newline and tab escaped (lines carry
  // plugin text; ge/text.h TerminalSafe). Both views are valid only during the
  // call. Called on the logging thread, possibly from several threads at once:
  // implementations must be thread-safe, must not throw and must not log.
  virtual void Write(LogLevel level, std::string_view component, std::string_view message) = 0;
  // Called when the host flushes its log (before a process exits on an error).
  virtual void Flush() {}
};

// Sends every log line to `sink` (shared: kept alive while installed),
// including those of the engine's process-isolated plugins (their workers
// send their lines to the engine, which re-emits them here);
// nullptr restores the default stderr sink. Lines being written on other
// threads during the switch go to either sink.
void SetLogSink(std::shared_ptr<LogSink> sink);

}  // namespace ge
