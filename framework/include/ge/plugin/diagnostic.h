// ge/plugin/diagnostic.h: one fact about a plugin's load, as data.
//
// A diagnostic is made where the fact is known (the engine's host, the
// scanner, the registry's resolver), travels typed in the plugin record, the
// scanner and worker protocols and the registry cache, and becomes text only
// in Text(): the load log, the listing, `ge-plugin-ls --check` and every
// `--json` text field call it, and no layer reads another's sentence back
// (share/docs/host-design.md, "Diagnostics"). The words of each text are the
// ones the host has always logged.
//
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ge::plugin {

// The closed set of facts. Each kind says which fields it uses; the others stay empty.
enum class DiagnosticKind {
  // A Python prototype of `op_type` in plugin `plugin` (`path`) replaces the
  // C++ prototype of op library `library` (GE's rule for a plain REG_OP).
  kPrototypeReplaced,
  // The same prototype is not used: op library `library` implements `op_type`
  // as a C++ custom op, which keeps its own C++ prototype.
  kPrototypeUnused,
  // Op library `path`'s C++ prototype of `op_type` is not used: op library
  // `library` registered it first (first in path order wins).
  kLibraryPrototypeShadowed,
  // What the release rules of an implementation of `op_type` in `path` say
  // about it while it loads (`cause`: the rules' own sentence, e.g. GE
  // 9.2.0-beta.1's hint on a single execute parameter).
  kReleaseRules,
  // On an implementation's "canonical IR not found" for `op_type`: the
  // prototype is registered by `prototyped_by` (name, path), other plugins.
  kSplitPrototype,
  // Why a node of `op_type` cannot run although plugin `plugin` (`path`)
  // implements it: its legacy execute registered without a prototype and
  // no plugin or op library registers one.
  kUnprototyped,
  // The same when other plugins, `prototyped_by` (name, path), register the
  // prototype: the two halves of a split, named from the implementation's side.
  kUnprototypedSplit,
  // Plugin `plugin` (`path`) registers a prototype of `op_type` that no
  // loaded plugin implements and no op library prototypes.
  kPrototypeOnly,
};

struct Diagnostic {
  DiagnosticKind kind = DiagnosticKind::kReleaseRules;
  std::string op_type;
  std::string plugin;   // the plugin's name, when the text names it
  std::string path;     // the plugin (or op library) the fact is about (bytes)
  std::string library;  // the other op library concerned (bytes)
  std::string cause;    // kReleaseRules: what the rules say
  std::vector<std::pair<std::string, std::string>> prototyped_by;  // kSplitPrototype, kUnprototypedSplit: (name, path)
  bool operator==(const Diagnostic& o) const {
    return kind == o.kind && op_type == o.op_type && plugin == o.plugin && path == o.path && library == o.library &&
           cause == o.cause && prototyped_by == o.prototyped_by;
  }
};

// The one text of a diagnostic (one line; paths as given, bytes).
std::string Text(const Diagnostic& d);

// "prototype_replaced", "prototype_unused", "library_prototype_shadowed",
// "release_rules", "split_prototype", "unprototyped", "unprototyped_split",
// "prototype_only" (the JSON spelling), and back.
std::string_view KindName(DiagnosticKind k);
std::optional<DiagnosticKind> ParseDiagnosticKind(std::string_view name);

// {"kind", the fields the kind uses (paths in the PathText spelling), "text":
// Text(d)}. "text" is for readers; DiagnosticFromJson ignores it.
nlohmann::json ToJson(const Diagnostic& d);
// The diagnostic a JSON object describes, or nullopt with `why` naming the
// field that is missing or of the wrong type, or the unknown kind.
std::optional<Diagnostic> DiagnosticFromJson(const nlohmann::json& j, std::string* why);

// Makers, one per kind (the fields each uses).
Diagnostic PrototypeReplaced(std::string op_type, std::string plugin, std::string path, std::string library);
Diagnostic PrototypeUnused(std::string op_type, std::string plugin, std::string path, std::string library);
Diagnostic LibraryPrototypeShadowed(std::string op_type, std::string path, std::string first_library);
Diagnostic ReleaseRules(std::string op_type, std::string path, std::string cause);
Diagnostic SplitPrototype(std::string op_type, std::vector<std::pair<std::string, std::string>> prototyped_by);
Diagnostic Unprototyped(std::string op_type, std::string plugin, std::string path);
Diagnostic UnprototypedSplit(std::string op_type, std::string plugin, std::string path,
                             std::vector<std::pair<std::string, std::string>> prototyped_by);
Diagnostic PrototypeOnly(std::string op_type, std::string plugin, std::string path);

}  // namespace ge::plugin
