// ge/text.h: text from plugins made safe to print on a terminal.
//
// Plugin-provided text (exception messages, op_types, printed lines) may hold
// terminal escape sequences, carriage returns or NUL bytes that would rewrite,
// recolour or cut what a tool prints. TerminalSafe escapes, losslessly and in
// one convention:
//   C0 controls (U+0000..U+001F) and DEL  -> \xNN    (e.g. ESC -> \x1b, NUL -> \x00)
//   C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F) -> \u00NN (e.g. CSI -> \u009b)
//   bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069),
//   which reorder what a terminal shows                  -> \u202e etc.
//   a backslash stays a backslash (the text is for reading, not for parsing back)
// '\n' and '\t' are kept when keep_newlines is set (tracebacks), escaped
// otherwise (one-line messages). JSON output never goes through this: it is
// exact (nlohmann escapes control characters itself).
// Pure function; thread-safe; allocates the result.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ge {

std::string TerminalSafe(std::string_view text, bool keep_newlines = false);

// A value quoted in an error message, cut when long: the first `max_chars`
// bytes (never splitting a UTF-8 sequence), then "... (N bytes)", so that a
// 16 MiB op_type gives a one-line error, not a 32 MiB one. Shorter values are
// returned unchanged. Pure function; thread-safe.
inline constexpr std::size_t kMaxQuotedChars = 200;
// Longest plugin-provided message (an exception's text) and traceback kept.
inline constexpr std::size_t kMaxMessageChars = 2000;
inline constexpr std::size_t kMaxDetailsChars = 20000;
std::string Abbreviate(std::string_view value, std::size_t max_chars = kMaxQuotedChars);

}  // namespace ge
