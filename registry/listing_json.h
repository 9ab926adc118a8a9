// listing_json.h: checks of listing JSON text without building a JSON tree,
// for the warm `ge-plugin-ls --json` paths (share/docs/registry.md, "The
// listing index" and "Protocol"): the summaries of the listing index (one
// hand-written pass over the bytes) and the daemon's `list` reply (one
// streaming pass of nlohmann::json's SAX parser) are checked and then passed
// through as the text they are, instead of being parsed into a tree and
// written again.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ge::registry {

// True when `text` is exactly one plugin summary of the shape that
// plugin::ToJson(r, /*with_detail=*/false) writes (ge/plugin/record.h): an
// object with the ten keys name, path, kind, prototypes, version, isolation,
// status, error, ops, unprototyped and no other; each of its type (`kind`
// "python" or "op_library", `isolation` a known isolation, `status` a known
// status other than "insecure", `ops` and `unprototyped` objects with a string
// `op_type`, a list of string `capabilities` and an optional string
// `prototype_library`), valid JSON
// (RFC 8259) and valid UTF-8, and `path` equal to `path_text` (the PathText
// spelling). The same verdict the listing index's reader took before from
// plugin::FromJson on a parsed tree. `why` (optional) gets the first problem.
// One pass over the bytes (no JSON tree, no copy of a string without an
// escape). Thread-safe.
bool IsListedSummary(std::string_view text, std::string_view path_text, std::string* why = nullptr);

// A plugin as discovery found it (ge/plugin/discovery.h, Candidate): its
// name and path as bytes, borrowed for the call. A summary spells them with
// Utf8Text and PathText (ge/text.h).
struct ListedPlugin {
  std::string_view name;
  std::string_view path;
};
// True when `spelled` is how the listing spells `raw` (bytes): PathText when
// `path`, else Utf8Text (ge/text.h); without building the spelling when `raw`
// holds no backslash and no byte over 0x7f (then both leave it as it is).
// Pure function; thread-safe.
bool SpelledAs(std::string_view spelled, std::string_view raw, bool path);

// True when `text` is a JSON list of summaries (each as IsListedSummary),
// the k-th naming plugins[k] (its `name` and its `path`), as many as there
// are plugins: the `plugins` array of a listing index (share/docs/registry.md,
// "The listing index"), checked in one pass. `why` (optional) gets the first
// problem. Thread-safe.
bool IsListedArray(std::string_view text, const std::vector<ListedPlugin>& plugins, std::string* why = nullptr);

// The daemon's `list` reply, checked: a JSON object with boolean `ok`, a list
// of strings `opp_path`, boolean `allow_insecure` and, as its last key,
// `plugins`: a list of summaries (each as IsListedSummary, any path, "insecure"
// allowed since the daemon decides that). Other keys (a string `source`, a
// number `generation`, ones added later) may come before `plugins`.
struct ListReply {
  bool ok = false;
  bool allow_insecure = false;
  std::vector<std::string> opp_path;  // as sent (PathText spellings)
  std::string_view plugins;           // the text of the `plugins` array, a view into the checked line
  std::string_view head;              // the text before `"plugins":` (the other keys, ending in a comma)
};
// nullopt (with `why`) when the line is no such reply, or its `plugins` text
// cannot be cut out exactly (then the caller parses the line as a whole).
// Borrowed: the reply's `plugins` and `head` are views into `line`, valid as
// long as the caller's string is; a temporary std::string would die at the
// end of the call's statement, so that overload is deleted (a compile error,
// not a use-after-free that only a sanitizer sees). Thread-safe.
std::optional<ListReply> ParseListReply(std::string_view line, std::string* why = nullptr);
template <typename S, typename = std::enable_if_t<std::is_same_v<S, std::string>>>
std::optional<ListReply> ParseListReply(S&& temporary_line, std::string* why = nullptr) = delete;

}  // namespace ge::registry
