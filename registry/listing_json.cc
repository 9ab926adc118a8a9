// listing_json.cc: see listing_json.h.
#include "listing_json.h"

#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "ge/plugin/record.h"
#include "listing_keys.h"

namespace ge::registry {

namespace {

using namespace listing_keys;

using nlohmann::json;

// One streaming pass over the daemon's `list` reply (nlohmann::json's SAX
// parser: the reply's other keys may hold any JSON value). Each container
// opened pushes what it is; every value is checked against the key it
// belongs to. (The listing index's summaries: listing_summaries.cc.)
class Checker : public nlohmann::json_sax<json> {
 public:

  bool null() override { return Scalar(kNull, nullptr); }
  bool boolean(bool v) override {
    bool_value_ = v;
    return Scalar(kBool, nullptr);
  }
  bool number_integer(number_integer_t) override { return Scalar(kNumber, nullptr); }
  bool number_unsigned(number_unsigned_t) override { return Scalar(kNumber, nullptr); }
  bool number_float(number_float_t, const string_t&) override { return Scalar(kNumber, nullptr); }
  bool string(string_t& s) override { return Scalar(kString, &s); }
  bool binary(binary_t&) override { return Fail("binary value"); }

  bool start_object(std::size_t) override {
    if (stack_.empty()) {
      if (done_) return Fail("more than one value");
      return Push(kReplyObj);
    }
    switch (stack_.back()) {
      case kPluginsArr:
        return Push(kSummaryObj);
      case kOpsArr:
        return Push(kOpObj);
      case kSkip:
        return Push(kSkip);
      case kReplyObj:
        if (IsKnownReplyKey()) return Fail("field '" + key_ + "' has the wrong type");
        return Push(kSkip);
      default:
        return Fail("unexpected object" + Where());
    }
  }
  bool key(string_t& k) override {
    if (k == "plugins" && !(stack_.size() == 1 && stack_.back() == kReplyObj)) {
      // A nested key "plugins" would make the reply's `plugins` text ambiguous.
      return Fail("a nested key 'plugins'");
    }
    switch (stack_.back()) {
      case kSummaryObj:
        return Field(k, kSummaryKeys.data(), kSummaryKeys.size(), "summary", summary_seen_, summary_key_);
      case kOpObj:
        return Field(k, kOpKeys.data(), kOpKeys.size(), "op", op_seen_, op_key_);
      case kReplyObj:
        if (plugins_seen_) return Fail("'plugins' is not the last field of the reply");
        if (!reply_keys_.insert(k).second) return Fail("reply field '" + k + "' given twice");
        key_ = k;
        if (k == "plugins") plugins_seen_ = true;
        return true;
      case kSkip:
        return true;
      default:
        return Fail("unexpected key" + Where());
    }
  }
  bool end_object() override {
    const Frame f = stack_.back();
    if (f == kSummaryObj) {
      if (summary_seen_ != (1u << kSummaryKeys.size()) - 1) return Fail("a summary field is missing");
      summary_seen_ = 0;
    } else if (f == kOpObj) {
      if ((op_seen_ & 3u) != 3u) return Fail("an op lacks 'op_type' or 'capabilities'");
      op_seen_ = 0;
    } else if (f == kReplyObj) {
      if (!reply_keys_.count("ok") || !reply_keys_.count("opp_path") || !reply_keys_.count("allow_insecure") ||
          !plugins_seen_) {
        return Fail("the reply lacks 'ok', 'opp_path', 'allow_insecure' or 'plugins'");
      }
    }
    return Pop();
  }
  bool start_array(std::size_t) override {
    if (stack_.empty()) {
      return Fail("an array where an object was expected");
    }
    switch (stack_.back()) {
      case kSummaryObj:
        if (summary_key_ == kPrototypes) return Push(kStringsArr);
        if (summary_key_ == kOps || summary_key_ == kUnprototyped) return Push(kOpsArr);
        return Fail("summary field '" + std::string(kSummaryKeys[summary_key_]) + "' must not be a list");
      case kOpObj:
        if (op_key_ == kCapabilities) return Push(kStringsArr);
        return Fail("op field '" + std::string(kOpKeys[op_key_]) + "' must not be a list");
      case kReplyObj:
        if (key_ == "opp_path") return Push(kOppPathArr);
        if (key_ == "plugins") return Push(kPluginsArr);
        if (IsKnownReplyKey()) return Fail("field '" + key_ + "' has the wrong type");
        return Push(kSkip);
      case kSkip:
        return Push(kSkip);
      default:
        return Fail("unexpected list" + Where());
    }
  }
  bool end_array() override { return Pop(); }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& e) override {
    return Fail("not valid JSON at byte " + std::to_string(pos) + " (" + e.what() + ")");
  }

  bool ok() const { return problem_.empty() && done_; }
  const std::string& problem() const { return problem_; }
  bool reply_ok() const { return reply_ok_; }
  bool allow_insecure() const { return allow_insecure_; }
  std::vector<std::string>& opp_path() { return opp_path_; }

 private:
  enum Frame { kReplyObj, kOppPathArr, kPluginsArr, kSummaryObj, kStringsArr, kOpsArr, kOpObj, kSkip };
  enum Type { kNull, kBool, kNumber, kString };

  bool Push(Frame f) {
    if (stack_.size() > 64) return Fail("nested too deeply");
    stack_.push_back(f);
    return true;
  }
  bool Pop() {
    stack_.pop_back();
    if (stack_.empty()) done_ = true;
    return true;
  }
  // Key `k` of an object with the fields `keys` (a summary or an op): known,
  // not seen before in this object; `current` becomes its index.
  bool Field(const std::string& k, const std::string_view* keys, std::size_t n, const char* what, uint32_t& seen, int& current) {
    const int i = IndexOf(k, keys, static_cast<int>(n));
    if (i < 0) return Fail(std::string("unknown ") + what + " field '" + k + "'");
    if (seen & (1u << i)) return Fail(std::string(what) + " field '" + k + "' given twice");
    seen |= 1u << i;
    current = i;
    return true;
  }
  bool Fail(std::string why) {
    if (problem_.empty()) problem_ = std::move(why);
    return false;
  }
  std::string Where() const { return stack_.empty() ? "" : " (level " + std::to_string(stack_.size()) + ")"; }
  bool IsKnownReplyKey() const {
    return key_ == "ok" || key_ == "allow_insecure" || key_ == "opp_path" || key_ == "plugins";
  }

  bool Scalar(Type t, const std::string* s) {
    if (stack_.empty()) return Fail("a scalar where an object was expected");
    switch (stack_.back()) {
      case kSkip:
        return true;
      case kStringsArr:
        return t == kString || Fail("a list of strings holds a non-string");
      case kOppPathArr:
        if (t != kString) return Fail("'opp_path' holds a non-string");
        opp_path_.push_back(*s);
        return true;
      case kReplyObj:
        if (key_ == "ok" || key_ == "allow_insecure") {
          if (t != kBool) return Fail("field '" + key_ + "' must be a boolean");
          (key_ == "ok" ? reply_ok_ : allow_insecure_) = bool_value_;
          return true;
        }
        if (IsKnownReplyKey()) return Fail("field '" + key_ + "' must be a list");
        return true;  // another field of the reply (source, generation, ...)
      case kOpObj:
        if (op_key_ == kCapabilities) return Fail("op field 'capabilities' must be a list");
        return t == kString || Fail("op field '" + std::string(kOpKeys[op_key_]) + "' must be a string");
      case kSummaryObj: {
        const std::string_view k = kSummaryKeys[summary_key_];
        if (summary_key_ == kPrototypes || summary_key_ == kOps || summary_key_ == kUnprototyped) return Fail("summary field '" + std::string(k) + "' must be a list");
        if (t != kString) return Fail("summary field '" + std::string(k) + "' must be a string");
        if (summary_key_ == kKind && *s != "python" && *s != "op_library") return Fail("unknown kind '" + *s + "'");
        if (summary_key_ == kIsolation && !KnownIsolation(*s)) return Fail("unknown isolation '" + *s + "'");
        if (summary_key_ == kStatus) {
          // "insecure" too: the daemon decides that.
          if (!plugin::ParseStatus(*s)) return Fail("unknown status '" + *s + "'");
        }
        return true;
      }
      default:
        return Fail("unexpected value" + Where());
    }
  }

  std::vector<Frame> stack_;
  std::string problem_;
  bool done_ = false;
  // the summary or op being read
  uint32_t summary_seen_ = 0, op_seen_ = 0;
  int summary_key_ = 0, op_key_ = 0;
  // the reply
  std::string key_;
  std::set<std::string> reply_keys_;
  bool plugins_seen_ = false, reply_ok_ = false, allow_insecure_ = false, bool_value_ = false;
  std::vector<std::string> opp_path_;
};

bool Run(Checker& c, std::string_view text, std::string* why) {
  const bool parsed = json::sax_parse(text.begin(), text.end(), &c, nlohmann::detail::input_format_t::json, true);
  if (parsed && c.ok()) return true;
  if (why) *why = c.problem().empty() ? "not one JSON value" : c.problem();
  return false;
}

}  // namespace

std::optional<ListReply> ParseListReply(std::string_view line, std::string* why) {
  Checker c;
  if (!Run(c, line, why)) return std::nullopt;
  // Checked: the only key "plugins" of the line is the reply's, and it is the
  // last, so its value runs from that key to the closing brace. A key written
  // with spaces or escapes is not found here: the caller parses the line.
  constexpr std::string_view kKey = "\"plugins\":";
  const std::size_t at = line.find(kKey);
  std::size_t end = line.find_last_not_of(" \t\r\n");
  if (at == std::string_view::npos || end == std::string_view::npos || line[end] != '}') {
    if (why) *why = "the reply's 'plugins' cannot be cut out";
    return std::nullopt;
  }
  std::string_view plugins = line.substr(at + kKey.size(), end - at - kKey.size());
  while (!plugins.empty() && (plugins.back() == ' ' || plugins.back() == '\n' || plugins.back() == '\t' || plugins.back() == '\r')) {
    plugins.remove_suffix(1);
  }
  if (plugins.empty() || plugins.front() != '[' || plugins.back() != ']') {
    if (why) *why = "the reply's 'plugins' cannot be cut out";
    return std::nullopt;
  }
  ListReply r;
  r.ok = c.reply_ok();
  r.allow_insecure = c.allow_insecure();
  r.opp_path = std::move(c.opp_path());
  r.plugins = plugins;
  r.head = line.substr(0, at);
  return r;
}

}  // namespace ge::registry
