// ge-plugin-ls: which plugins are installed, what they provide, what is broken.
#include "plugin_ls.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <boost/program_options.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <cstring>
#include <iomanip>
#include <set>
#include <sstream>

#include <boost/filesystem.hpp>

#include "client.h"
#include "ge/log_spdlog.h"
#include "listing_json.h"
#include "metrics.h"
#include "ge/file.h"
#include "ge/text.h"
#include "cache_write.h"
#include "ge/plugin/cache.h"
#include "ge/plugin/discovery.h"
#include "ge/plugin/resolve.h"
#include "ge_version.h"
#include "paths.h"
#include "refresh.h"

namespace po = boost::program_options;
namespace stdfs = std::filesystem;

namespace ge::registry {

namespace {

constexpr const char* kUsage =
    "usage: ge-plugin-ls [--opp-path P] [--json | --format F] [--no-daemon] [--socket PATH] [--cache PATH] [--op OP_TYPE]\n"
    "                    [--status S] [--check PATH] [--rescan] [--timeout S] [--allow-insecure] [--log-level L]";

// --help: usage, what the tool does, then (after the options) exit status,
// environment and files; help2man makes ge-plugin-ls(1) of it
// (share/cmake/GePluginMan.cmake): keep the paragraph titles.
constexpr const char* kHelpHead =
    "Usage: ge-plugin-ls [OPTION]...\n"
    "List the installed GE plugins (Python plugins and C++ op libraries of the opp path): their ops, each op's\n"
    "capabilities (eager execute, compile, annotated launch args, infer_meta), isolation and status (ok, error,\n"
    "conflict, crashed, hung, exited, insecure, missing) with the reason. The listing comes from the registry\n"
    "daemon (ge-plugin-registryd) when it serves the same opp path, else from a fresh cache, else from a scan\n"
    "of its own in ge-plugin-scan children (a crashing or hanging plugin is marked, never fatal). --check\n"
    "validates plugins for their authors, with a hint per problem. --json output carries the tool's \"version\".\n"
    "See share/docs/registry.md.\n";
constexpr const char* kHelpTail =
    "\n"
    "Exit status:\n"
    "  0   success\n"
    "  1   problems found where asked (--check found problems, --op or --status matched nothing, --rescan\n"
    "      refused or failed) or a runtime error\n"
    "  2   usage error (bad option, no opp path and no daemon)\n"
    "\n"
    "Environment:\n"
    "  ASCEND_CUSTOM_OPP_PATH  the opp path when --opp-path is not given (':'-separated files and folders)\n"
    "  GE_PLUGIN_REGISTRY_SOCKET  the daemon's socket when --socket is not given\n"
    "  GE_PLUGIN_REGISTRY_CACHE   the cache file when --cache is not given\n"
    "  XDG_RUNTIME_DIR, XDG_CACHE_HOME\n"
    "                          where a user's own socket and cache are (see Files)\n"
    "  GE_PLUGIN_SCAN          the scanner child to run (default: ge-plugin-scan of the installation)\n"
    "  GE_LOG_LEVEL            log level when --log-level is not given\n"
    "  NO_COLOR                no colours in the table even on a terminal\n"
    "\n"
    "Files:\n"
    "  /run/ge-plugin-registry/registry.sock\n"
    "                          the system daemon's socket (used when a user has no daemon of their own)\n"
    "  $XDG_RUNTIME_DIR/ge-plugin-registry.sock\n"
    "                          a user's own daemon's socket (/tmp/ge-plugin-registry-UID/registry.sock without\n"
    "                          XDG_RUNTIME_DIR)\n"
    "  /var/cache/ge-plugin-registry/registry.json\n"
    "                          the system daemon's cache (root's default)\n"
    "  $XDG_CACHE_HOME/ge-plugin/registry.json\n"
    "                          a user's cache (~/.cache/ge-plugin/registry.json), with its listing index\n"
    "                          registry.json.list beside it\n"
    "  $XDG_CACHE_HOME/ge-plugin/listing-HASH.json\n"
    "                          a listing's own cache for an opp path no daemon or cache above holds (never\n"
    "                          the daemon's; HASH: of the opp path)\n"
    "  " GE_INSTALL_FULL_LIBEXECDIR "/ge-plugin-scan\n"
    "                          the scanner child (internal)\n"
    "\n"
    "Documentation: " GE_INSTALL_FULL_DATADIR "/docs/registry.md (share/docs/registry.md of the source).\n";

const std::set<std::string> kStatuses = {"ok", "error", "conflict", "crashed", "hung", "exited", "insecure", "missing"};

bool Has(const json& caps, const char* c) {
  for (const auto& x : caps) {
    if (x.is_string() && x.get<std::string>() == c) return true;
  }
  return false;
}

std::string Pad(const std::string& s, std::size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

void PrintTable(const json& plugins, std::ostream& out, bool color) {
  const char* kCols[] = {"PLUGIN", "VERSION", "OP_TYPE", "EXECUTE", "COMPILE", "LAUNCH-ARGS", "INFER-META", "ISOLATION",
                         "STATUS"};
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> status_of_row, reason_of_row;
  for (const auto& p : plugins) {
    const std::string name = Printable(p.value("name", "")), version = Printable(p.value("version", ""));
    const std::string status = p.value("status", "error");
    std::string reason = Printable(p.value("error", ""));
    const json ops = p.value("ops", json::array());
    // An op library runs no Python: its column says "native".
    const bool library = p.value("kind", "python") == "op_library";
    const std::string isolation = library ? "native" : p.value("isolation", "").empty() ? "-" : p.value("isolation", "");
    // Its prototypes without a C++ op of their op_type get a row each.
    std::vector<std::string> protos_only;
    for (const auto& t : p.value("prototypes", json::array())) {
      if (!t.is_string()) continue;
      bool has_op = false;
      for (const auto& op : ops) has_op = has_op || op.value("op_type", "") == t.get<std::string>();
      if (!has_op) protos_only.push_back(t.get<std::string>());
    }
    auto add = [&](const std::string& op, const json& caps, bool first, bool proto = false) {
      auto mark = [&](const char* c) { return op == "-" || proto ? std::string("-") : Has(caps, c) ? "yes" : "-"; };
      rows.push_back({first ? name : "", first ? (version.empty() ? "-" : version) : "", op, mark("eager_execute"),
                      mark("compilable"), mark("annotated_args"), mark("infer_meta"),
                      first ? isolation : "", first ? status : ""});
      status_of_row.push_back(first ? status : "");
      reason_of_row.push_back(first && status != "ok" ? reason : "");
    };
    // A legacy execute registered without a prototype: no node of it runs.
    std::vector<std::string> unprototyped;
    for (const auto& op : p.value("unprototyped", json::array())) {
      if (op.is_object()) unprototyped.push_back(op.value("op_type", ""));
    }
    if (ops.empty() && protos_only.empty() && unprototyped.empty()) {
      add("-", json::array(), true);
    } else {
      bool first = true;
      for (const auto& op : ops) {
        add(Printable(op.value("op_type", "")), op.value("capabilities", json::array()), first);
        first = false;
      }
      for (const auto& t : protos_only) {
        add(Printable(t) + " (prototype)", json::array(), first, true);
        first = false;
      }
      for (const auto& t : unprototyped) {
        add(Printable(t) + " (no prototype)", json::array(), first, true);
        first = false;
      }
    }
  }
  std::vector<std::size_t> w(9);
  for (int i = 0; i < 9; ++i) w[i] = std::strlen(kCols[i]);
  for (const auto& r : rows) {
    for (int i = 0; i < 9; ++i) w[i] = std::max(w[i], std::min<std::size_t>(r[i].size(), 40));
  }
  std::ostringstream s;
  for (int i = 0; i < 9; ++i) s << (i ? "  " : "") << (i < 8 ? Pad(kCols[i], w[i]) : std::string(kCols[i]));
  out << (color ? "\033[1m" : "") << s.str() << (color ? "\033[0m" : "") << "\n";
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const auto& r = rows[k];
    std::string cells;
    for (int i = 0; i < 8; ++i) cells += (i ? "  " : "") + Pad(r[i], w[i]);
    const std::string& st = status_of_row[k];
    if (st.empty()) cells.erase(cells.find_last_not_of(' ') + 1);
    out << cells;
    if (!st.empty()) {
      const char* c = st == "ok" ? "\033[32m" : st == "conflict" || st == "insecure" ? "\033[33m" : "\033[31m";
      out << "  " << (color ? c : "") << st << (color ? "\033[0m" : "");
      if (!reason_of_row[k].empty()) out << ": " << reason_of_row[k];
    }
    out << "\n";
  }
}

json Filter(const json& plugins, const std::string& op, const std::string& status) {
  json outp = json::array();
  for (const auto& p : plugins) {
    if (!status.empty() && p.value("status", "") != status) continue;
    if (!op.empty()) {
      json ops = json::array();
      for (const auto& o : p.value("ops", json::array())) {
        if (o.value("op_type", "") == op) ops.push_back(o);
      }
      json protos = json::array();  // an op library's prototype of OP_TYPE counts too
      for (const auto& t : p.value("prototypes", json::array())) {
        if (t == op) protos.push_back(t);
      }
      json unprototyped = json::array();  // and a legacy execute without a prototype
      for (const auto& o : p.value("unprototyped", json::array())) {
        if (o.value("op_type", "") == op) unprototyped.push_back(o);
      }
      if (ops.empty() && protos.empty() && unprototyped.empty()) continue;
      json q = p;
      q["ops"] = ops;
      if (q.contains("prototypes")) q["prototypes"] = protos;
      if (q.contains("unprototyped")) q["unprototyped"] = unprototyped;
      outp.push_back(q);
      continue;
    }
    outp.push_back(p);
  }
  return outp;
}

// The hint for a plugin's load error, from its kind and exception type (never
// from the message text).
std::string ErrorHint(const plugin::PluginError& e, bool op_library, bool single_file = false) {
  const std::string& exception = e.exception;
  if (op_library && e.kind == plugin::ErrorKind::kPrototype) {
    return "fix the REG_OP named above, or give its op_type a prototype: REG_OP in an op library of the opp path "
           "(share/docs/op-prototypes.md, share/docs/op-packages.md)";
  }
  if (e.kind == plugin::ErrorKind::kExtension) {
    return single_file ? "make the file a package (a folder with __init__.py) with a pyproject.toml that sets isolation = "
                         "\"main\" or \"process\" under [tool.ge-plugin] (share/docs/plugin-authors.md, \"Isolation\")"
                       : "set isolation = \"main\" or \"process\" under [tool.ge-plugin] in the package's pyproject.toml "
                         "(share/docs/plugin-authors.md, \"Isolation\")";
  }
  if (e.kind == plugin::ErrorKind::kMetadata) return "fix pyproject.toml ([project] name/version/description, [tool.ge-plugin] isolation)";
  if (e.kind == plugin::ErrorKind::kValidation) {
    return "make the method signature match the op's prototype (register_op, or the REG_OP of an op library; "
           "share/docs/plugin-authors.md)";
  }
  if (e.kind == plugin::ErrorKind::kPrototype) {
    return "register the op's prototype: @register_op in the plugin, or REG_OP in an op library of the opp path "
           "(share/docs/op-packages.md)";
  }
  if (e.kind == plugin::ErrorKind::kLoad) return "rebuild the op library for this machine and link what it needs (see the dlopen message)";
  if (e.kind == plugin::ErrorKind::kDiscovery) return "give a .py file or a package folder with __init__.py, named like a Python module";
  if (e.kind == plugin::ErrorKind::kName) return "rename the plugin: it would shadow that module for every plugin";
  if (exception == "SyntaxError" || exception == "IndentationError" || exception == "TabError") {
    return "fix the syntax at the given line";
  }
  if (exception == "ModuleNotFoundError") {
    return "install the missing module, or vendor it: inside the package, or (a single-file plugin) as a helper "
           "_name.py beside it (share/docs/plugin-authors.md, \"Opp folders\")";
  }
  return "fix the error above; see share/docs/plugin-authors.md";
}

// --check PATH: one plugin (a .py file or a package folder) is checked as one
// plugin; an opp folder checks every plugin in it (share/docs/registry.md,
// "Checking a plugin"). Each problem comes with a hint; conflicts are checked
// against the registry the admin has (the cache, or the opp path when given).
// Returns the exit code.
// How --check says what it checked against.
std::string RegistryText(const std::string& source, const std::string& where, std::size_t n) {
  const std::string count = " (" + std::to_string(n) + " plugin(s))";
  if (source == "daemon") return "the registry daemon at " + Printable(where) + count;
  if (source == "cache") return "the cache " + Printable(where) + count;
  if (source == "scan") return "a scan of the opp path " + Printable(where) + count;
  return "nothing installed (no daemon, no cache; give --opp-path or set ASCEND_CUSTOM_OPP_PATH)";
}

// Where --check finds the admin's registry: the command line's --no-daemon,
// --socket and --cache.
struct CheckRegistry {
  bool no_daemon = false;
  std::string socket_path, cache_option;
};

int Check(const std::string& given, const CheckRegistry& reg, const RefreshOptions& ropts,
          const std::vector<std::string>& entries, bool json_out, std::ostream& out, std::ostream& err) {
  // The path as typed, else as the listing spells it (\xNN for a non-UTF-8 byte).
  std::string path = given;
  boost::system::error_code ec;
  if (!boost::filesystem::exists(boost::filesystem::symlink_status(path, ec))) {
    if (auto parsed = ParsePathText(given)) path = *parsed;
  }
  plugin::DiscoverOptions dopts;
  dopts.uid = ::geteuid();
  // The discovery's rule (share/docs/plugin-authors.md, "Opp folders"): a
  // package folder is one plugin, any other folder an opp folder; an opp root
  // is one whatever else it holds (a package has no op_graph/lib/linux/<arch>/).
  const bool folder = boost::filesystem::is_directory(path, ec) &&
                      (!plugin::IsPackageFolder(path) || !plugin::OppLibraryFolders(path).empty());
  // A package folder holding other plugin-like modules may be an opp folder
  // with a stray __init__.py: said in the hint when the package registers nothing.
  bool package_with_modules = false;
  if (!folder && plugin::IsPackageFolder(path)) {
    for (boost::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      const auto name = it->path().filename().string();
      if (it->path().extension() == ".py" && name != "__init__.py" && name[0] != '_') package_with_modules = true;
    }
  }
  const plugin::Discovery found = folder ? plugin::Discover({path}, dopts) : plugin::DiscoverOne(path, dopts);

  // What the admin's registry holds, for op_type conflicts and for the
  // prototypes of op libraries (share/docs/registry.md, "--check"): the
  // daemon when one answers (serving the opp path given, if one is given);
  // else the cache (--cache, else the default or this user's listing cache
  // of the opp path), brought up to date for the opp path given; else a scan
  // of the opp path given. Neither cache is written.
  std::map<std::string, plugin::PluginRecord> installed;
  std::string registry_source = "none", registry_where;
  if (!reg.no_daemon) {
    Client c;
    std::string why;
    const std::string sock = reg.socket_path.empty() ? DefaultSocketPath() : reg.socket_path;
    if (!SocketPathProblem(sock) && c.Connect(sock, 2000, &why)) {
      if (auto line = c.RequestRaw(R"({"cmd":"list"})", &why, 60000)) {
        json j = json::parse(*line, nullptr, false);
        const bool usable = j.is_object() && j.value("ok", false) && j.contains("plugins") && j["plugins"].is_array() &&
                            (entries.empty() || j.value("opp_path", json::array()) == PathsJson(entries));
        if (usable) {
          for (const auto& pj : j["plugins"]) {
            std::string problem;
            if (auto r = plugin::FromJson(pj, &problem)) installed[r->path] = std::move(*r);
          }
          registry_source = "daemon";
          registry_where = sock;
        }
      }
    }
    if (registry_source == "none" && !reg.socket_path.empty()) {
      // A daemon asked for by name that does not answer is not silently
      // replaced by whatever cache is around: the admin is told.
      err << "ge-plugin-ls: warning: no daemon answers on " << Printable(reg.socket_path)
          << (why.empty() ? "" : " (" + Printable(why) + ")") << "; checking against the cache or a scan instead\n";
    }
  }
  if (registry_source == "none") {
    const ListingCaches caches = ChooseListingCaches(reg.cache_option, entries);
    std::string why;
    std::optional<plugin::Cache> cache;
    for (const auto& c : caches.candidates) {
      cache = plugin::LoadCache(c, &why, /*light=*/true);
      if (cache && (entries.empty() || cache->opp_path == entries)) {
        registry_source = "cache";
        registry_where = c;
        break;
      }
      if (!cache && stdfs::exists(c)) err << "ge-plugin-ls: warning: " << Printable(why) << "; not using it\n";
      cache.reset();
    }
    if (!entries.empty()) {
      std::map<std::string, plugin::PluginRecord> prior;
      if (cache) prior = std::move(cache->records);
      RefreshStats stats;
      for (auto& r : Refresh(entries, prior, ropts, &stats, false)) installed[r.path] = std::move(r);
      if (registry_source == "none" || stats.scanned > 0) registry_source = "scan";
      registry_where = registry_source == "scan" ? Utf8Text(PathsJson(entries).dump()) : registry_where;
    } else if (cache) {
      installed = std::move(cache->records);
    }
  }

  json reports = json::array();
  std::size_t total_problems = 0, plugins_with_problems = 0;
  std::ostringstream text;
  std::vector<std::string> scan_paths;
  for (const auto& c : found.plugins) {
    if (c.insecure.empty() || ropts.allow_insecure) scan_paths.push_back(c.path);
  }
  RefreshOptions q = ropts;
  q.scan.allow_insecure = ropts.allow_insecure;
  // Op packages: the checked plugins bind to the prototypes of the checked op
  // libraries and of the installed ones (the cache), as they would in the engine.
  std::vector<bool> is_library;
  for (const auto& c : found.plugins) {
    if (c.insecure.empty() || ropts.allow_insecure) is_library.push_back(c.is_op_library);
  }
  std::vector<plugin::PluginRecord> installed_libraries;
  for (const auto& [p, r] : installed) {
    if (r.op_library && std::find(scan_paths.begin(), scan_paths.end(), p) == scan_paths.end()) {
      installed_libraries.push_back(r);
    }
  }
  const std::vector<plugin::PluginRecord> scanned = ScanOppPath(scan_paths, is_library, installed_libraries, q.scan);
  std::vector<plugin::PluginRecord> records = found.problems;
  std::size_t k = 0;
  std::map<std::string, const plugin::Candidate*> candidate_of;
  for (const auto& c : found.plugins) {
    candidate_of[c.path] = &c;
    if (!c.insecure.empty() && !ropts.allow_insecure) {
      records.push_back(plugin::ProblemRecord(c.name, c.path, plugin::PluginStatus::kInsecure, plugin::ErrorKind::kInsecure,
                                              plugin::InsecureMessage(c.insecure)));
    } else {
      records.push_back(scanned[k++]);
    }
  }
  // Conflicts among the checked plugins themselves (an opp folder), in path order.
  records = ResolveConflicts(std::move(records));
  // What the installed plugins and op libraries decide about the checked
  // ones: the same resolver over them and the checked plugins (the installed
  // op libraries first, then the checked plugins, then the installed Python
  // plugins that are ok), of which only these facts are taken (conflicts with
  // installed plugins are problems below, named from the plugin's side): a
  // Python prototype of an op_type a library implements as a C++ custom op is
  // not used; a library prototype an earlier library registers is shadowed;
  // an implementation whose prototype is "not found" names the other half
  // (share/docs/plugin-authors.md, "One plugin, one registry"); a legacy
  // execute without a prototype is told what a node of it would be
  // (plugin::UnservedNotes).
  std::vector<plugin::Diagnostic> unserved;
  {
    std::set<std::string> checked;
    for (const auto& r : records) checked.insert(r.path);
    std::vector<plugin::PluginRecord> view;
    for (const auto& lib : installed_libraries) {
      if (!checked.count(lib.path)) view.push_back(lib);
    }
    const std::size_t first = view.size();
    view.insert(view.end(), records.begin(), records.end());
    for (const auto& [p, r] : installed) {
      if (!r.op_library && r.ok() && !checked.count(p)) view.push_back(r);
    }
    view = ResolveConflicts(std::move(view));
    for (std::size_t i = 0; i < records.size(); ++i) {
      records[i].warnings = view[first + i].warnings;
      records[i].error.notes = view[first + i].error.notes;
    }
    unserved = plugin::UnservedNotes(view);
  }
  const std::string kOnePlugin =
      std::string(plugin::kSplitAdvice) + " (share/docs/plugin-authors.md, \"One plugin, one registry\")";
  for (const auto& r : records) {
    std::vector<std::pair<std::string, std::string>> problems;  // (problem, hint)
    std::vector<std::string> notes;
    using plugin::PluginStatus;
    switch (r.status) {
      case PluginStatus::kOk:
        break;
      case PluginStatus::kInsecure:
        problems.emplace_back(r.error.message, "make the plugin owned by you or root and not writable by others "
                                               "(chown, chmod o-w), or pass --allow-insecure");
        break;
      case PluginStatus::kCrashed:
      case PluginStatus::kExited:
        problems.emplace_back(r.error.message,
                              r.op_library ? "do not exit or crash while the library loads (constructors of its "
                                             "globals, its REG_OP / REG_AUTO_MAPPING_OP registrars)"
                                           : "do not exit or crash the process at import time (no os._exit, no "
                                             "faulty C extension)");
        break;
      case PluginStatus::kMissing:
        problems.emplace_back(r.error.message, "check the path (or the target of the symbolic link)");
        break;
      case PluginStatus::kHung:
        problems.emplace_back(r.error.message, "do not block or loop at import time; defer work to the callbacks");
        break;
      case PluginStatus::kConflict:
        problems.emplace_back(r.error.message, r.error.rule != plugin::ConflictRule::kNone
                                                   ? "rename the op_type (op libraries win over Python plugins; otherwise the first in path order wins)"
                                                   : "rename the plugin (plugin names are unique over the opp path)");
        break;
      default: {
        std::string where;
        // A message that names its location itself gets it in brackets (OneLine adds none).
        if (!r.error.file.empty() && r.error.line > 0 &&
            r.error.message.find("(at " + r.error.file + ":" + std::to_string(r.error.line) + ")") != std::string::npos) {
          where = " [" + r.error.file + ":" + std::to_string(r.error.line) + "]";
        }
        const bool noted = std::any_of(r.error.notes.begin(), r.error.notes.end(), [](const plugin::Diagnostic& d) {
          return d.kind == plugin::DiagnosticKind::kSplitPrototype;
        });
        if (noted) {
          problems.emplace_back(r.error.OneLine() + where, kOnePlugin);
        } else {
          problems.emplace_back(r.error.OneLine() + where,
                                ErrorHint(r.error, r.op_library, !r.op_library && !stdfs::is_directory(r.path)));
        }
      }
    }
    if (r.ok() && !r.op_library && !r.prototypes.empty()) {
      // Prototypes without an implementation: no node of those op_types can
      // run (an op library's prototypes serve others; a plugin's only its own).
      std::string list;
      for (const auto& t : r.prototypes) list += (list.empty() ? "'" : ", '") + t + "'";
      const std::string what = PathText(r.path) + " registers the prototype of op_type " + list +
                               " (register_op) but no implementation (register_op_impl)";
      if (r.ops.empty()) {
        problems.emplace_back(what + ": no node of " + (r.prototypes.size() == 1 ? "it" : "them") + " can run",
                              "add the implementation to this plugin; " + kOnePlugin);
      } else {
        notes.push_back(what);
      }
    }
    if (r.ok() && !r.op_library) {
      // The engine refuses a node whose op can neither execute nor declare launch args.
      for (const auto& op : r.ops) {
        const auto& caps = op.capabilities;
        if (std::find(caps.begin(), caps.end(), "eager_execute") != caps.end() ||
            std::find(caps.begin(), caps.end(), "annotated_args") != caps.end()) {
          continue;
        }
        problems.emplace_back("op_type '" + op.op_type + "' of " + PathText(r.path) +
                                  " can neither execute nor declare launch args: no node of it can run",
                              "add execute (eager) or declare_launch_args (a task plan) to the implementation class; "
                              "compile alone only prepares them");
      }
    }
    for (const plugin::Diagnostic& d : unserved) {
      // A legacy execute without a prototype: its prototype in another plugin
      // (checked here or installed) is the other half of a split.
      if (d.path != r.path) continue;
      if (d.kind == plugin::DiagnosticKind::kUnprototypedSplit) {
        problems.emplace_back(plugin::Text(d), kOnePlugin);
      } else if (d.kind == plugin::DiagnosticKind::kUnprototyped) {
        problems.emplace_back(plugin::Text(d),
                              "GE's legacy execute takes its prototype from elsewhere: register one with "
                              "@register_op in this plugin, or install the op library (REG_OP) that declares it");
      }
    }
    if (r.ok() && r.ops.empty() && r.prototypes.empty() && r.unprototyped.empty()) {
      problems.emplace_back(
          PathText(r.path) + " registers no op",
          r.op_library ? "register a prototype (REG_OP) or a custom op (REG_AUTO_MAPPING_OP) in the library"
          : package_with_modules && r.path == path
              ? "it holds __init__.py, so it is checked as one package plugin: import its modules from __init__.py, "
                "or, if it is an opp folder of several plugins, remove its __init__.py (share/docs/plugin-authors.md, "
                "\"Opp folders\")"
              : "decorate a prototype with @register_op and a class with @register_op_impl");
    }
    if (r.ok()) {
      // Conflicts with what is installed: other plugins of the registry.
      // (A legacy execute without a prototype takes its op_type too.)
      const std::vector<const plugin::OpRecord*> mine_all = plugin::TakenOps(r);
      for (const auto& [other_path, other] : installed) {
        if (other_path == r.path || !other.ok()) continue;
        for (const plugin::OpRecord* op_p : plugin::TakenOps(other)) {
          const plugin::OpRecord& op = *op_p;
          for (const plugin::OpRecord* mine_p : mine_all) {
            const plugin::OpRecord& mine = *mine_p;
            if (op.op_type == mine.op_type) {
              problems.emplace_back("op_type '" + mine.op_type + "' is also defined by " + PathText(other_path),
                                    "rename the op_type (op libraries win over Python plugins; otherwise the first in path order wins)");
            }
          }
        }
      }
    }
    for (const auto& w : r.warnings) notes.push_back(plugin::Text(w));
    // Plugins written for an earlier GE release load here (the class decides
    // which release's rules apply); say where the newest GE would refuse one.
    // (An op without a prototype is a problem above already.)
    std::vector<std::string> release_warnings;
    for (const auto& op : r.ops) {
      if (std::string w = plugin::NewestRefusalNote(op); !w.empty()) release_warnings.push_back(std::move(w));
    }
    if (candidate_of.count(r.path) && r.ok() && !r.op_library) {
      if (r.version.empty()) notes.push_back("no version: set [project] version in pyproject.toml or __version__");
      if (r.description.empty()) notes.push_back("no description: add a module docstring or [project] description");
    }
    total_problems += problems.size();
    if (json_out) {
      json pj = json::array();
      for (const auto& [p, h] : problems) pj.push_back({{"problem", Utf8Text(p)}, {"hint", h}});
      json wj = json::array();
      for (const auto& w : release_warnings) wj.push_back(Utf8Text(w));
      reports.push_back({{"path", PathText(r.path)}, {"plugin", plugin::ToJson(r)}, {"problems", pj},
                         {"notes", notes}, {"warnings", wj}, {"ok", problems.empty()}});
      continue;
    }
    // No verdict here: the one verdict is the last line, over every plugin checked.
    text << "checking " << Printable(PathText(r.path)) << " (status " << plugin::StatusName(r.status) << ")\n";
    if (!problems.empty()) ++plugins_with_problems;
    for (const auto& op : r.ops) {
      text << "  op " << Printable(op.op_type);
      if (op.prototype.is_object() && op.prototype.contains("signature") && op.prototype["signature"].is_string()) {
        text << "  " << Printable(op.prototype["signature"].get<std::string>());
      }
      text << "  [";
      bool first = true;
      for (const auto& cap : op.capabilities) text << (first ? "" : ", ") << cap, first = false;
      text << "]";
      if (!op.prototype_library.empty()) text << "  (prototype from " << Printable(PathText(op.prototype_library)) << ")";
      if (!op.rules.empty()) text << "  (rules " << op.rules << ")";
      text << "\n";
    }
    for (const auto& op : r.unprototyped) {
      text << "  op " << Printable(op.op_type) << "  [eager_execute]  (rules " << op.rules
           << ", no prototype: no node of it runs)\n";
    }
    for (const auto& p : r.prototypes) text << "  prototype " << Printable(p) << "\n";
    for (const auto& [p, h] : problems) text << "problem: " << Printable(p) << "\n  hint: " << h << "\n";
    // The traceback when it shows the plugin's own code: one made only of the
    // ge package's frames (a signature or prototype check) adds nothing to
    // the problem line, which names the plugin's file and line already (the
    // JSON keeps it as "details").
    const std::string own_frame = "File \"" + PathText(r.path);
    if (!r.error.traceback.empty() && !problems.empty() && r.error.kind != plugin::ErrorKind::kName &&
        r.error.traceback.find(own_frame) != std::string::npos) {
      text << TerminalSafe(Abbreviate(r.error.traceback, kMaxDetailsChars), /*keep_newlines=*/true) << "\n";
    }
    for (const auto& w : release_warnings) text << "warning: " << Printable(w) << "\n";
    for (const auto& n : notes) text << "note: " << Printable(n) << "\n";
  }
  if (records.empty()) {
    total_problems = 1;
    if (json_out) {
      reports.push_back({{"path", PathText(path)}, {"plugin", nullptr},
                         {"problems", json::array({{{"problem", "no plugin in " + Utf8Text(path)},
                                                    {"hint", "give a .py file, a package folder or an opp folder"}}})},
                         {"notes", json::array()}, {"warnings", json::array()}, {"ok", false}});
    } else {
      text << "checking " << Printable(PathText(path)) << " (no plugin found)\n"
           << "problem: no plugin in " << Printable(PathText(path))
           << "\n  hint: give a .py file, a package folder or an opp folder\n";
    }
  }
  if (json_out) {
    // One plugin: the object of that plugin (with "plugins" too); a folder: all.
    json j = reports.size() == 1 ? reports[0] : json::object();
    j["path"] = PathText(path);
    j["plugins"] = reports;
    j["ok"] = total_problems == 0;
    j["version"] = kVersion;
    j["registry"] = {{"source", registry_source},
                     {"where", registry_where.empty() ? json(nullptr) : json(Utf8Text(registry_where))},
                     {"plugins", installed.size()}};
    out << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    out << text.str();
    out << "installed plugins checked against: " << RegistryText(registry_source, registry_where, installed.size())
        << "\n";
    const std::size_t checked = std::max<std::size_t>(records.size(), 1);
    if (total_problems == 0) {
      out << "no problems found (" << checked << " plugin(s) checked)\n";
    } else {
      out << total_problems << " problem(s) found in " << std::max<std::size_t>(plugins_with_problems, 1) << " of "
          << checked << " plugin(s) checked\n";
    }
  }
  return total_problems == 0 ? 0 : 1;
}

}  // namespace

namespace {

int PluginLs(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool out_is_tty,
                bool err_is_tty) {
  std::string opp_path, socket_path, cache_path, op, status, check, log_level, format;
  bool json_out = false, no_daemon = false, rescan = false, allow_insecure = false;
  double timeout_s = kDefaultScanTimeoutS;
  po::options_description desc("Options", 110);  // as wide as the --help text around it
  desc.add_options()("help,h", "show this help and exit")("version", "print the version and exit")(
      "opp-path", po::value<std::string>(&opp_path), "':'-separated plugin files/folders (default: ASCEND_CUSTOM_OPP_PATH)")(
      "json", po::bool_switch(&json_out), "print JSON (--format json)")(
      "format", po::value<std::string>(&format),
      "table (default), json, or prometheus: the Prometheus text format (share/docs/registry.md, \"Fleet metrics\")")("no-daemon", po::bool_switch(&no_daemon),
                                                        "do not ask the registry daemon (read the cache or scan)")(
      "socket", po::value<std::string>(&socket_path), "the daemon's socket (default as ge-plugin-registryd)")(
      "cache", po::value<std::string>(&cache_path), "the cache file (default as ge-plugin-registryd)")(
      "op", po::value<std::string>(&op), "only plugins providing OP_TYPE")(
      "status", po::value<std::string>(&status), "only plugins with this status (ok, error, conflict, crashed, hung, exited, insecure, missing)")(
      "check", po::value<std::string>(&check),
      "validate a plugin (a .py file or package folder), an op library (a .so file), or every plugin and op "
      "library of an opp folder or opp root, against the installed registry (the daemon, else the cache, else the "
      "opp path given); exit 1 on problems")(
      "rescan", po::bool_switch(&rescan), "rescan every plugin first")(
      "timeout", po::value<double>(&timeout_s), "seconds a plugin may take to load when scanning here (default 10)")(
      "allow-insecure", po::bool_switch(&allow_insecure), "scan plugins writable by others / owned by another user")(
      "log-level", po::value<std::string>(&log_level), "trace, debug, info, warn, error, off");
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv)
                  .options(desc)
                  .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
    if (vm.count("help")) {
      out << kHelpHead << "\n" << desc << kHelpTail;
      return 0;
    }
    if (vm.count("version")) {
      out << VersionLine("ge-plugin-ls") << "\n";
      return 0;
    }
    if (!status.empty() && !kStatuses.count(status)) {
      err << "ge-plugin-ls: unknown --status '" << status << "' (ok, error, conflict, crashed, hung, exited, insecure, missing)\n";
      return 2;
    }
    if (!(timeout_s > 0 && timeout_s <= kMaxScanTimeoutS)) {
      err << "ge-plugin-ls: --timeout must be in (0, 86400] seconds\n";
      return 2;
    }
    if (vm.count("format") && format != "table" && format != "json" && format != "prometheus") {
      err << "ge-plugin-ls: unknown --format '" << format << "' (table, json, prometheus)\n";
      return 2;
    }
    if (json_out && !format.empty() && format != "json") {
      err << "ge-plugin-ls: --json and --format " << format << " contradict each other\n";
      return 2;
    }
    if (format == "json") json_out = true;
    if (format == "prometheus" && !check.empty()) {
      err << "ge-plugin-ls: --format prometheus lists the registry; it does not apply to --check\n";
      return 2;
    }
    if (format == "prometheus" && (!op.empty() || !status.empty())) {
      // The metrics describe the whole registry (plugins per status, ...):
      // a filtered subset would report false counts to the fleet.
      err << "ge-plugin-ls: --format prometheus describes the whole registry; it does not take --op or --status\n";
      return 2;
    }
    if (!ApplyLogLevelOption(log_level, "ge-plugin-ls", err)) return 2;
  } catch (const po::error& e) {
    err << "ge-plugin-ls: " << e.what() << "\n" << kUsage << "\n";
    return 2;
  }
  if (!socket_path.empty()) {
    if (auto problem = SocketPathProblem(socket_path)) {
      err << "ge-plugin-ls: --socket: " << *problem << "\n";
      return 2;
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  RefreshOptions ropts;
  ropts.allow_insecure = allow_insecure;
  ropts.scan.timeout_s = timeout_s;
  ropts.scan.allow_insecure = allow_insecure;
  ropts.scan.log_level = log_level.empty() ? (std::getenv("GE_LOG_LEVEL") ? "" : "error") : log_level;
  ropts.scan.quiet_children = log_level.empty() && !std::getenv("GE_LOG_LEVEL");
  std::vector<std::string> entries;
  try {
    entries = OppEntries(opp_path);
  } catch (const std::runtime_error& e) {
    err << "ge-plugin-ls: " << e.what() << "\n";
    return 2;
  }
  if (!check.empty()) {
    return Check(check, CheckRegistry{no_daemon, socket_path, cache_path}, ropts, entries, json_out, out, err);
  }

  const bool prometheus = format == "prometheus";
  json plugins;
  std::string source;
  json scan_state;  // the daemon's {"in_progress", "pending"} (share/docs/registry.md, "Scan progress")
  MetricsInfo metrics;  // --format prometheus: what the listing's source knows besides the plugins
  if (!no_daemon) {
    Client c;
    std::string why;
    const std::string sock = socket_path.empty() ? DefaultSocketPath() : socket_path;
    if (auto problem = SocketPathProblem(sock)) {
      // GE_PLUGIN_REGISTRY_SOCKET or RUNTIME_DIRECTORY give an unusable path: say so, then scan.
      err << "ge-plugin-ls: warning: " << *problem << "; listing without the daemon\n";
    }
    if (c.Connect(sock, 2000, &why)) {
      if (rescan) {
        auto r = c.Request({{"cmd", "rescan"}}, &why);
        if (!r || !r->value("ok", false)) {
          err << "ge-plugin-ls: rescan failed: " << (r ? r->value("error", std::string("?")) : why) << "\n";
          return 1;
        }
      }
      if (auto line = c.RequestRaw(R"({"cmd":"list"})", &why, 60000)) {
        // --json without filters: the reply is checked in one streaming pass
        // and its plugins passed through as sent (share/docs/registry.md,
        // "Protocol"); anything else parses it.
        if (json_out && op.empty() && status.empty()) {
          if (auto reply = ParseListReply(*line)) {
            if (reply->ok && (entries.empty() || json(reply->opp_path) == PathsJson(entries)) &&
                reply->allow_insecure == allow_insecure) {
              // The other keys are few and small: the scan state is read from them.
              std::string head(reply->head);
              if (!head.empty() && head.back() == ',') head.back() = '}';
              const json h = json::parse(head, nullptr, false);
              out << "{\"plugins\":" << reply->plugins << ",\"source\":\"daemon\",\"version\":\"" << kVersion << "\"";
              if (h.is_object() && h.contains("scan") && h["scan"].is_object()) {
                out << ",\"scan\":" << h["scan"].dump(-1, ' ', false, json::error_handler_t::replace);
              }
              out << "}\n";
              return 0;
            }
          }
        }
        json j = json::parse(*line, nullptr, false);
        // The daemon's listing is used only when it answers the same question:
        // the same opp path (given or from ASCEND_CUSTOM_OPP_PATH) and the
        // same safety rule (a daemon run with --allow-insecure lists what
        // this listing would refuse).
        const bool same_path = entries.empty() || (j.is_object() && j.value("opp_path", json::array()) == PathsJson(entries));
        const bool same_rule = j.is_object() && j.value("allow_insecure", false) == allow_insecure;
        if (j.is_object() && j.value("ok", false) && same_path && same_rule) {
          plugins = std::move(j["plugins"]);
          source = "daemon";
          if (j.contains("scan") && j["scan"].is_object()) scan_state = std::move(j["scan"]);
          if (prometheus) {
            // The daemon's last refresh and its cache, from `status`.
            if (auto st = c.Request({{"cmd", "status"}}, &why, 10000); st && st->value("ok", false)) {
              if ((*st)["last_scan_ms"].is_number()) metrics.last_refresh_s = (*st)["last_scan_ms"].get<double>() / 1000;
              if ((*st)["last_scanned"].is_number_unsigned()) metrics.last_refresh_scanned = (*st)["last_scanned"].get<uint64_t>();
              if ((*st)["cache"].is_string()) metrics.cache_written_unix = FileMtimeUnix((*st)["cache"].get<std::string>());
            }
          }
        } else if (!same_path || !same_rule) {
          spdlog::debug("the daemon serves another opp path or safety rule; not using it");
        }
      }
    }
  }
  if (source.empty()) {
    if (entries.empty()) {
      err << "ge-plugin-ls: no opp path: give --opp-path or set ASCEND_CUSTOM_OPP_PATH (or start ge-plugin-registryd)\n";
      return 2;
    }
    // Which cache is read and which written: share/docs/registry.md, "Which
    // cache". A listing never replaces a cache holding another opp path.
    const ListingCaches caches = ChooseListingCaches(cache_path, entries);
    std::map<std::string, plugin::PluginRecord> records;
    std::string why;
    // Fastest path: the listing index is fresh, and --json without filters
    // needs no JSON parsing at all.
    if (!rescan && json_out && op.empty() && status.empty()) {
      for (const auto& c : caches.candidates) {
        if (auto fresh = FreshListJson(c, entries, ropts.allow_insecure)) {
          out << "{\"plugins\":";
          fresh->WriteArray(out);
          out << ",\"source\":\"cache\",\"version\":\"" << kVersion << "\"}\n";
          return 0;
        }
      }
    }
    // The first cache holding this opp path that is fresh for every plugin is
    // used, else the first holding it (a light read: no prototypes, enough
    // when nothing changed; the full records are read when something is to
    // be scanned, so that the cache written keeps every plugin's detail).
    std::string used;
    std::vector<plugin::PluginRecord> ordered;
    RefreshStats stats;
    bool done = false;
    for (const auto& c : caches.candidates) {
      auto cache = plugin::LoadCache(c, &why, true);
      if (!cache) {
        if (stdfs::exists(c)) Logger("ge-plugin-ls")->warn("{}; not using it (scanning instead)", why);
        continue;
      }
      if (cache->opp_path != entries) continue;
      if (rescan) {
        used = c;
        break;
      }
      RefreshOptions dry = ropts;
      dry.no_scan = true;
      RefreshStats dry_stats;
      std::vector<plugin::PluginRecord> dry_ordered = Refresh(entries, cache->records, dry, &dry_stats, false);
      if (dry_stats.scanned == 0 && dry_stats.removed == 0) {
        used = c, done = true;
        records = std::move(cache->records), ordered = std::move(dry_ordered), stats = dry_stats;
        break;
      }
      if (used.empty()) used = c;
    }
    if (!used.empty() && !done && !rescan) {
      if (auto cache = plugin::LoadCache(used, &why)) records = std::move(cache->records);
    }
    // Where what is scanned goes: never a cache holding another opp path.
    const std::string cpath = caches.WriteTo(used);
    if (!done && (cpath == caches.own || cpath == UserCachePath()) && !EnsureUserCacheFolder(&why)) {
      err << "ge-plugin-ls: warning: " << Printable(why) << "\n";
    }
    bool progress_shown = false;
    if (err_is_tty) {
      ropts.scan.progress = [&](std::size_t done, std::size_t total) {
        err << "\rscanning plugins: " << done << "/" << total << std::flush;
        progress_shown = true;
      };
    }
    const auto refresh_start = std::chrono::steady_clock::now();
    if (!done) ordered = Refresh(entries, records, ropts, &stats, rescan);
    if (!done) {
      metrics.last_refresh_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - refresh_start).count();
      metrics.last_refresh_scanned = stats.scanned;
    }
    if (progress_shown) err << "\r\033[K" << std::flush;
    source = done || (stats.scanned == 0 && !records.empty()) ? "cache" : "scan";
    if (!done && (stats.scanned > 0 || stats.removed > 0 || cpath != used)) {
      std::string w;
      // The listing is still printed; the failure is said on stderr (a full
      // disk must not pass unnoticed), and the next run scans again.
      if (!SaveCache(cpath, entries, records, &w)) err << "ge-plugin-ls: warning: " << Printable(w) << "\n";
    }
    plugins = json::array();
    for (const auto& r : ordered) plugins.push_back(plugin::ToJson(r, /*with_detail=*/false));
    std::string w;
    // The index goes beside the cache it describes (a fresh cache read: that one).
    if (!SaveListIndex(done ? used : cpath, entries, ordered, &w) && !w.empty()) {
      Logger("ge-plugin-ls")->info("{}", w);
    }
    if (prometheus) metrics.cache_written_unix = FileMtimeUnix(done ? used : cpath);
  }
  const bool filtered = !op.empty() || !status.empty();
  if (filtered) plugins = Filter(plugins, op, status);
  if (prometheus) {
    metrics.source = source;
    metrics.now_unix = static_cast<int64_t>(::time(nullptr));
    out << PrometheusText(plugins, metrics);  // never filtered (refused with --op/--status above)
    return 0;
  }
  if (json_out) {
    json j = {{"plugins", std::move(plugins)}, {"source", source}, {"version", kVersion}};
    if (!scan_state.is_null()) j["scan"] = std::move(scan_state);
    out << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    return filtered && j["plugins"].empty() ? 1 : 0;
  }
  PrintTable(plugins, out, out_is_tty && !std::getenv("NO_COLOR"));
  std::map<std::string, int> counts;
  for (const auto& p : plugins) counts[p.value("status", "error")]++;
  std::ostringstream s;
  s << plugins.size() << " plugin(s)";
  for (const auto& [k, v] : counts) s << ", " << v << " " << k;
  s << " (source: " << source << ")";
  out << s.str() << "\n";
  if (scan_state.is_object() && scan_state.value("in_progress", false)) {
    // The listing is of a registry being refreshed: say which plugins are
    // still being scanned (they show their previous record, or are not listed yet).
    const json pending = scan_state.value("pending", json::array());
    out << "scan in progress: " << pending.size() << " plugin(s) still being scanned";
    std::size_t shown = 0;
    for (const auto& p : pending) {
      if (!p.is_string()) continue;
      if (shown == 5) {
        out << ", ...";
        break;
      }
      out << (shown++ ? ", " : ": ") << Printable(p.get<std::string>());
    }
    out << "\n";
  }
  return filtered && plugins.empty() ? 1 : 0;
}

}  // namespace

// No exception escapes the tool: whatever a file or a plugin made us throw is
// an error message and exit 1, never an abort.
int RunPluginLs(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool out_is_tty,
                bool err_is_tty) {
  int rc = 1;
  try {
    rc = PluginLs(argc, argv, out, err, out_is_tty, err_is_tty);
  } catch (const std::exception& e) {
    err << "ge-plugin-ls: error: " << Printable(e.what()) << "\n";
  }
  return FinishOutput("ge-plugin-ls", out, err, rc);
}

}  // namespace ge::registry
