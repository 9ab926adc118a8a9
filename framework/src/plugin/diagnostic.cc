// diagnostic.cc: see ge/plugin/diagnostic.h. The only place a load fact
// becomes text, and the only codec of its JSON.
#include "ge/plugin/diagnostic.h"

#include <array>
#include <tuple>

#include "ge/plugin/record.h"
#include "ge/text.h"

namespace ge::plugin {

using nlohmann::json;

namespace {

constexpr std::array<std::pair<DiagnosticKind, std::string_view>, 8> kKindNames{{
    {DiagnosticKind::kPrototypeReplaced, "prototype_replaced"},
    {DiagnosticKind::kPrototypeUnused, "prototype_unused"},
    {DiagnosticKind::kLibraryPrototypeShadowed, "library_prototype_shadowed"},
    {DiagnosticKind::kReleaseRules, "release_rules"},
    {DiagnosticKind::kSplitPrototype, "split_prototype"},
    {DiagnosticKind::kUnprototyped, "unprototyped"},
    {DiagnosticKind::kUnprototypedSplit, "unprototyped_split"},
    {DiagnosticKind::kPrototypeOnly, "prototype_only"},
}};

bool HasPrototypedBy(DiagnosticKind k) {
  return k == DiagnosticKind::kSplitPrototype || k == DiagnosticKind::kUnprototypedSplit;
}

std::string PythonPrototype(const Diagnostic& d) {
  return "the Python prototype of op_type '" + d.op_type + "' in plugin '" + d.plugin + "' (" + d.path + ")";
}

}  // namespace

std::string_view KindName(DiagnosticKind k) {
  for (const auto& [kind, name] : kKindNames) {
    if (kind == k) return name;
  }
  return "release_rules";
}

std::optional<DiagnosticKind> ParseDiagnosticKind(std::string_view name) {
  for (const auto& [kind, n] : kKindNames) {
    if (n == name) return kind;
  }
  return std::nullopt;
}

std::string Text(const Diagnostic& d) {
  switch (d.kind) {
    case DiagnosticKind::kPrototypeReplaced:
      return PythonPrototype(d) + " replaces the C++ prototype from op library " + d.library;
    case DiagnosticKind::kPrototypeUnused:
      return PythonPrototype(d) + " is not used: op library " + d.library + " implements op_type '" + d.op_type +
             "' as a C++ custom op with its own C++ prototype";
    case DiagnosticKind::kLibraryPrototypeShadowed:
      return "the prototype of op_type '" + d.op_type + "' from " + d.path + " is not used: op library " + d.library +
             " registered it first";
    case DiagnosticKind::kReleaseRules:
      return d.path + ": " + d.cause;
    case DiagnosticKind::kSplitPrototype:
      return SplitPrototypeNote(d.op_type, d.prototyped_by);
    case DiagnosticKind::kUnprototyped:
      return UnprototypedNote(d.plugin, d.path, d.op_type);
    case DiagnosticKind::kUnprototypedSplit:
      return UnprototypedSplitNote(d.plugin, d.path, d.op_type, d.prototyped_by);
    case DiagnosticKind::kPrototypeOnly:
      return "plugin '" + d.plugin + "' (" + d.path + ") registers its prototype (register_op) but no loaded plugin " +
             "implements it (register_op_impl); " + kSplitAdvice;
  }
  return d.cause;
}

json ToJson(const Diagnostic& d) {
  json j = {{"kind", std::string(KindName(d.kind))}, {"op_type", Utf8Text(d.op_type)}};
  if (!d.plugin.empty()) j["plugin"] = Utf8Text(d.plugin);
  if (!d.path.empty()) j["path"] = PathText(d.path);
  if (!d.library.empty()) j["library"] = PathText(d.library);
  if (!d.cause.empty()) j["cause"] = Utf8Text(d.cause);
  if (HasPrototypedBy(d.kind)) {
    json by = json::array();
    for (const auto& [name, path] : d.prototyped_by) by.push_back({{"name", Utf8Text(name)}, {"path", PathText(path)}});
    j["prototyped_by"] = std::move(by);
  }
  j["text"] = Utf8Text(Text(d));
  return j;
}

std::optional<Diagnostic> DiagnosticFromJson(const json& j, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<Diagnostic> {
    if (why) *why = w;
    return std::nullopt;
  };
  if (!j.is_object()) return fail(std::string("a diagnostic must be an object, got ") + j.type_name());
  auto kind_it = j.find("kind");
  if (kind_it == j.end() || !kind_it->is_string()) return fail("diagnostic: field 'kind' must be a string");
  const auto kind = ParseDiagnosticKind(kind_it->get_ref<const std::string&>());
  if (!kind) return fail("diagnostic: field 'kind' has an unknown value '" + Abbreviate(kind_it->get<std::string>()) + "'");
  Diagnostic d;
  d.kind = *kind;
  auto text_field = [&](const char* key, std::string& out, bool is_path) -> bool {
    auto it = j.find(key);
    if (it == j.end()) return true;
    if (!it->is_string()) return false;
    if (!is_path) {
      out = it->get<std::string>();
      return true;
    }
    std::optional<std::string> p = ParsePathText(it->get_ref<const std::string&>());
    if (!p) return false;
    out = std::move(*p);
    return true;
  };
  for (const auto& [key, out, is_path] : {std::tuple("op_type", &d.op_type, false), std::tuple("plugin", &d.plugin, false),
                                          std::tuple("path", &d.path, true), std::tuple("library", &d.library, true),
                                          std::tuple("cause", &d.cause, false)}) {
    if (!text_field(key, *out, is_path)) return fail(std::string("diagnostic: field '") + key + "' must be a string (a path spelling for paths)");
  }
  // The fields each kind's text says may not be missing (a hand-edited or
  // damaged cache is refused, not shown as "op_type ''").
  std::vector<std::pair<const char*, const std::string*>> needed;
  switch (d.kind) {
    case DiagnosticKind::kPrototypeReplaced:
    case DiagnosticKind::kPrototypeUnused:
      needed = {{"op_type", &d.op_type}, {"plugin", &d.plugin}, {"path", &d.path}, {"library", &d.library}};
      break;
    case DiagnosticKind::kLibraryPrototypeShadowed:
      needed = {{"op_type", &d.op_type}, {"path", &d.path}, {"library", &d.library}};
      break;
    case DiagnosticKind::kReleaseRules:
      needed = {{"path", &d.path}, {"cause", &d.cause}};
      break;
    case DiagnosticKind::kSplitPrototype:
      needed = {{"op_type", &d.op_type}};
      break;
    case DiagnosticKind::kUnprototyped:
    case DiagnosticKind::kUnprototypedSplit:
    case DiagnosticKind::kPrototypeOnly:
      needed = {{"op_type", &d.op_type}, {"plugin", &d.plugin}, {"path", &d.path}};
      break;
  }
  for (const auto& [key, value] : needed) {
    if (value->empty()) {
      return fail(std::string("diagnostic (") + std::string(KindName(d.kind)) + "): field '" + key + "' is missing or empty");
    }
  }
  if (HasPrototypedBy(d.kind)) {
    auto by = j.find("prototyped_by");
    if (by == j.end() || !by->is_array()) return fail("diagnostic: field 'prototyped_by' must be an array");
    for (const json& p : *by) {
      if (!p.is_object() || !p.contains("name") || !p["name"].is_string() || !p.contains("path") || !p["path"].is_string()) {
        return fail("diagnostic: 'prototyped_by' must hold objects with string fields 'name' and 'path'");
      }
      std::optional<std::string> path = ParsePathText(p["path"].get_ref<const std::string&>());
      if (!path) return fail("diagnostic: 'prototyped_by' path is not a path spelling");
      d.prototyped_by.emplace_back(p["name"].get<std::string>(), std::move(*path));
    }
    if (d.prototyped_by.empty()) {
      return fail("diagnostic (" + std::string(KindName(d.kind)) + "): field 'prototyped_by' is empty");
    }
  }
  return d;
}

Diagnostic PrototypeReplaced(std::string op_type, std::string plugin, std::string path, std::string library) {
  Diagnostic d;
  d.kind = DiagnosticKind::kPrototypeReplaced;
  d.op_type = std::move(op_type);
  d.plugin = std::move(plugin);
  d.path = std::move(path);
  d.library = std::move(library);
  return d;
}

Diagnostic PrototypeUnused(std::string op_type, std::string plugin, std::string path, std::string library) {
  Diagnostic d = PrototypeReplaced(std::move(op_type), std::move(plugin), std::move(path), std::move(library));
  d.kind = DiagnosticKind::kPrototypeUnused;
  return d;
}

Diagnostic LibraryPrototypeShadowed(std::string op_type, std::string path, std::string first_library) {
  Diagnostic d;
  d.kind = DiagnosticKind::kLibraryPrototypeShadowed;
  d.op_type = std::move(op_type);
  d.path = std::move(path);
  d.library = std::move(first_library);
  return d;
}

Diagnostic ReleaseRules(std::string op_type, std::string path, std::string cause) {
  Diagnostic d;
  d.kind = DiagnosticKind::kReleaseRules;
  d.op_type = std::move(op_type);
  d.path = std::move(path);
  d.cause = std::move(cause);
  return d;
}

Diagnostic SplitPrototype(std::string op_type, std::vector<std::pair<std::string, std::string>> prototyped_by) {
  Diagnostic d;
  d.kind = DiagnosticKind::kSplitPrototype;
  d.op_type = std::move(op_type);
  d.prototyped_by = std::move(prototyped_by);
  return d;
}

Diagnostic Unprototyped(std::string op_type, std::string plugin, std::string path) {
  Diagnostic d;
  d.kind = DiagnosticKind::kUnprototyped;
  d.op_type = std::move(op_type);
  d.plugin = std::move(plugin);
  d.path = std::move(path);
  return d;
}

Diagnostic UnprototypedSplit(std::string op_type, std::string plugin, std::string path,
                             std::vector<std::pair<std::string, std::string>> prototyped_by) {
  Diagnostic d = Unprototyped(std::move(op_type), std::move(plugin), std::move(path));
  d.kind = DiagnosticKind::kUnprototypedSplit;
  d.prototyped_by = std::move(prototyped_by);
  return d;
}

Diagnostic PrototypeOnly(std::string op_type, std::string plugin, std::string path) {
  Diagnostic d = Unprototyped(std::move(op_type), std::move(plugin), std::move(path));
  d.kind = DiagnosticKind::kPrototypeOnly;
  return d;
}

}  // namespace ge::plugin
