// The streaming checks of the warm listing (registry/listing_json.h): a
// listing-index summary and the daemon's `list` reply are passed through only
// when they have exactly the shape ge-plugin-ls would print.
#define BOOST_TEST_MODULE listing_json
#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ge/plugin/record.h"
#include "listing_json.h"

using nlohmann::json;
using namespace ge;
using namespace ge::registry;

namespace {

// ParseListReply returns views into its argument: a temporary std::string is
// refused at compile time (the reply would outlive the bytes it points into),
// a named string or a view is accepted.
template <typename T, typename = void>
struct ParsesListReplyOf : std::false_type {};
template <typename T>
struct ParsesListReplyOf<T, std::void_t<decltype(ParseListReply(std::declval<T>()))>> : std::true_type {};
static_assert(!ParsesListReplyOf<std::string>::value, "a temporary line must not compile");
static_assert(!ParsesListReplyOf<std::string&&>::value, "a moved-from line must not compile");
static_assert(ParsesListReplyOf<const std::string&>::value);
static_assert(ParsesListReplyOf<std::string&>::value);
static_assert(ParsesListReplyOf<std::string_view>::value);


plugin::PluginRecord Record(const std::string& path, plugin::PluginStatus status = plugin::PluginStatus::kOk) {
  plugin::PluginRecord r;
  r.name = "gelu";
  r.path = path;
  r.version = "1.0";
  r.isolation = "subinterpreter";
  r.status = status;
  plugin::OpRecord op;
  op.op_type = "GeluCustom";
  op.capabilities = {"eager_execute", "infer_meta"};
  r.ops.push_back(op);
  return r;
}

std::string Summary(const plugin::PluginRecord& r) { return plugin::ToJson(r, false).dump(); }

// The summary of `path` with one field set to `value` (or removed, when null).
std::string Edited(const std::string& path, const std::string& key, const json& value) {
  json j = plugin::ToJson(Record(path), false);
  if (value.is_null()) {
    j.erase(key);
  } else {
    j[key] = value;
  }
  return j.dump();
}

// The daemon's list reply as ge-plugin-registryd writes it: `plugins` last.
std::string Reply(const json& head, const json& plugins) {
  std::string line = head.dump();
  line.pop_back();
  return line + ",\"plugins\":" + plugins.dump() + "}";
}

const json kHead = {{"ok", true}, {"source", "daemon"}, {"generation", 3}, {"opp_path", {"/opp"}},
                    {"allow_insecure", false}};

}  // namespace

BOOST_AUTO_TEST_CASE(a_summary_as_written_passes_for_its_own_path_only) {
  const std::string s = Summary(Record("/opp/gelu.py"));
  std::string why;
  BOOST_TEST(IsListedSummary(s, "/opp/gelu.py", &why), why);
  BOOST_TEST(!IsListedSummary(s, "/opp/other.py", &why));
  BOOST_TEST(why == "the summary names another path");
  // a failed plugin (no ops, an error) and an op library are summaries too
  plugin::PluginRecord failed = Record("/opp/bad.py", plugin::PluginStatus::kError);
  failed.ops.clear();
  failed.error.message = "SyntaxError: invalid syntax (bad.py, line 1)";
  BOOST_TEST(IsListedSummary(Summary(failed), "/opp/bad.py", &why), why);
  plugin::PluginRecord lib = Record("/opp/op_graph/lib/linux/x86_64/libops.so");
  lib.op_library = true;
  lib.isolation = "";
  lib.prototypes = {"GeluCustom"};
  lib.ops[0].prototype_library = "/opp/op_graph/lib/linux/x86_64/libprotos.so";
  BOOST_TEST(IsListedSummary(Summary(lib), lib.path, &why), why);
}

BOOST_AUTO_TEST_CASE(a_summary_of_another_shape_is_refused_with_the_reason) {
  const std::string p = "/opp/gelu.py";
  struct Case {
    std::string text, why;
  };
  const Case cases[] = {
      {Edited(p, "injected", true), "unknown summary field 'injected'"},
      {Edited(p, "version", nullptr), "a summary field is missing"},
      {Edited(p, "status", 1), "summary field 'status' must be a string"},
      {Edited(p, "status", "fine"), "unknown status 'fine'"},
      {Edited(p, "status", "insecure"), "status insecure"},
      {Edited(p, "kind", "rust"), "unknown kind 'rust'"},
      {Edited(p, "isolation", "thread"), "unknown isolation 'thread'"},
      {Edited(p, "name", json::object()), "unexpected object (level 1)"},
      {Edited(p, "prototypes", {1}), "a list of strings holds a non-string"},
      {Edited(p, "ops", {{{"op_type", "X"}}}), "an op lacks 'op_type' or 'capabilities'"},
      {Edited(p, "ops", {{{"op_type", "X"}, {"capabilities", json::array()}, {"prototype", json::object()}}}),
       "unknown op field 'prototype'"},
      {"[" + Summary(Record(p)) + "]", "an array where an object was expected"},
  };
  for (const auto& c : cases) {
    std::string why;
    BOOST_TEST(!IsListedSummary(c.text, p, &why), c.text);
    BOOST_TEST(why == c.why, c.text << ": " << why);
  }
  // Not JSON at all, two values, or a string that is not UTF-8: the parser's own verdict.
  std::string why;
  BOOST_TEST(!IsListedSummary(Summary(Record(p)).substr(0, 20), p, &why));
  BOOST_TEST(why.find("not valid JSON") == 0, why);
  BOOST_TEST(!IsListedSummary(Summary(Record(p)) + " {}", p, &why));
  BOOST_TEST(why.find("not valid JSON") == 0, why);
  std::string bad = Summary(Record(p));
  bad.replace(bad.find("1.0"), 3, "\xff\xfe");
  BOOST_TEST(!IsListedSummary(bad, p, &why));
  BOOST_TEST(why.find("not valid JSON") == 0, why);
}

// The listing index's `plugins` array (index version 6): one pass over the
// list, the k-th summary naming the k-th plugin discovered (its path and its
// name), as many as there are.
BOOST_AUTO_TEST_CASE(a_listed_array_passes_for_its_plugins_in_their_order_only) {
  plugin::PluginRecord a = Record("/opp/a.py"), b = Record("/opp/b.py");
  a.name = "a";
  b.name = "b";
  const json two = {plugin::ToJson(a, false), plugin::ToJson(b, false)};
  const std::vector<ListedPlugin> plugins{{"a", "/opp/a.py"}, {"b", "/opp/b.py"}};
  std::string why;
  BOOST_TEST(IsListedArray(two.dump(), plugins, &why), why);
  BOOST_TEST(IsListedArray("[]", {}, &why), why);
  BOOST_TEST(!IsListedArray(two.dump(), {{"b", "/opp/b.py"}, {"a", "/opp/a.py"}}, &why));  // reordered
  BOOST_TEST(why == "summary 0 names another plugin", why);  // "name" comes before "path"
  BOOST_TEST(!IsListedArray(two.dump(), {{"a", "/opp/b.py"}, {"b", "/opp/a.py"}}, &why));
  BOOST_TEST(why == "summary 0 names another path", why);
  BOOST_TEST(!IsListedArray(two.dump(), {{"a", "/opp/a.py"}}, &why));  // a plugin more than discovered
  BOOST_TEST(why == "summary 1 names another path", why);
  BOOST_TEST(!IsListedArray(two.dump(), {{"a", "/opp/a.py"}, {"b", "/opp/b.py"}, {"c", "/opp/c.py"}}, &why));
  BOOST_TEST(why == "2 summaries for 3 plugins", why);  // one missing
  BOOST_TEST(!IsListedArray(two[0].dump(), {{"a", "/opp/a.py"}}, &why));  // a summary, not a list
  BOOST_TEST(why == "an object where a list was expected", why);
  BOOST_TEST(!IsListedArray(two.dump() + "[]", plugins, &why));  // two values
  BOOST_TEST(why.find("not valid JSON") == 0, why);
  json insecure = two;
  insecure[1]["status"] = "insecure";  // never passed through from an index
  BOOST_TEST(!IsListedArray(insecure.dump(), plugins, &why));
  BOOST_TEST(why == "status insecure", why);
  json extra = two;
  extra[1]["injected"] = true;  // each summary has the summary's shape
  BOOST_TEST(!IsListedArray(extra.dump(), plugins, &why));
  BOOST_TEST(why == "unknown summary field 'injected'", why);
  BOOST_TEST(!IsListedArray("[1]", {{"a", "/opp/a.py"}}, &why));
  BOOST_TEST(why == "unexpected value (level 1)", why);
}

// The k-th summary must name the k-th plugin by its discovered name too: an
// index whose summary names another plugin at that path is not believed.
BOOST_AUTO_TEST_CASE(a_listed_array_whose_summary_names_another_plugin_is_refused) {
  plugin::PluginRecord a = Record("/opp/a.py"), b = Record("/opp/b.py");
  a.name = "a";
  b.name = "evil";
  const json two = {plugin::ToJson(a, false), plugin::ToJson(b, false)};
  std::string why;
  BOOST_TEST(!IsListedArray(two.dump(), {{"a", "/opp/a.py"}, {"b", "/opp/b.py"}}, &why));
  BOOST_TEST(why == "summary 1 names another plugin", why);
  BOOST_TEST(IsListedArray(two.dump(), {{"a", "/opp/a.py"}, {"evil", "/opp/b.py"}}, &why), why);
}

// Names and paths are compared in the listing's spelling (PathText,
// Utf8Text), whichever JSON escapes the text uses; whitespace between tokens
// is JSON's.
BOOST_AUTO_TEST_CASE(a_listed_array_compares_names_and_paths_as_the_listing_spells_them) {
  plugin::PluginRecord lib = Record("/opp/op_graph/lib/linux/x86_64/lib\xff\\.so");
  lib.name = "lib\xff\\.so";
  lib.op_library = true;
  lib.isolation = "";
  plugin::PluginRecord e = Record("/opp/\xc3\xa9t\xc3\xa9.py");
  e.name = "\xc3\xa9t\xc3\xa9";
  const json two = {plugin::ToJson(lib, false), plugin::ToJson(e, false)};
  const std::vector<ListedPlugin> plugins{{lib.name, lib.path}, {e.name, e.path}};
  std::string why;
  BOOST_TEST(IsListedArray(two.dump(), plugins, &why), why);
  BOOST_TEST(IsListedArray(two.dump(2), plugins, &why), why);  // pretty-printed
  // the same text with every non-ASCII character as a \u escape
  const std::string ascii = two.dump(-1, ' ', /*ensure_ascii=*/true);
  BOOST_TEST(ascii.find("\\u00e9") != std::string::npos);
  BOOST_TEST(IsListedArray(ascii, plugins, &why), why);
  // the raw bytes instead of their spelling are another path
  std::string raw = two.dump();
  raw.replace(raw.find("x86_64/lib\\\\xff") + 7, 8, "lib\\u00ff");
  BOOST_TEST(!IsListedArray(raw, plugins, &why));
  BOOST_TEST(why == "summary 0 names another path", why);
}

// The scanner's JSON verdict is the JSON grammar's (RFC 8259, RFC 3629):
// whatever a summary's free text holds, it accepts exactly what
// nlohmann::json accepts.
BOOST_AUTO_TEST_CASE(a_listed_array_takes_the_json_verdict_of_nlohmann_on_strings) {
  const char* bodies[] = {
      "plain", "", "\\u00e9", "\\uD83D\\uDE00", "\\ud83d", "\\ude00", "\\ud83dx", "\\ud83d\\u0041", "\\x", "\\u12",
      "\\u12g4", "\\/\\\"\\\\\\b\\f\\n\\r\\t", "\x01", "\x1f", "\x7f", "a\tb", "\xc3\xa9", "\xc3", "\xc3(", "\xe0\x80\x80",
      "\xe0\xa0\x80", "\xed\xa0\x80", "\xed\x9f\xbf", "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf0\x8f\xbf\xbf",
      "\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xc0\xaf", "\xc1\xbf", "\xc2\x80", "\xff", "\x80",
      "\\", "\\u0000",
  };
  plugin::PluginRecord r = Record("/opp/a.py");
  r.name = "a";
  const std::string text = json::array({plugin::ToJson(r, false)}).dump();
  const std::string marker = "\"version\":\"1.0\"";
  BOOST_TEST_REQUIRE(text.find(marker) != std::string::npos);
  for (const char* body : bodies) {
    std::string t = text;
    t.replace(t.find(marker), marker.size(), std::string("\"version\":\"") + body + "\"");
    std::string why;
    BOOST_TEST(IsListedArray(t, {{"a", "/opp/a.py"}}, &why) == json::accept(t), t << ": " << why);
  }
  // and on the text around them: cut, continued, or with whitespace
  const std::string around[] = {text.substr(0, text.size() - 1), text + ",", text + " x", text + "[]",
                                "[" + text.substr(1, text.size() - 2) + ",]", " \t" + text + "\r\n"};
  for (const auto& t : around) {
    std::string why;
    BOOST_TEST(IsListedArray(t, {{"a", "/opp/a.py"}}, &why) == json::accept(t), t << ": " << why);
    if (!json::accept(t)) BOOST_TEST(why.find("not valid JSON") == 0, t << ": " << why);
  }
}

BOOST_AUTO_TEST_CASE(a_daemon_reply_yields_its_plugins_text_as_sent) {
  const json plugins = {plugin::ToJson(Record("/opp/a.py"), false), plugin::ToJson(Record("/opp/b.py"), false)};
  const std::string line = Reply(kHead, plugins);
  std::string why;
  const auto r = ParseListReply(line, &why);
  BOOST_TEST_REQUIRE(r.has_value(), why);
  BOOST_TEST(r->ok);
  BOOST_TEST(!r->allow_insecure);
  BOOST_TEST(r->opp_path == std::vector<std::string>{"/opp"});
  BOOST_TEST(std::string(r->plugins) == plugins.dump());
  // fields added later (a version, a scan in progress) may come before plugins
  json head = kHead;
  head["version"] = "1.2.3";
  head["progress"] = {{"done", 1}, {"total", 2}};
  const std::string line2 = Reply(head, plugins);  // the reply's views borrow this line
  const auto r2 = ParseListReply(line2, &why);
  BOOST_TEST_REQUIRE(r2.has_value(), why);
  BOOST_TEST(std::string(r2->plugins) == plugins.dump());
  // an empty registry
  const std::string line3 = Reply(kHead, json::array());
  const auto r3 = ParseListReply(line3, &why);
  BOOST_TEST_REQUIRE(r3.has_value(), why);
  BOOST_TEST(std::string(r3->plugins) == "[]");
}

BOOST_AUTO_TEST_CASE(a_daemon_reply_that_cannot_be_passed_through_is_refused) {
  const json plugins = {plugin::ToJson(Record("/opp/a.py"), false)};
  json extra = plugins;
  extra[0]["injected"] = 1;
  json nested = kHead;
  nested["stats"] = {{"plugins", 1}};
  json wrong = kHead;
  wrong["ok"] = "yes";
  json no_opp = kHead;
  no_opp.erase("opp_path");
  const std::string cases[] = {
      Reply(kHead, extra),                                             // a summary of another shape
      Reply(nested, plugins),                                          // a second key "plugins"
      Reply(wrong, plugins),                                           // ok is no boolean
      Reply(no_opp, plugins),                                          // no opp_path
      json(kHead).dump(),                                              // no plugins at all
      "{\"plugins\":" + plugins.dump() + ",\"ok\":true,\"opp_path\":[],\"allow_insecure\":false}",  // not last
      Reply(kHead, plugins).replace(Reply(kHead, plugins).find("\"plugins\":"), 10, "\"plugins\" :"),  // spaced
      Reply(kHead, plugins).substr(0, 40),                             // cut short
  };
  for (const auto& c : cases) {
    std::string why;
    BOOST_TEST(!ParseListReply(c, &why).has_value(), c);
    BOOST_TEST(!why.empty(), c);
  }
  // an "insecure" verdict is the daemon's to give: passed through
  json insecure = plugins;
  insecure[0]["status"] = "insecure";
  const std::string insecure_line = Reply(kHead, insecure);
  BOOST_TEST(ParseListReply(insecure_line).has_value());
}
