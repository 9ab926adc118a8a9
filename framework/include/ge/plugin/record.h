// ge/plugin/record.h: the one record of what happened to a plugin, shared by
// the engine's host (PluginHost::Reports), the scanner, the registry cache,
// the daemon and ge-plugin-ls, and serialized to JSON in one place.
//
// Paths are bytes (POSIX). In JSON, a path (and any text field) is written by
// PathText (ge/text.h): valid UTF-8 unchanged, other bytes as \xNN, so two
// paths differing in one non-UTF-8 byte stay two paths, and the same spelling
// is accepted back (ParsePathText) by `ge-plugin-ls show` and `--check`.
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ge/plugin/diagnostic.h"

namespace ge::plugin {

enum class PluginStatus {
  kOk,        // imported, validated, its ops registered (or registrable)
  kError,     // it (or its pyproject.toml, or its entry) failed; see error
  kConflict,  // its name or an op_type is taken by an earlier plugin in path order
  kInsecure,  // refused: writable by others, foreign owner, or leaves its opp folder
  kMissing,   // the opp path entry (or a plugin link's target) does not exist
  kSkipped,   // not loaded on purpose (HostOptions::skip_plugin, e.g. a crash verdict)
  kCrashed,   // the scanner process died of a signal while loading it
  kHung,      // loading it did not finish within the scan limit
  kExited,    // the scanner process exited while loading it
};
// "ok", "error", ... (the JSON and CLI spelling).
std::string_view StatusName(PluginStatus s);
std::optional<PluginStatus> ParseStatus(std::string_view name);
std::ostream& operator<<(std::ostream& os, PluginStatus s);

// The step of a load that failed, or the verdict that stopped it: a closed
// set, so that every reader switches on the kind, never on a message
// (share/docs/host-design.md, "Diagnostics"). JSON: "error_kind".
enum class ErrorKind {
  kNone,        // no error
  kDiscovery,   // not a plugin (a stray file, a bad name, a missing opp path entry)
  kMetadata,    // its pyproject.toml
  kName,        // its module name would shadow another module (ge._loader)
  kExtension,   // it imports an extension module refused in a sub-interpreter
  kImport,      // its import raised (or its worker could not start)
  kValidation,  // an implementation does not match its prototype
  kPrototype,   // an implementation whose prototype (canonical IR) is not found
  kConflict,    // its name or an op_type is taken: conflicts_with, conflict_rule
  kInsecure,    // refused before any code ran: owner, mode, leaves its folder
  kSkipped,     // HostOptions::skip_plugin said no (a crash verdict)
  kLoad,        // an op library that dlopen refused, or that failed to describe a registration
  kScan,        // the scanner's own verdict (a signal, an exit, a time limit)
  kBusyThread,  // the import left a thread keeping the CPU busy
};
// "discovery", "metadata", ... ("" for kNone), and back (nullopt when unknown).
std::string_view ErrorKindName(ErrorKind k);
std::optional<ErrorKind> ParseErrorKind(std::string_view name);
// The kind a Python exception's `__ge_kind__` names ("extension",
// "prototype", "name": the ones ge's own modules set), else `otherwise` (a
// plugin's own exception may carry any attribute).
ErrorKind KindFromPython(std::string_view ge_kind, ErrorKind otherwise);
std::ostream& operator<<(std::ostream& os, ErrorKind k);

// Why the op_type's first owner wins a conflict (ge/plugin/resolve.h).
enum class ConflictRule {
  kNone,               // not an op_type conflict (a plugin name, or no conflict)
  kPathOrder,          // two Python plugins: the first in path order
  kBuiltin,            // a built-in op cannot be replaced
  kFirstLibrary,       // two op libraries: the first in path order
  kLibraryOverPython,  // op libraries load before Python plugins
};
// "path_order", "builtin", "first_library", "library_over_python" ("" for kNone), and back.
std::string_view ConflictRuleName(ConflictRule r);
std::optional<ConflictRule> ParseConflictRule(std::string_view name);
std::ostream& operator<<(std::ostream& os, ConflictRule r);
// "op_type 'X' from PATH conflicts with the one from OTHER (<rule>)": the one
// wording of an op_type conflict, for the host, the registry and the
// engine's op registry (kNone words as kPathOrder).
std::string ConflictMessage(const std::string& op_type, const std::string& path, const std::string& other,
                            ConflictRule rule);

// What went wrong, as data (never parsed back from a message).
struct PluginError {
  ErrorKind kind = ErrorKind::kNone;
  std::string message;    // one line; names the plugin's file (or the offending field)
  std::string exception;  // the Python exception type ("SyntaxError"), "" when not a Python error
  std::string file;       // the plugin file the error points into, when known
  int line = 0;           // its line (1-based), 0 when unknown
  std::string traceback;  // Python traceback or other detail, may be empty
  // The op_type the error is about, when it is one op_type's (kind
  // "prototype": the op_type whose prototype was not found), else "".
  std::string op_type;
  // Facts about the error, each kept typed and said after the message
  // (kSplitPrototype on a "prototype" error: which other plugin registers
  // the prototype). `message` never holds them: the registry's resolver
  // decides them afresh over the records.
  std::vector<Diagnostic> notes;
  // Kind kConflict over an op_type: the rule that decided it (the message
  // says it in words; PluginRecord::conflicts_with names the winner).
  ConflictRule rule = ConflictRule::kNone;
  bool empty() const { return message.empty(); }
  // The one text of the error: "message; <note>... (at file:line)", the
  // location when known and not already in the message.
  std::string OneLine() const;
};

// One op a plugin registers, with the capabilities its class defines.
struct OpRecord {
  std::string op_type;
  std::vector<std::string> capabilities;  // "eager_execute", "compilable", "annotated_args", "infer_meta"
  nlohmann::json prototype;               // optional: {"inputs", "outputs", "attrs", "signature"} or null
  // Path of the op library whose C++ prototype (REG_OP) this op is bound to:
  // a Python implementation without a Python prototype, or a C++ custom op
  // whose prototype another library registered. "" when the prototype comes
  // from the plugin itself.
  std::string prototype_library;
  // Python implementations: the GE release whose rules its class follows
  // ("9.2.0-beta.1", "9.2.0-beta.2" (also develop) or "newest"; what the
  // class is decides: share/docs/plugin-authors.md, "Plugins from earlier GE
  // releases"); "" for an op library's op. `newest_refusal`: the error the
  // newest GE's rules give it, "" when they accept it.
  std::string rules;
  std::string newest_refusal;
};
// The release rule names of OpRecord::rules, oldest first.
inline constexpr const char* kRulesNames[] = {"9.2.0-beta.1", "9.2.0-beta.2", "newest"};

// What decides that a plugin is unchanged since a verdict was taken (registry
// cache, listing index, crash verdicts): over its files (a package's tree
// without __pycache__, a single file plus its folder's helpers), the newest
// mtime and ctime, the total size, the file count and a digest of the inode
// numbers. An edit that restores size and mtime (`touch -d`) still changes
// ctime, which no unprivileged call can set back; the content hash is only
// computed when the metadata differ, to tell a touch from an edit
// (ge/plugin/discovery.h: ComputeStamp, StillFresh).
struct Stamp {
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t size = 0;
  uint64_t files = 0;
  uint64_t inodes = 0;  // FNV-1a over (relative name, inode number) of every file
  std::string hash;     // FNV-1a 64 over names and contents, hex; empty: not computed
  bool SameMeta(const Stamp& o) const {
    return mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns && size == o.size && files == o.files && inodes == o.inodes;
  }
};

struct PluginRecord {
  std::string name;         // module name (the entry's own name)
  std::string path;         // absolute path of the plugin entry (bytes)
  std::string version;      // pyproject [project].version, else __version__, else ""
  std::string description;  // pyproject [project].description, else the docstring's first line
  std::string isolation;    // "subinterpreter", "main", "process", "" when unknown
  PluginStatus status = PluginStatus::kError;
  PluginError error;
  std::vector<OpRecord> ops;  // status ok (and conflict: what it would register)
  // An op library (a C++ `lib*.so` of an opp root; share/docs/op-packages.md)
  // rather than a Python plugin. Its `ops` are its C++ custom ops.
  bool op_library = false;
  // Op libraries: the op_types whose prototype (REG_OP) it registers, in
  // registration order (also when it has no custom op). Python plugins: the
  // op_types it registers a prototype of (register_op) without implementing
  // them (register_op_impl), sorted: no node of those can run, since each
  // plugin's prototypes serve its own implementations only.
  std::vector<std::string> prototypes;
  // Python plugins: implementations with a legacy execute (GE 9.2.0-beta.x's
  // execute(self, ctx) or execute(self, inputs)) that registered without a
  // prototype, none being found: no node of their op_types runs until one is
  // registered (the engine's error says so). Their capabilities and rules as in `ops`.
  std::vector<OpRecord> unprototyped;
  // What loaded but deserves a look (a Python prototype replacing or not
  // replacing a C++ one, a library prototype registered first elsewhere,
  // what an implementation's release rules say), typed; Text() says each.
  std::vector<Diagnostic> warnings;
  std::optional<Stamp> stamp;
  // Scan verdicts.
  std::string conflicts_with;  // path of the earlier plugin (status conflict)
  int signal = 0;              // status crashed
  int exit_code = 0;           // status exited
  double timeout_s = 0;        // status hung

  bool ok() const { return status == PluginStatus::kOk; }
  std::vector<std::string> OpTypes() const;
};

// A record that only reports a problem (status and one-line error of `kind`).
PluginRecord ProblemRecord(std::string name, std::string path, PluginStatus status, ErrorKind kind,
                           std::string message);

// A prototype and its implementation split over two plugins (each plugin has
// its own registrations; share/docs/plugin-authors.md, "One plugin, one
// registry"): the text of a kSplitPrototype diagnostic, said after the
// implementation's "canonical IR not found" (error kind "prototype",
// PluginError::op_type) by the engine's host and the registry alike: "the
// prototype of op_type 'X' is registered by plugin 'P' (path), another
// plugin: <how to fix it>". `prototyped_by`: (name, path) of each plugin
// that prototypes `op_type`.
// The fix, also said of a plugin that only prototypes an op_type.
inline constexpr const char* kSplitAdvice =
    "a prototype and its implementation must be in the same plugin (one file, or one package whose modules import "
    "each other)";
std::string SplitPrototypeNote(const std::string& op_type,
                               const std::vector<std::pair<std::string, std::string>>& prototyped_by);
// Why a node of `op_type` cannot run although plugin `name` (`path`)
// implements it: its legacy execute (GE 9.2.0-beta.x) registered without a
// prototype and none is registered (PluginRecord::unprototyped). One wording
// for the engine's node error, the load log and the listing.
std::string UnprototypedNote(const std::string& name, const std::string& path, const std::string& op_type);
// The same when another plugin registers the prototype: the two halves of a
// split (SplitPrototypeNote), named from the implementation's side.
std::string UnprototypedSplitNote(const std::string& name, const std::string& path, const std::string& op_type,
                                  const std::vector<std::pair<std::string, std::string>>& prototyped_by);
// "op_type 'X' loads here, but the newest GE refuses it: <refusal>" (rules
// newest) or "op_type 'X' follows GE <rules>'s rules (its class derives from
// EagerExecuteOp), but the newest GE refuses it: <refusal>"; "" when the
// newest GE accepts the op (OpRecord::newest_refusal empty). One wording for
// the load log and ge-plugin-ls --check.
std::string NewestRefusalNote(const OpRecord& op);
// Every op whose op_type the plugin takes (first in path order wins): its
// `ops`, then its `unprototyped` ones. Borrowed from `r`: valid while it is
// unchanged; a temporary record is refused.
std::vector<const OpRecord*> TakenOps(const PluginRecord& r);
std::vector<const OpRecord*> TakenOps(PluginRecord&& temporary) = delete;
// The op_types a Python plugin that loaded has a prototype of itself: those
// it does not implement (`prototypes`) and its ops bound to no op library's.
// Empty for an op library and for a plugin that is not ok.
std::vector<std::string> OwnPrototypeOpTypes(const PluginRecord& r);
// ---- JSON (the cache, the scanner protocol, the daemon, ge-plugin-ls --json) -------------
// `with_detail`: prototypes and tracebacks too (the cache, `show`), else the
// summary a listing prints: name, path, kind ("python" or "op_library"),
// version, isolation, status, error, ops with op_type and capabilities (and
// prototype_library when bound to one), prototypes (op_types, op libraries),
// unprototyped (op objects as in ops). With detail, the typed facts beside
// their text: "error_message" (the bare message), "error_notes" and
// "diagnostics" (ge/plugin/diagnostic.h ToJson, one per note and warning),
// next to "error" and "warnings" (their text).
nlohmann::json ToJson(const PluginRecord& r, bool with_detail = true);
// The record a JSON object describes, or nullopt with `why` naming the field
// that is missing, of the wrong type or out of range. `stamp_required`: a
// record from the cache must carry its stamp.
std::optional<PluginRecord> FromJson(const nlohmann::json& j, std::string* why, bool stamp_required = false);

// "SIGSEGV" for 11 (sigabbrev_np), "signal N" when unknown.
std::string SignalName(int sig);

}  // namespace ge::plugin
