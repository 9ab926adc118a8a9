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

}  // namespace ge
