// record.cc: see ge/plugin/record.h. The only place a plugin record becomes
// JSON and back.
#include "ge/plugin/record.h"

#include <signal.h>
#include <string.h>

#include <algorithm>
#include <array>
#include <ostream>
#include <cstdint>
#include <set>
#include <tuple>
#include <utility>

#include "ge/text.h"

namespace ge::plugin {

using nlohmann::json;

namespace {

constexpr std::array<std::pair<PluginStatus, std::string_view>, 9> kStatusNames{{
    {PluginStatus::kOk, "ok"},
    {PluginStatus::kError, "error"},
    {PluginStatus::kConflict, "conflict"},
    {PluginStatus::kInsecure, "insecure"},
    {PluginStatus::kMissing, "missing"},
    {PluginStatus::kSkipped, "skipped"},
    {PluginStatus::kCrashed, "crashed"},
    {PluginStatus::kHung, "hung"},
    {PluginStatus::kExited, "exited"},
}};

constexpr std::array<std::pair<ErrorKind, std::string_view>, 14> kErrorKindNames{{
    {ErrorKind::kNone, ""},
    {ErrorKind::kDiscovery, "discovery"},
    {ErrorKind::kMetadata, "metadata"},
    {ErrorKind::kName, "name"},
    {ErrorKind::kExtension, "extension"},
    {ErrorKind::kImport, "import"},
    {ErrorKind::kValidation, "validation"},
    {ErrorKind::kPrototype, "prototype"},
    {ErrorKind::kConflict, "conflict"},
    {ErrorKind::kInsecure, "insecure"},
    {ErrorKind::kSkipped, "skipped"},
    {ErrorKind::kLoad, "load"},
    {ErrorKind::kScan, "scan"},
    {ErrorKind::kBusyThread, "busy_thread"},
}};

constexpr std::array<std::pair<ConflictRule, std::string_view>, 5> kConflictRuleNames{{
    {ConflictRule::kNone, ""},
    {ConflictRule::kPathOrder, "path_order"},
    {ConflictRule::kBuiltin, "builtin"},
    {ConflictRule::kFirstLibrary, "first_library"},
    {ConflictRule::kLibraryOverPython, "library_over_python"},
}};

template <typename E, std::size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return {};
}

template <typename E, std::size_t N>
std::optional<E> ValueOf(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

const std::set<std::string> kIsolations{"", "subinterpreter", "main", "process"};

// Reads typed fields of one JSON object, remembering the first problem.
class Reader {
 public:
  Reader(const json& j, std::string where) : j_(j), where_(std::move(where)) {}

  bool String(const char* key, std::string& out, bool required = false, bool is_path = false) {
    const json* v = Find(key, required);
    if (v == nullptr) return !required;
    if (!v->is_string()) return Fail(std::string("field '") + key + "' must be a string, got " + v->type_name());
    if (!is_path) {
      out = v->get<std::string>();
      return true;
    }
    std::optional<std::string> p = ParsePathText(v->get_ref<const std::string&>());
    if (!p) return Fail(std::string("field '") + key + "' is not a path spelling (a lone backslash or a bad \\x escape)");
    out = std::move(*p);
    return true;
  }
  template <typename T>
  bool Integer(const char* key, T& out, T lo, T hi, bool required = false) {
    const json* v = Find(key, required);
    if (v == nullptr) return !required;
    if (!v->is_number_integer()) return Fail(std::string("field '") + key + "' must be an integer, got " + v->type_name());
    if (v->is_number_unsigned() ? v->get<uint64_t>() > static_cast<uint64_t>(hi)
                                : (v->get<int64_t>() < static_cast<int64_t>(lo) ||
                                   (hi <= static_cast<T>(INT64_MAX) && v->get<int64_t>() > static_cast<int64_t>(hi)))) {
      return Fail(std::string("field '") + key + "' is out of range");
    }
    out = v->is_number_unsigned() ? static_cast<T>(v->get<uint64_t>()) : static_cast<T>(v->get<int64_t>());
    return true;
  }
  bool Number(const char* key, double& out) {
    const json* v = Find(key, false);
    if (v == nullptr) return true;
    if (!v->is_number()) return Fail(std::string("field '") + key + "' must be a number, got " + v->type_name());
    out = v->get<double>();
    return true;
  }
  const json* Array(const char* key, bool required) { return Container(key, required, &json::is_array, "an array"); }
  const json* Object(const char* key, bool required) { return Container(key, required, &json::is_object, "an object"); }
  bool Fail(const std::string& why) {
    if (problem_.empty()) problem_ = where_ + why;
    return false;
  }
  bool ok() const { return problem_.empty(); }
  const std::string& problem() const { return problem_; }

 private:
  const json* Container(const char* key, bool required, bool (json::*is)() const noexcept, const char* kind) {
    const json* v = Find(key, required);
    if (v != nullptr && !(v->*is)()) {
      Fail(std::string("field '") + key + "' must be " + kind + ", got " + v->type_name());
      return nullptr;
    }
    return v;
  }
  const json* Find(const char* key, bool required) {
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required) Fail(std::string("missing field '") + key + "'");
      return nullptr;
    }
    return &*it;
  }
  const json& j_;
  std::string where_;
  std::string problem_;
};

}  // namespace

std::string_view StatusName(PluginStatus s) {
  for (const auto& [st, name] : kStatusNames) {
    if (st == s) return name;
  }
  return "error";
}

std::ostream& operator<<(std::ostream& os, PluginStatus s) { return os << StatusName(s); }

std::optional<PluginStatus> ParseStatus(std::string_view name) {
  for (const auto& [st, n] : kStatusNames) {
    if (n == name) return st;
  }
  return std::nullopt;
}

std::string PluginError::OneLine() const {
  std::string text = message;
  for (const auto& n : notes) text += "; " + Text(n);
  if (file.empty() || line <= 0) return text;
  const std::string at = "(at " + file + ":" + std::to_string(line) + ")";
  if (message.find(at) != std::string::npos) return text;
  return text + " " + at;
}

std::string_view ErrorKindName(ErrorKind k) { return NameOf(kErrorKindNames, k); }

std::optional<ErrorKind> ParseErrorKind(std::string_view name) { return ValueOf(kErrorKindNames, name); }

ErrorKind KindFromPython(std::string_view ge_kind, ErrorKind otherwise) {
  for (ErrorKind k : {ErrorKind::kExtension, ErrorKind::kPrototype, ErrorKind::kName}) {
    if (ge_kind == ErrorKindName(k)) return k;
  }
  return otherwise;
}

std::string_view ConflictRuleName(ConflictRule r) { return NameOf(kConflictRuleNames, r); }

std::ostream& operator<<(std::ostream& os, ErrorKind k) { return os << (k == ErrorKind::kNone ? "none" : ErrorKindName(k)); }

std::ostream& operator<<(std::ostream& os, ConflictRule r) {
  return os << (r == ConflictRule::kNone ? "none" : ConflictRuleName(r));
}

std::optional<ConflictRule> ParseConflictRule(std::string_view name) { return ValueOf(kConflictRuleNames, name); }

std::string ConflictMessage(const std::string& op_type, const std::string& path, const std::string& other,
                            ConflictRule rule) {
  const char* why = " (first in path order wins)";
  switch (rule) {
    case ConflictRule::kNone:
    case ConflictRule::kPathOrder:
      break;
    case ConflictRule::kBuiltin:
      why = " (a built-in op cannot be replaced)";
      break;
    case ConflictRule::kFirstLibrary:
      why = " (the first op library in path order wins)";
      break;
    case ConflictRule::kLibraryOverPython:
      why = " (op libraries load before Python plugins: the library's op wins)";
      break;
  }
  return "op_type '" + op_type + "' from " + path + " conflicts with the one from " + other + why;
}

std::vector<std::string> PluginRecord::OpTypes() const {
  std::vector<std::string> out;
  for (const auto& op : ops) out.push_back(op.op_type);
  return out;
}

PluginRecord ProblemRecord(std::string name, std::string path, PluginStatus status, ErrorKind kind,
                           std::string message) {
  PluginRecord r;
  r.name = std::move(name);
  r.path = std::move(path);
  r.status = status;
  r.error.kind = kind;
  r.error.message = std::move(message);
  return r;
}

std::string SplitPrototypeNote(const std::string& op_type,
                               const std::vector<std::pair<std::string, std::string>>& prototyped_by) {
  std::string who;
  for (std::size_t i = 0; i < prototyped_by.size(); ++i) {
    who += (i ? " and plugin '" : "plugin '") + prototyped_by[i].first + "' (" + prototyped_by[i].second + ")";
  }
  return "the prototype of op_type '" + Abbreviate(op_type) + "' is registered by " + who +
         (prototyped_by.size() > 1 ? ", other plugins: " : ", another plugin: ") + kSplitAdvice;
}

std::string UnprototypedNote(const std::string& name, const std::string& path, const std::string& op_type) {
  const std::string t = Abbreviate(op_type);
  return "plugin '" + name + "' (" + path + ") implements op_type '" + t +
         "' with a legacy execute (one that takes the execute context, or GE 9.2.0-beta.1's input list), which "
         "registers without a prototype, but neither that plugin nor an op library registers a prototype (canonical "
         "IR) of '" + t + "': add register_op(op_type='" + t + "') to that plugin, or an op library whose REG_OP declares it";
}

std::string UnprototypedSplitNote(const std::string& name, const std::string& path, const std::string& op_type,
                                  const std::vector<std::pair<std::string, std::string>>& prototyped_by) {
  return "plugin '" + name + "' (" + path + ") implements op_type '" + Abbreviate(op_type) +
         "' with a legacy execute, which registers without a prototype, and " + SplitPrototypeNote(op_type, prototyped_by);
}

std::vector<const OpRecord*> TakenOps(const PluginRecord& r) {
  std::vector<const OpRecord*> out;
  out.reserve(r.ops.size() + r.unprototyped.size());
  for (const auto& op : r.ops) out.push_back(&op);
  for (const auto& op : r.unprototyped) out.push_back(&op);
  return out;
}

std::string NewestRefusalNote(const OpRecord& op) {
  if (op.newest_refusal.empty()) return {};
  return "op_type '" + Abbreviate(op.op_type) + "' " +
         (op.rules == "newest" || op.rules.empty()
              ? std::string("loads here")
              : "follows GE " + op.rules + "'s rules (its class derives from EagerExecuteOp)") +
         ", but the newest GE refuses it: " + op.newest_refusal;
}

std::vector<std::string> OwnPrototypeOpTypes(const PluginRecord& r) {
  if (!r.ok() || r.op_library) return {};
  std::vector<std::string> out = r.prototypes;
  for (const auto& op : r.ops) {
    if (op.prototype_library.empty()) out.push_back(op.op_type);
  }
  return out;
}

namespace {

json OpToJson(const OpRecord& op, bool with_detail) {
  json o = {{"op_type", Utf8Text(op.op_type)}, {"capabilities", op.capabilities}};
  if (with_detail && !op.prototype.is_null()) o["prototype"] = op.prototype;
  if (!op.prototype_library.empty()) o["prototype_library"] = PathText(op.prototype_library);
  if (with_detail && !op.rules.empty()) o["rules"] = op.rules;
  if (with_detail && !op.newest_refusal.empty()) o["newest_refusal"] = Utf8Text(op.newest_refusal);
  return o;
}

}  // namespace

json ToJson(const PluginRecord& r, bool with_detail) {
  json ops = json::array();
  for (const auto& op : r.ops) ops.push_back(OpToJson(op, with_detail));
  json protos = json::array();
  for (const auto& p : r.prototypes) protos.push_back(Utf8Text(p));
  json j = {{"name", Utf8Text(r.name)},
            {"path", PathText(r.path)},
            {"kind", r.op_library ? "op_library" : "python"},
            {"prototypes", std::move(protos)},
            {"version", Utf8Text(r.version)},
            {"isolation", r.isolation},
            {"status", std::string(StatusName(r.status))},
            {"error", Utf8Text(r.error.OneLine())},
            {"ops", std::move(ops)}};
  json unprototyped = json::array();
  for (const auto& op : r.unprototyped) unprototyped.push_back(OpToJson(op, with_detail));
  j["unprototyped"] = std::move(unprototyped);
  if (!with_detail) return j;
  j["description"] = Utf8Text(r.description);
  if (r.error.kind != ErrorKind::kNone) j["error_kind"] = std::string(ErrorKindName(r.error.kind));
  if (r.error.rule != ConflictRule::kNone) j["conflict_rule"] = std::string(ConflictRuleName(r.error.rule));
  if (!r.error.exception.empty()) j["error_type"] = r.error.exception;
  if (!r.error.file.empty() && r.error.line > 0) {
    j["error_file"] = PathText(r.error.file);
    j["error_line"] = r.error.line;
  }
  if (!r.error.traceback.empty()) j["details"] = Utf8Text(r.error.traceback);
  if (!r.error.op_type.empty()) j["error_op_type"] = Utf8Text(r.error.op_type);
  if (!r.error.message.empty()) j["error_message"] = Utf8Text(r.error.message);
  if (!r.error.notes.empty()) {
    json n = json::array();
    for (const auto& d : r.error.notes) n.push_back(ToJson(d));
    j["error_notes"] = std::move(n);
  }
  if (!r.warnings.empty()) {
    json w = json::array(), typed = json::array();
    for (const auto& d : r.warnings) {
      w.push_back(Utf8Text(Text(d)));
      typed.push_back(ToJson(d));
    }
    j["warnings"] = std::move(w);
    j["diagnostics"] = std::move(typed);
  }
  if (!r.conflicts_with.empty()) j["conflicts_with"] = PathText(r.conflicts_with);
  if (r.status == PluginStatus::kCrashed) {
    j["signal"] = r.signal;
    j["signal_name"] = SignalName(r.signal);
  }
  if (r.status == PluginStatus::kExited) j["exit_code"] = r.exit_code;
  if (r.status == PluginStatus::kHung) j["timeout_s"] = r.timeout_s;
  if (r.stamp) {
    const Stamp& s = *r.stamp;
    j["stamp"] = {{"mtime_ns", s.mtime_ns}, {"ctime_ns", s.ctime_ns}, {"size", s.size},
                  {"files", s.files},       {"inodes", s.inodes},     {"hash", s.hash}};
  }
  return j;
}

std::optional<PluginRecord> FromJson(const json& j, std::string* why, bool stamp_required) {
  auto fail = [&](const std::string& w) -> std::optional<PluginRecord> {
    if (why) *why = w;
    return std::nullopt;
  };
  if (!j.is_object()) return fail(std::string("a plugin record must be an object, got ") + j.type_name());
  PluginRecord r;
  Reader in(j, "");
  std::string status, signal_name;
  in.String("path", r.path, true, true);
  in.String("status", status, true);
  in.String("name", r.name);
  in.String("version", r.version);
  in.String("description", r.description);
  in.String("isolation", r.isolation);
  // The bare message when the record has detail ("error" is its one-line
  // text, notes and location included), else that text.
  in.String("error", r.error.message);
  in.String("error_message", r.error.message);
  std::string error_kind, conflict_rule;
  in.String("error_kind", error_kind);
  in.String("conflict_rule", conflict_rule);
  in.String("error_type", r.error.exception);
  in.String("details", r.error.traceback);
  in.String("error_op_type", r.error.op_type);
  in.String("error_file", r.error.file, false, true);
  in.Integer<int>("error_line", r.error.line, 1, INT32_MAX);
  in.String("conflicts_with", r.conflicts_with, false, true);
  in.Integer<int>("signal", r.signal, 0, 1024);
  in.String("signal_name", signal_name);
  in.Integer<int>("exit_code", r.exit_code, -1, 255);
  in.Number("timeout_s", r.timeout_s);
  std::string kind = "python";
  in.String("kind", kind);
  const json* protos = in.Array("prototypes", false);
  const json* diagnostics = in.Array("diagnostics", false);
  const json* notes = in.Array("error_notes", false);
  const json* ops = in.Array("ops", false);
  const json* unprototyped = in.Array("unprototyped", false);
  const json* stamp = in.Object("stamp", stamp_required);
  if (!in.ok()) return fail(in.problem());
  if (stamp != nullptr) {
    Stamp s;
    Reader sin(*stamp, "stamp: ");
    sin.Integer<int64_t>("mtime_ns", s.mtime_ns, INT64_MIN, INT64_MAX, true);
    sin.Integer<int64_t>("ctime_ns", s.ctime_ns, INT64_MIN, INT64_MAX, true);
    sin.Integer<uint64_t>("size", s.size, 0, UINT64_MAX, true);
    sin.Integer<uint64_t>("files", s.files, 0, UINT64_MAX, true);
    sin.Integer<uint64_t>("inodes", s.inodes, 0, UINT64_MAX, true);
    sin.String("hash", s.hash, true);
    if (!sin.ok()) return fail(sin.problem());
    r.stamp = s;
  }
  // "warnings" is the text of "diagnostics": the typed ones are read, and
  // one without the other (a record of another format, a damaged one) is refused.
  const json* warning_texts = in.Array("warnings", false);
  if (!in.ok()) return fail(in.problem());
  const std::size_t texts = warning_texts ? warning_texts->size() : 0, typed = diagnostics ? diagnostics->size() : 0;
  if (texts != typed) {
    return fail("field 'warnings' holds " + std::to_string(texts) + " text(s) but 'diagnostics' " + std::to_string(typed) +
                " (each warning is both)");
  }
  if (notes != nullptr && !notes->empty() && !j.contains("error_message")) {
    return fail("field 'error_notes' without 'error_message' (the notes follow the error's own message)");
  }
  for (const auto& [field, list, out] : {std::tuple("diagnostics", diagnostics, &r.warnings),
                                          std::tuple("error_notes", notes, &r.error.notes)}) {
    if (list == nullptr) continue;
    std::size_t i = 0;
    for (const json& x : *list) {
      std::string bad;
      std::optional<Diagnostic> d = DiagnosticFromJson(x, &bad);
      if (!d) return fail(std::string(field) + "[" + std::to_string(i) + "]: " + bad);
      out->push_back(std::move(*d));
      ++i;
    }
  }
  if (!r.error.notes.empty() && r.error.message.empty()) {
    return fail("field 'error_notes' on a record without an error message");
  }
  if (r.path.empty()) return fail("field 'path' is empty");
  if (const auto k = ParseErrorKind(error_kind); k && (*k != ErrorKind::kNone || !j.contains("error_kind"))) {
    r.error.kind = *k;
  } else {
    return fail("field 'error_kind' has an unknown value '" + Abbreviate(error_kind) + "'");
  }
  if (const auto rule = ParseConflictRule(conflict_rule);
      rule && (*rule != ConflictRule::kNone || !j.contains("conflict_rule"))) {
    r.error.rule = *rule;
  } else {
    return fail("field 'conflict_rule' has an unknown value '" + Abbreviate(conflict_rule) + "'");
  }
  if (r.error.rule != ConflictRule::kNone) {
    // The rule is the message's reason: a record whose two disagree is of
    // another build, or damaged. The message is compared as JSON holds it
    // (Utf8Text), then made again from the typed fields, so that a path's
    // non-UTF-8 bytes come back as bytes.
    std::string made = r.error.op_type.empty() || r.conflicts_with.empty()
                           ? std::string()
                           : ConflictMessage(r.error.op_type, r.path, r.conflicts_with, r.error.rule);
    if (r.error.kind != ErrorKind::kConflict || made.empty() || Utf8Text(made) != r.error.message) {
      return fail("field 'conflict_rule' does not agree with the record's conflict (error_kind, error_op_type, "
                  "conflicts_with, error_message)");
    }
    r.error.message = std::move(made);
  }
  if (kind != "python" && kind != "op_library") return fail("field 'kind' has an unknown value '" + Abbreviate(kind) + "'");
  r.op_library = kind == "op_library";
  if (protos != nullptr) {
    for (const json& x : *protos) {
      if (!x.is_string()) return fail(std::string("field 'prototypes' must hold strings, got ") + x.type_name());
      r.prototypes.push_back(x.get<std::string>());
    }
  }
  if (!kIsolations.count(r.isolation)) return fail("field 'isolation' has an unknown value '" + Abbreviate(r.isolation) + "'");
  const auto st = ParseStatus(status);
  if (!st) return fail("field 'status' has an unknown value '" + Abbreviate(status) + "'");
  r.status = *st;
  if (r.status == PluginStatus::kOk && ops == nullptr) return fail("missing field 'ops' (status ok)");
  for (const auto& [field, list, out] : {std::tuple("ops", ops, &r.ops),
                                          std::tuple("unprototyped", unprototyped, &r.unprototyped)}) {
    if (list == nullptr) continue;
    std::size_t i = 0;
    for (const json& o : *list) {
      const std::string where = std::string(field) + "[" + std::to_string(i++) + "]: ";
      if (!o.is_object()) return fail(where + "must be an object, got " + o.type_name());
      OpRecord op;
      Reader oin(o, where);
      oin.String("op_type", op.op_type, true);
      const json* caps = oin.Array("capabilities", true);
      std::string validation;
      oin.String("validation", validation);
      const json* proto = oin.Object("prototype", false);
      oin.String("prototype_library", op.prototype_library, false, true);
      oin.String("rules", op.rules);
      oin.String("newest_refusal", op.newest_refusal);
      if (!oin.ok()) return fail(oin.problem());
      if (!op.rules.empty() && std::find(std::begin(kRulesNames), std::end(kRulesNames), op.rules) == std::end(kRulesNames)) {
        return fail(where + "field 'rules' has an unknown value '" + Abbreviate(op.rules) + "'");
      }
      for (const json& c : *caps) {
        if (!c.is_string()) return fail(where + "capabilities must be strings, got " + c.type_name());
        op.capabilities.push_back(c.get<std::string>());
      }
      if (proto != nullptr) {
        if (proto->contains("signature") && !(*proto)["signature"].is_string()) {
          return fail(where + "prototype: field 'signature' must be a string, got " + (*proto)["signature"].type_name());
        }
        op.prototype = *proto;
      }
      out->push_back(std::move(op));
    }
  }
  return r;
}

std::string SignalName(int sig) {
  const char* abbrev = sig > 0 ? sigabbrev_np(sig) : nullptr;
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace ge::plugin
