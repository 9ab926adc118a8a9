// log_sink.cc: where captured plugin stdout/stderr lines go (SetLogSink; _log_line, called by ge._loader's writer).
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

#include "errors.h"
#include "ge/text.h"
#include "views.h"

namespace ge::py {

namespace {

std::mutex g_sink_mu;  // guards g_sink only; never held while calling Python
LogSink g_sink;

void Emit(const std::string& plugin, bool is_stderr, const std::string& line) {
  LogSink sink;
  {
    std::lock_guard<std::mutex> lock(g_sink_mu);
    sink = g_sink;
  }
  if (sink) {
    sink(plugin, is_stderr, line);
  } else {
    std::fprintf(is_stderr ? stderr : stdout, "[%s] %s\n", plugin.c_str(), line.c_str());
  }
}

}  // namespace

void SetLogSink(LogSink sink) {
  std::lock_guard<std::mutex> lock(g_sink_mu);
  g_sink = std::move(sink);
}

void RegisterLogLine() {
  bp::def("_log_line", +[](const std::string& plugin, bool is_stderr, bp::object text) {
    // Control characters (NUL, terminal escapes) are escaped before they reach the log.
    const std::string clean = ge::TerminalSafe(SafeStr(text.ptr()), /*keep_newlines=*/true);  // one line: keeps tabs
    Emit(plugin, is_stderr, clean);
  }, "Writes one line of a plugin's captured output to the host log (internal).");
}

}  // namespace ge::py
