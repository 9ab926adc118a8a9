// listing_summaries.cc: the listing index's summaries (listing_json.h:
// IsListedSummary, IsListedArray, SpelledAs). Its own translation unit: with
// the reply's SAX checker in the same one, GCC stopped inlining
// std::string::push_back into nlohmann's lexer there (the daemon path's
// `ge-plugin-ls --json` took 15% more instructions, callgrind).
#include <cstdint>
#include <string>

#include "ge/plugin/record.h"
#include "ge/text.h"
#include "listing_json.h"
#include "listing_keys.h"

namespace ge::registry {

namespace {

using namespace listing_keys;

// The warm `ge-plugin-ls --json` checks the index's `plugins` array (a third
// of a megabyte for 1000 plugins) on every run. nlohmann::json's SAX parser
// (as the reply's Checker in listing_json.cc) copies every string it reads
// byte by byte into a token buffer first: 1.7 ms of a 12 ms warm listing
// (perf record, a timing loop), 11M of its 35M instructions (callgrind).
// The summaries hold only objects, lists and strings, so this scanner checks
// that grammar directly over the bytes: JSON syntax (RFC 8259: whitespace,
// escapes, \u surrogate pairs, no control characters), well-formed UTF-8 (RFC
// 3629, ge::Utf8SequenceLength: the same table as nlohmann's lexer), and the
// summary's shape with the same rules and messages as the Checker had. A
// string is decoded only when its value is compared (keys, path, name, kind,
// isolation, status) and holds an escape; otherwise it is a view of the text.
// The bytes a JSON string holds as they are: ASCII from 0x20, but the quote and the backslash.
struct PlainBytes {
  bool b[256] = {};
  constexpr PlainBytes() {
    for (int c = 0x20; c < 0x80; ++c) b[c] = c != '"' && c != '\\';
  }
  constexpr bool operator[](unsigned char c) const { return b[c]; }
};
constexpr PlainBytes kPlainByte;

class SummaryScanner {
 public:
  // `path_text`: one summary naming that path (IsListedSummary); `plugins`: a
  // list of summaries, the k-th naming plugins[k] (IsListedArray).
  SummaryScanner(std::string_view text, std::string_view path_text, const std::vector<ListedPlugin>* plugins)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), path_text_(path_text), plugins_(plugins) {}

  // The whole text: one value of the expected kind, then only whitespace.
  bool Run() {
    SkipWs();
    if (p_ == end_) return Syntax("no value");
    const char c = *p_;
    if (plugins_) {
      if (c == '{') return Fail("an object where a list was expected");
      if (c != '[') return Top(c);
      if (!List()) return false;
    } else {
      if (c == '[') return Fail("an array where an object was expected");
      if (c != '{') return Top(c);
      if (!Summary(path_text_, {})) return false;
    }
    SkipWs();
    if (p_ != end_) return Syntax("more than one value");
    return true;
  }
  std::size_t summaries() const { return summaries_; }
  const std::string& problem() const { return problem_; }

 private:
  enum Kind { kString, kObject, kArray, kScalar, kNone };

  bool Fail(std::string why) {
    if (problem_.empty()) problem_ = std::move(why);
    return false;
  }
  bool Syntax(const char* what) {
    return Fail("not valid JSON at byte " + std::to_string(p_ - begin_) + " (" + what + ")");
  }
  std::string Level() const { return " (level " + std::to_string(depth_) + ")"; }
  bool Top(char c) { return KindOf(c) == kScalar ? Fail("a scalar where an object was expected") : Syntax("a value was expected"); }

  void SkipWs() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  // The kind of value starting with `c` (kNone: no value starts so). A
  // scalar is never valid in a summary, so its own syntax is not read (its
  // message names what was expected instead).
  static Kind KindOf(char c) {
    if (c == '"') return kString;
    if (c == '{') return kObject;
    if (c == '[') return kArray;
    return c == 't' || c == 'f' || c == 'n' || c == '-' || (c >= '0' && c <= '9') ? kScalar : kNone;
  }
  // The next value's kind, after whitespace; a byte that starts no value is
  // a syntax error (false).
  bool Next(Kind& k) {
    SkipWs();
    if (p_ == end_) return Syntax("a value was expected");
    k = KindOf(*p_);
    return k != kNone || Syntax("a value was expected");
  }
  // Expects `c` (after whitespace) and steps over it.
  bool Expect(char c, const char* what) {
    SkipWs();
    if (p_ == end_ || *p_ != c) return Syntax(what);
    ++p_;
    return true;
  }

  static int Hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // The four hex digits at q (q + 4 <= end_ checked by the caller), or -1.
  static long Hex4(const char* q) {
    long v = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = Hex(q[i]);
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    return v;
  }

  // A string at p_ (which is '"'). `value` (when not null) gets its value:
  // a view of the text when the string holds no escape, else the decoded
  // bytes in scratch_ (valid until the next string is decoded).
  bool String(std::string_view* value) {
    const char* const s = ++p_;
    bool escaped = false;
    for (;;) {
      // The bytes that need no check of their own, in a local pointer (a
      // char read through p_ could alias p_ itself: it would be reloaded).
      const char* q = p_;
      while (q != end_ && kPlainByte[static_cast<unsigned char>(*q)]) ++q;
      p_ = q;
      if (p_ == end_) return Syntax("a string is not closed");
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') break;
      if (c == '\\') {
        escaped = true;
        if (end_ - p_ < 2) return Syntax("a string is not closed");
        const char e = p_[1];
        if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
          p_ += 2;
          continue;
        }
        if (e != 'u' || end_ - p_ < 6) return Syntax("an invalid escape");
        const long u = Hex4(p_ + 2);
        if (u < 0) return Syntax("an invalid \\u escape");
        p_ += 6;
        if (u >= 0xDC00 && u <= 0xDFFF) return Syntax("a lone low surrogate");
        if (u >= 0xD800 && u <= 0xDBFF) {
          // A high surrogate: a low one must follow.
          if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u') return Syntax("a lone high surrogate");
          const long lo = Hex4(p_ + 2);
          if (lo < 0xDC00 || lo > 0xDFFF) return Syntax("a lone high surrogate");
          p_ += 6;
        }
      } else if (c < 0x20) {
        return Syntax("a control character in a string");
      } else {
        const std::size_t n = Utf8SequenceLength(std::string_view(begin_, end_ - begin_), p_ - begin_);
        if (n == 0) return Syntax("invalid UTF-8");
        p_ += n;
      }
    }
    const std::string_view raw(s, p_ - s);
    ++p_;
    if (value) *value = escaped ? Decode(raw) : raw;
    return true;
  }
  // The value of a string's checked text (escapes resolved, \u as UTF-8).
  std::string_view Decode(std::string_view raw) {
    scratch_.clear();
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\\') {
        scratch_.push_back(raw[i]);
        continue;
      }
      const char e = raw[++i];
      if (e != 'u') {
        scratch_.push_back(e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e);
        continue;
      }
      unsigned long cp = static_cast<unsigned long>(Hex4(raw.data() + i + 1));
      i += 4;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<unsigned long>(Hex4(raw.data() + i + 3)) - 0xDC00);
        i += 6;
      }
      if (cp < 0x80) {
        scratch_.push_back(static_cast<char>(cp));
      } else if (cp < 0x800) {
        scratch_.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        scratch_.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      } else if (cp < 0x10000) {
        scratch_.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        scratch_.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        scratch_.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      } else {
        scratch_.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        scratch_.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        scratch_.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        scratch_.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      }
    }
    return scratch_;
  }

  // Opens a container at p_ ('{' or '[').
  bool Open() {
    if (depth_ >= 64) return Fail("nested too deeply");
    ++depth_;
    ++p_;
    return true;
  }
  // A value that has no place here: its message, as the kind of value it is.
  bool Unexpected(Kind k) {
    return Fail(std::string(k == kObject ? "unexpected object" : k == kArray ? "unexpected list" : "unexpected value") + Level());
  }

  // Calls `element` for each element of the list at p_ ('['), which reads it.
  template <typename Element>
  bool Elements(Element element) {
    if (!Open()) return false;
    SkipWs();
    if (p_ != end_ && *p_ == ']') {
      ++p_;
      --depth_;
      return true;
    }
    for (;;) {
      Kind k = kNone;
      if (!Next(k) || !element(k)) return false;
      SkipWs();
      if (p_ != end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      if (!Expect(']', "',' or ']' was expected")) return false;
      --depth_;
      return true;
    }
  }
  // Calls `member(key, kind of value)` for each member of the object at p_
  // ('{'), which reads the value.
  template <typename Member>
  bool Members(Member member) {
    if (!Open()) return false;
    SkipWs();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      --depth_;
      return true;
    }
    for (;;) {
      SkipWs();
      if (p_ == end_ || *p_ != '"') return Syntax("a key was expected");
      std::string_view key;
      if (!String(&key)) return false;
      // `key` (a view of the text, or of scratch_ when escaped) is valid
      // until the value's first string: `member` checks it first.
      Kind k = kNone;
      if (!Expect(':', "':' was expected") || !Next(k) || !member(key, k)) return false;
      SkipWs();
      if (p_ != end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      if (!Expect('}', "',' or '}' was expected")) return false;
      --depth_;
      return true;
    }
  }
  // A list of strings (prototypes, capabilities).
  bool Strings() {
    return Elements([&](Kind k) {
      if (k == kString) return String(nullptr);
      return k == kScalar ? Fail("a list of strings holds a non-string") : Unexpected(k);
    });
  }
  // Key `k` of an object with the fields `keys`: known, not seen before.
  // `index` holds the previous key's index (-1 before the first) and gets this one's.
  bool Field(std::string_view k, const std::string_view* keys, std::size_t n, const char* what, uint32_t& seen, int& index) {
    index = IndexOf(k, keys, static_cast<int>(n), index + 1);
    if (index < 0) return Fail(std::string("unknown ") + what + " field '" + std::string(k) + "'");
    if (seen & (1u << index)) return Fail(std::string(what) + " field '" + std::string(k) + "' given twice");
    seen |= 1u << index;
    return true;
  }

  bool Op() {
    uint32_t seen = 0;
    int i = -1;
    const bool ok = Members([&](std::string_view key, Kind k) {
      if (!Field(key, kOpKeys.data(), kOpKeys.size(), "op", seen, i)) return false;
      const std::string_view name = kOpKeys[i];
      if (i == kCapabilities) {
        if (k == kArray) return Strings();
        return k == kObject ? Unexpected(k) : Fail("op field 'capabilities' must be a list");
      }
      if (k == kString) return String(nullptr);
      if (k == kArray) return Fail("op field '" + std::string(name) + "' must not be a list");
      return k == kObject ? Unexpected(k) : Fail("op field '" + std::string(name) + "' must be a string");
    });
    if (!ok) return false;
    return (seen & 3u) == 3u || Fail("an op lacks 'op_type' or 'capabilities'");
  }

  // One summary at p_ ('{'): naming `path_text` (summary mode) or the
  // plugin `expect` (list mode: name and path as discovered).
  bool Summary(std::string_view path_text, const ListedPlugin* expect) {
    uint32_t seen = 0;
    int i = -1;
    const bool ok = Members([&](std::string_view key, Kind k) {
      if (!Field(key, kSummaryKeys.data(), kSummaryKeys.size(), "summary", seen, i)) return false;
      const std::string_view field = kSummaryKeys[i];
      if (i == kPrototypes || i == kOps || i == kUnprototyped) {
        if (k == kArray) {
          if (i == kPrototypes) return Strings();
          return Elements([&](Kind e) { return e == kObject ? Op() : Unexpected(e); });
        }
        return k == kObject ? Unexpected(k) : Fail("summary field '" + std::string(field) + "' must be a list");
      }
      if (k == kObject) return Unexpected(k);
      if (k == kArray) return Fail("summary field '" + std::string(field) + "' must not be a list");
      if (k == kScalar) return Fail("summary field '" + std::string(field) + "' must be a string");
      const bool compared = i == kPath || i == kName || i == kKind || i == kIsolation || i == kStatus;
      std::string_view v;
      if (!String(compared ? &v : nullptr)) return false;
      switch (i) {
        case kPath:
          if (expect) {
            return SpelledAs(v, expect->path, true) ||
                   Fail("summary " + std::to_string(summaries_) + " names another path");
          }
          return v == path_text || Fail("the summary names another path");
        case kName:
          return !expect || SpelledAs(v, expect->name, false) ||
                 Fail("summary " + std::to_string(summaries_) + " names another plugin");
        case kKind:
          return v == "python" || v == "op_library" || Fail("unknown kind '" + std::string(v) + "'");
        case kIsolation:
          return KnownIsolation(v) || Fail("unknown isolation '" + std::string(v) + "'");
        case kStatus: {
          const auto st = plugin::ParseStatus(v);
          if (!st) return Fail("unknown status '" + std::string(v) + "'");
          // The index never passes an "insecure" verdict through: it is stale
          // once the plugin is safe or insecure plugins are allowed.
          return *st != plugin::PluginStatus::kInsecure || Fail("status insecure");
        }
        default:
          return true;
      }
    });
    if (!ok) return false;
    if (seen != (1u << kSummaryKeys.size()) - 1) return Fail("a summary field is missing");
    ++summaries_;
    return true;
  }

  bool List() {
    return Elements([&](Kind k) {
      if (k != kObject) return Unexpected(k);
      if (summaries_ >= plugins_->size()) return Fail("summary " + std::to_string(summaries_) + " names another path");
      return Summary({}, &(*plugins_)[summaries_]);
    });
  }

  const char* const begin_;
  const char* p_;
  const char* const end_;
  std::string_view path_text_;
  const std::vector<ListedPlugin>* plugins_;
  std::string problem_, scratch_;
  int depth_ = 0;
  std::size_t summaries_ = 0;
};

}  // namespace

bool SpelledAs(std::string_view spelled, std::string_view raw, bool path) {
  unsigned char high = 0;  // the OR of every byte: a loop the compiler vectorizes
  for (const char c : raw) high |= static_cast<unsigned char>(c);
  if (high < 0x80 && raw.find('\\') == std::string_view::npos) return spelled == raw;
  return spelled == (path ? PathText(raw) : Utf8Text(raw));
}

bool IsListedSummary(std::string_view text, std::string_view path_text, std::string* why) {
  SummaryScanner c(text, path_text, nullptr);
  if (c.Run()) return true;
  if (why) *why = c.problem();
  return false;
}

bool IsListedArray(std::string_view text, const std::vector<ListedPlugin>& plugins, std::string* why) {
  SummaryScanner c(text, {}, &plugins);
  if (!c.Run()) {
    if (why) *why = c.problem();
    return false;
  }
  if (c.summaries() != plugins.size()) {
    if (why) *why = std::to_string(c.summaries()) + " summaries for " + std::to_string(plugins.size()) + " plugins";
    return false;
  }
  return true;
}

}  // namespace ge::registry
