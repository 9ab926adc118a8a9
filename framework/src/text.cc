// text.cc: see ge/text.h.
#include "ge/text.h"

#include <cstdio>

namespace ge {

std::string TerminalSafe(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  char buf[8];
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      if (keep_newlines && (c == '\n' || c == '\t')) {
        out.push_back(static_cast<char>(c));
      } else {
        std::snprintf(buf, sizeof(buf), "\\x%02x", c);
        out += buf;
      }
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      std::snprintf(buf, sizeof(buf), "\\u00%02x", static_cast<unsigned char>(text[i + 1]));
      out += buf;
      ++i;
    } else if (c == 0xe2 && i + 2 < text.size() &&
               ((static_cast<unsigned char>(text[i + 1]) == 0x80 && static_cast<unsigned char>(text[i + 2]) >= 0xaa &&
                 static_cast<unsigned char>(text[i + 2]) <= 0xae) ||
                (static_cast<unsigned char>(text[i + 1]) == 0x81 && static_cast<unsigned char>(text[i + 2]) >= 0xa6 &&
                 static_cast<unsigned char>(text[i + 2]) <= 0xa9))) {
      const unsigned cp = 0x2000u + ((static_cast<unsigned char>(text[i + 1]) & 0x3fu) << 6) +
                          (static_cast<unsigned char>(text[i + 2]) & 0x3fu);
      std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      out += buf;
      i += 2;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string Abbreviate(std::string_view value, std::size_t max_chars) {
  if (value.size() <= max_chars) return std::string(value);
  std::size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;  // a continuation byte
  return std::string(value.substr(0, cut)) + "... (" + std::to_string(value.size()) + " bytes)";
}

std::size_t Utf8SequenceLength(std::string_view t, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(t[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned lo = 0x80, hi = 0xBF;  // bounds of the second byte (no overlong forms, no surrogates)
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > t.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

namespace {
std::string EscapeBytes(std::string_view text, bool double_backslash) {
  std::string out;
  out.reserve(text.size());
  char buf[8];
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = Utf8SequenceLength(text, i);
    if (n == 0) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(text[i]));
      out += buf;
      ++i;
    } else {
      if (double_backslash && text[i] == '\\') out.push_back('\\');
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}
int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string PathText(std::string_view path) { return EscapeBytes(path, true); }
std::string Utf8Text(std::string_view text) { return EscapeBytes(text, false); }

std::optional<std::string> ParsePathText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '\\') {
      out.push_back('\\');
      ++i;
    } else if (i + 3 < text.size() && text[i + 1] == 'x' && HexDigit(text[i + 2]) >= 0 && HexDigit(text[i + 3]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(text[i + 2]) * 16 + HexDigit(text[i + 3])));
      i += 3;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace ge
