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
#include <optional>

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

// Paths are bytes (POSIX) and need not be UTF-8. Where a path must be text
// (JSON: the registry cache, the scanner protocol, `--json` output), it is
// written in one lossless convention:
//   a valid UTF-8 sequence        -> itself
//   any other byte                -> \xNN (two lowercase hex digits)
//   a backslash                   -> \\ (doubled)
// so that "caf\xff" is the 4-byte name c a f 0xff and every path has one
// spelling. Paths without a backslash or a non-UTF-8 byte (almost all) are
// unchanged. ParsePathText reverses it; nullopt for a text that is not such a
// spelling (a lone backslash, a bad escape). Pure functions; thread-safe.
std::string PathText(std::string_view path);
std::optional<std::string> ParsePathText(std::string_view text);
// Free text (messages, tracebacks) for JSON: like PathText, but a backslash
// stays single (the text is for reading; only invalid bytes are escaped).
std::string Utf8Text(std::string_view text);
// Length of the valid UTF-8 sequence starting at text[i] (1..4), 0 if none.
std::size_t Utf8SequenceLength(std::string_view text, std::size_t i);

}  // namespace ge
