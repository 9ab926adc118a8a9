// ge-run: load plugins, compile and execute a graph, write its outputs.
#include "ge_run.h"

#include <boost/program_options.hpp>

#include <algorithm>
#include <set>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "ge/file.h"
#include "ge/crash_report.h"
#include "ge/engine/engine.h"
#include "ge/engine/npy.h"
#include "ge/host/plugin_host.h"
#include "ge/log.h"
#include "ge/platform/platform_info.h"
#include "ge/registry/verdicts.h"
#include "ge/text.h"
#include "ge_version.h"

namespace po = boost::program_options;
namespace stdfs = std::filesystem;

namespace ge::tools {

namespace {

constexpr const char* kUsage =
    "usage: ge-run GRAPH.json [--opp-path P1:P2] [--output-dir DIR] [--repeat N] [--soc NAME] [--option KEY=VALUE]... "
    "[--json] [--skip-crashed] [--registry-cache F] [--allow-insecure] [--isolation I] [--call-timeout S] "
    "[--log-level L]";

// --help: the usage line, what ge-run does, then (after the options) the exit
// status, environment and files. help2man turns it into ge-run(1)
// (share/cmake/GePluginMan.cmake): keep the paragraph titles.
constexpr const char* kHelpHead =
    "Usage: ge-run GRAPH.json [OPTION]...\n"
    "Load the GE custom-operator plugins of the opp path (Python plugins, each in its own sub-interpreter, and\n"
    "C++ op libraries of opp roots), compile the graph GRAPH.json for a platform (--soc), execute it --repeat\n"
    "times and write its outputs as .npy files, all at once: on any error no output file is left. A summary\n"
    "(per-node calls and mean execute time) is printed on stdout; --json prints it as JSON, with the tool's\n"
    "\"version\". Graph files: README.md, \"Graph files\".\n";
constexpr const char* kHelpTail =
    "\n"
    "Exit status:\n"
    "  0   success: the outputs are written\n"
    "  1   error: bad graph, unknown op_type, input count, dtype or shape mismatch, missing file, plugin\n"
    "      exception (one message naming the node and field, with the Python traceback); no output written\n"
    "  2   usage error (bad option, unknown --soc)\n"
    "\n"
    "Environment:\n"
    "  ASCEND_CUSTOM_OPP_PATH  the opp path when --opp-path is not given (':'-separated files and folders)\n"
    "  GE_LOG_LEVEL            log level when --log-level is not given (default warn)\n"
    "  GE_PLATFORM_DIR         folder of the SOC.ini platform files for --soc (default: the installation's\n"
    "                          share/ge-plugin/platform)\n"
    "  GE_PLUGIN_PYTHON_DIR    folder holding the ge Python package (default: found beside the libraries)\n"
    "  GE_PLUGIN_WORKER        the worker executable of process-isolated plugins (default: the installation's\n"
    "                          libexec/ge-plugin/ge-plugin-worker); when set, each worker is spawned from it\n"
    "                          instead of forked from the workers' zygote\n"
    "  GE_PLUGIN_WORKER_ZYGOTE  0: spawn a ge-plugin-worker per worker instead of forking each from the one\n"
    "                          zygote (ge-plugin-scan --zygote) started at the first process-isolated plugin\n"
    "  GE_PLUGIN_REGISTRY_CACHE  the registry cache --skip-crashed reads (when --registry-cache is not given)\n"
    "\n"
    "Files:\n"
    "  " GE_INSTALL_FULL_DATADIR "/platform/SOC.ini\n"
    "                          platform descriptions for --soc (SoC name, cores, memory sizes)\n"
    "  /var/cache/ge-plugin-registry/registry.json\n"
    "                          the registry cache of the system daemon (ge-plugin-registryd), read by\n"
    "                          --skip-crashed; a user's own is ~/.cache/ge-plugin/registry.json\n"
    "  DIR/NODE_INDEX.npy      the outputs (--output-dir DIR, default ge_run_out)\n"
    "\n"
    "Documentation: " GE_INSTALL_FULL_DATADIR "/docs/ (share/docs/ and README.md, \"ge-run\", of the source).\n";

std::string OutputFileName(const TensorRef& r) {
  return r.node.empty() ? r.text + ".npy" : r.node + "_" + std::to_string(r.index) + ".npy";
}

// Writes every output under a temporary name, then renames them all: either all
// outputs appear or none (temporaries are removed on failure).
std::map<std::string, std::string> WriteOutputs(const Graph& g, const RunResult& res, const stdfs::path& dir) {
  std::error_code ec;
  stdfs::create_directories(dir, ec);
  if (ec) throw NpyError("cannot create output directory " + Abbreviate(dir.string()) + ": " + ec.message());
  std::vector<std::pair<stdfs::path, stdfs::path>> staged;
  std::map<std::string, std::string> files;
  try {
    for (const auto& r : g.outputs) {
      const stdfs::path final_path = dir / OutputFileName(r);
      const stdfs::path tmp = dir / ("." + OutputFileName(r) + ".tmp-" + std::to_string(::getpid()));
      staged.emplace_back(tmp, final_path);
      WriteNpy(tmp, res.outputs.at(r.text));
      files[r.text] = final_path.string();
    }
    std::size_t renamed = 0;
    for (const auto& [tmp, fin] : staged) {
      stdfs::rename(tmp, fin, ec);
      if (ec) {
        // Roll back: the outputs of this run already in place are removed too.
        for (std::size_t i = 0; i < renamed; ++i) stdfs::remove(staged[i].second, ec);
        throw NpyError("cannot rename " + Abbreviate(tmp.string()) + " to " + Abbreviate(fin.string()) + ": " +
                       ec.message());
      }
      ++renamed;
    }
  } catch (...) {
    for (const auto& [tmp, fin] : staged) stdfs::remove(tmp, ec);
    throw;
  }
  return files;
}

nlohmann::json ShapeJson(const Shape& s) {
  nlohmann::json a = nlohmann::json::array();
  for (std::size_t i = 0; i < s.GetDimNum(); ++i) a.push_back(s.GetDim(i));
  return a;
}

}  // namespace

namespace {

// What the command line asks for (after parsing and checking).
struct RunArgs {
  std::string graph_path, opp_path, output_dir = "ge_run_out", log_level, soc = "host", registry_cache;
  std::string isolation = "subinterpreter";  // HostOptions::default_isolation
  double call_timeout_s = 60.0;              // HostOptions::call_timeout_s
  std::string output_dir_shown;  // the user's spelling, for the summary
  std::vector<std::string> option_args;
  int repeat = 1;
  bool json_out = false, skip_crashed = false, allow_insecure = false;
};

// Why --soc names no platform of share/platform (listing the ones there), or
// nullopt. Checked up front so that a typo is a usage error even when no
// compile reads the platform (a broken ini still fails that compile,
// share/docs/compile.md).
std::optional<std::string> UnknownSoc(const std::string& soc) {
  if (soc == "host") return std::nullopt;
  const std::string dir = DefaultPlatformDir();
  std::error_code ec;
  if (soc.find('/') == std::string::npos && stdfs::is_regular_file(stdfs::path(dir) / (soc + ".ini"), ec)) {
    return std::nullopt;
  }
  ec.clear();
  std::vector<std::string> names{"host"};
  for (stdfs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (it->path().extension() == ".ini" && stdfs::is_regular_file(it->path(), fec)) {
      names.push_back(it->path().stem().string());
    }
  }
  std::sort(names.begin() + 1, names.end());
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return "unknown --soc '" + TerminalSafe(Abbreviate(soc)) + "': no " + TerminalSafe(Abbreviate(soc)) + ".ini in " +
         dir + " (available: " + list + ")";
}

// Parses and checks the command line; an exit code when ge-run ends here
// (--help: 0, a usage error: 2 with the message on `err`).
std::optional<int> ParseArgs(int argc, const char* const* argv, RunArgs& a, std::ostream& out, std::ostream& err) {
  po::options_description desc("Options", 110);  // as wide as the --help text around it
  desc.add_options()("help,h", "show this help and exit")("version", "print the version and exit")(
      "opp-path", po::value<std::string>(&a.opp_path), "':'-separated plugin files/folders (default: ASCEND_CUSTOM_OPP_PATH)")(
      "output-dir", po::value<std::string>(&a.output_dir), "where outputs are written as <node>_<index>.npy (default ge_run_out)")(
      "repeat", po::value<int>(&a.repeat), "execute the graph N times (default 1)")(
      "soc", po::value<std::string>(&a.soc), "target platform for compile: host (default) or a share/platform/<SoC>.ini name")(
      "option", po::value<std::vector<std::string>>(&a.option_args)->composing(),
      "compile option KEY=VALUE (repeatable; overrides the graph's \"options\")")(
      "json", po::bool_switch(&a.json_out), "print the summary as JSON on stdout")(
      "skip-crashed", po::bool_switch(&a.skip_crashed),
      "do not load plugins the registry marks crashed, hung or exited (unchanged since)")(
      "registry-cache", po::value<std::string>(&a.registry_cache),
      "the registry cache for --skip-crashed (default: ge-plugin-registryd's)")(
      "allow-insecure", po::bool_switch(&a.allow_insecure),
      "load plugins writable by others, owned by another user or linked from outside their opp folder")(
      "isolation", po::value<std::string>(&a.isolation),
      "isolation of plugins that declare none: subinterpreter (default), main or process")(
      "call-timeout", po::value<double>(&a.call_timeout_s),
      "seconds one op call of a process-isolated plugin may take before its worker is killed (default 60; 0.001 to 1e9)")(
      "log-level", po::value<std::string>(&a.log_level), "trace, debug, info, warn, error, off (default: GE_LOG_LEVEL or warn)");
  po::options_description hidden;
  hidden.add_options()("graph", po::value<std::string>(&a.graph_path));
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("graph", 1);
  auto usage = [&](const std::string& message) {
    err << "ge-run: " << message << "\n" << kUsage << "\n";
    return 2;
  };
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv)
                  .options(all)
                  .positional(pos)
                  .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
    if (vm.count("help")) {
      out << kHelpHead << "\n" << desc << kHelpTail;
      return 0;
    }
    if (vm.count("version")) {
      out << VersionLine("ge-run") << "\n";
      return 0;
    }
    if (a.graph_path.empty()) return usage("missing GRAPH.json");
    if (a.repeat < 1) return usage("--repeat must be at least 1, got " + std::to_string(a.repeat));
    for (const auto& o : a.option_args) {
      const auto eq = o.find('=');
      if (eq == std::string::npos || eq == 0) return usage("--option expects KEY=VALUE, got '" + o + "'");
    }
    if (a.soc.empty()) return usage("--soc must not be empty");
    if (a.isolation != "subinterpreter" && a.isolation != "main" && a.isolation != "process") {
      return usage("--isolation must be subinterpreter, main or process, got '" + TerminalSafe(Abbreviate(a.isolation)) + "'");
    }
    if (const std::string problem = ge::host::CallTimeoutProblem(a.call_timeout_s); !problem.empty()) {
      return usage("--call-timeout " + problem);
    }
    if (auto problem = UnknownSoc(a.soc)) {
      err << "ge-run: " << *problem << "\n";
      return 2;
    }
    if (!ApplyLogLevelOption(a.log_level, "ge-run", err)) return 2;
  } catch (const po::error& e) {
    return usage(TerminalSafe(e.what()));
  }
  return std::nullopt;
}

// Every path the user gave is resolved before any plugin runs (the graph and
// its .npy inputs are read before the plugins load; the others now): a plugin
// calling os.chdir must not move where outputs are written or the registry
// cache and opp paths are read. The summary keeps the user's spelling.
void ResolvePaths(RunArgs& a) {
  a.output_dir_shown = a.output_dir;
  std::error_code ec;
  const stdfs::path cwd = stdfs::current_path(ec);
  auto resolve = [&](std::string& p) {
    if (!p.empty() && !ec && stdfs::path(p).is_relative()) p = (cwd / p).lexically_normal().string();
  };
  resolve(a.output_dir);
  resolve(a.registry_cache);
  // The platform folder of compile is read later, after plugins ran.
  if (const char* pd = std::getenv("GE_PLATFORM_DIR"); pd != nullptr && *pd != '\0') {
    std::string dir = pd;
    resolve(dir);
    ::setenv("GE_PLATFORM_DIR", dir.c_str(), 1);
  }
  if (!a.opp_path.empty()) {
    std::string joined;
    for (std::string e : plugin::SplitOppPath(a.opp_path)) {
      resolve(e);
      joined += (joined.empty() ? "" : ":") + e;
    }
    a.opp_path = joined;
  }
}

// Two graph outputs written to one file name: the message, or nullopt.
std::optional<std::string> OutputFileClash(const Graph& graph) {
  std::map<std::string, std::string> files;  // file name -> output reference
  for (const auto& r : graph.outputs) {
    auto [it, fresh] = files.emplace(OutputFileName(r), r.text);
    if (!fresh) {
      return TerminalSafe(graph.file) + ": outputs '" + TerminalSafe(it->second) + "' and '" + TerminalSafe(r.text) +
             "' would both be written to " + it->first;
    }
  }
  return std::nullopt;
}

host::HostOptions HostOptionsFor(const RunArgs& a, std::ostream& err) {
  host::HostOptions opts;
  opts.allow_insecure = a.allow_insecure;
  opts.default_isolation = a.isolation;
  opts.call_timeout_s = a.call_timeout_s;
  // The opp path entries, decided here (the host is told them): the run's
  // warnings tell an entry that does not exist from a plugin.
  const char* env_opp = std::getenv("ASCEND_CUSTOM_OPP_PATH");
  if (!a.opp_path.empty()) {
    opts.opp_paths = plugin::SplitOppPath(a.opp_path);
  } else if (env_opp != nullptr) {
    opts.opp_paths = plugin::SplitOppPath(env_opp);
  }
  opts.use_env_opp_path = false;
  if (a.skip_crashed) {
    std::string why;
    auto verdict = registry::CrashVerdicts(a.registry_cache, &why);
    if (!verdict) {
      err << "ge-run: warning: --skip-crashed: " << TerminalSafe(why)
          << "; no plugin is skipped (run ge-plugin-ls or the registry daemon to record crashes)\n";
    } else {
      opts.skip_plugin = verdict;
    }
  }
  return opts;
}

// One warning per plugin that did not load; returns their names (each
// once). An opp path entry (`entries`) that does not exist is no plugin: its
// warning says so and it is not among the names.
std::string WarnAboutPlugins(const std::vector<host::PluginReport>& reports, const std::vector<std::string>& entries,
                             std::ostream& err) {
  std::string failed;
  std::set<std::string> named;
  for (const auto& r : reports) {
    if (r.ok()) continue;
    if (r.status == plugin::PluginStatus::kMissing && std::find(entries.begin(), entries.end(), r.path) != entries.end()) {
      err << "ge-run: warning: " << TerminalSafe(r.error.OneLine()) << "\n";
      continue;
    }
    const std::string name = r.name.empty() ? r.path : r.name;
    err << "ge-run: warning: plugin " << TerminalSafe(name) << " not loaded (" << plugin::StatusName(r.status)
        << "): " << TerminalSafe(r.error.OneLine()) << "\n";
    if (named.insert(name).second) failed += (failed.empty() ? "" : ", ") + name;
  }
  return failed;
}

// An engine error on `err` (with the notes that help); ends the process at
// once after a kernel crash.
void ReportEngineError(const EngineError& e, const std::string& failed, bool no_plugins, std::ostream& out,
                       std::ostream& err) {
  err << "ge-run: error: " << TerminalSafe(e.what()) << "\n";
  if (e.fatal()) {
    // A crashed kernel may hold locks (the heap's, the loader's): end now,
    // without destructors; nothing was written.
    err << "ge-run: the process is ended without clean-up after the kernel crash\n";
    err.flush();
    out.flush();
    std::_Exit(1);
  }
  if (!e.details().empty() && e.details() != e.what()) err << TerminalSafe(e.details(), /*keep_newlines=*/true) << "\n";
  if (e.kind() == EngineError::Kind::kUnknownOpType) {
    if (!failed.empty()) {
      err << "ge-run: note: plugin(s) that failed to load (see the warnings above): " << TerminalSafe(failed) << "\n";
    } else if (no_plugins) {
      err << "ge-run: note: no plugin was found: give --opp-path or set ASCEND_CUSTOM_OPP_PATH\n";
    }
  }
}

// The run's summary (what --json prints), complete before any output file is
// written: nothing after the write can fail and leave files behind.
nlohmann::json Summary(const RunArgs& a, const Graph& graph, const CompiledGraph& compiled, const RunResult& result,
                       const std::vector<host::PluginReport>& reports, uint64_t python_calls) {
  nlohmann::json summary;
  summary["version"] = kVersion;  // of ge-run (share/cmake/ge_version.h.in)
  summary["graph"] = graph.name;
  summary["soc"] = a.soc;
  summary["options"] = compiled.options;
  summary["repeat"] = a.repeat;
  summary["seconds"] = result.seconds;
  summary["outputs"] = nlohmann::json::object();
  for (const auto& r : graph.outputs) {
    const Tensor& t = result.outputs.at(r.text);
    summary["outputs"][r.text] = {{"dtype", DataTypeName(t.GetDataType())},
                                  {"shape", ShapeJson(t.GetStorageShape())},
                                  {"file", (stdfs::path(a.output_dir_shown) / OutputFileName(r)).string()}};
  }
  summary["nodes"] = nlohmann::json::array();
  for (const auto& c : compiled.nodes) {
    summary["nodes"].push_back({{"name", c.stats.name},
                                {"op_type", c.stats.op_type},
                                {"source", c.stats.source},
                                {"python", c.stats.python},
                                {"calls", {{"infer_meta", c.stats.infer_meta_calls},
                                           {"compile", c.stats.compile_calls},
                                           {"declare_launch_args", c.stats.declare_calls},
                                           {"execute", c.stats.execute_calls}}},
                                {"kernel_launches", c.stats.kernel_launches},
                                {"mode", c.plan ? "task_plan" : "eager"},
                                {"execute_ms_mean", 1e3 * c.stats.execute_seconds / a.repeat}});
  }
  summary["python_calls"] = python_calls;
  summary["plugins"] = nlohmann::json::array();
  for (const auto& r : reports) {
    nlohmann::json p = plugin::ToJson(r, /*with_detail=*/false);
    p["ops"] = r.OpTypes();  // ge-run's summary lists op_types only
    nlohmann::json unprototyped = nlohmann::json::array();
    for (const auto& op : r.unprototyped) unprototyped.push_back(Utf8Text(op.op_type));
    p["unprototyped"] = std::move(unprototyped);
    summary["plugins"].push_back(std::move(p));
  }
  return summary;
}

void PrintSummary(const nlohmann::json& summary, const RunArgs& a, std::ostream& out) {
  if (a.json_out) {
    out << summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  out << "graph '" << summary["graph"].get<std::string>() << "' (soc " << a.soc << "): " << summary["nodes"].size()
      << " node(s), " << a.repeat << " run(s) in " << std::fixed << std::setprecision(3)
      << 1e3 * summary["seconds"].get<double>() << " ms, " << summary["python_calls"].get<uint64_t>()
      << " Python call(s)\n";
  for (const auto& n : summary["nodes"]) {
    out << "  " << std::left << std::setw(14) << n["name"].get<std::string>() << std::setw(22)
        << TerminalSafe(n["op_type"].get<std::string>()) + " " << (n["python"].get<bool>() ? "python " : "c++    ")
        << std::right << std::setw(10) << std::setprecision(4) << n["execute_ms_mean"].get<double>()
        << " ms/run  infer_meta " << n["calls"]["infer_meta"].get<uint64_t>() << "  compile "
        << n["calls"]["compile"].get<uint64_t>()
        << (n["mode"] == "task_plan"
                ? "  declare " + std::to_string(n["calls"]["declare_launch_args"].get<uint64_t>()) + "  launches " +
                      std::to_string(n["kernel_launches"].get<uint64_t>())
                : "  execute " + std::to_string(n["calls"]["execute"].get<uint64_t>()))
        << "\n";
  }
  for (const auto& [ref, o] : summary["outputs"].items()) {
    out << "  output " << TerminalSafe(ref) << ": " << o["dtype"].get<std::string>() << o["shape"].dump() << " -> "
        << TerminalSafe(o["file"].get<std::string>()) << "\n";
  }
}

// Loads the plugins, compiles and runs the graph, writes the outputs and
// prints the summary; the exit code.
int Run(const RunArgs& a, std::ostream& out, std::ostream& err, const std::function<void(int)>& before_teardown) {
  Graph graph = LoadGraph(a.graph_path);
  if (auto clash = OutputFileClash(graph)) {
    err << "ge-run: error: " << *clash << "\n";
    return 1;
  }
  OpRegistry registry;
  Status st = RegisterBuiltinOps(registry);
  if (!st.ok()) throw std::runtime_error(st.message());
  const host::HostOptions host_opts = HostOptionsFor(a, err);
  host::PluginHost plugin_host(host_opts, registry);
  // Destroyed before the host: the host's teardown (sub-interpreters ending,
  // their atexit handlers) and Python's finalization run after the caller's
  // before_teardown (ge-run's exit watchdog), with the status the run ends with.
  int exit_rc = 1;
  struct BeforeTeardown {
    const int& rc;
    const std::function<void(int)>& fn;
    ~BeforeTeardown() {
      if (fn) fn(rc);
    }
  } before_host_teardown{exit_rc, before_teardown};
  const auto& reports = plugin_host.LoadAll();
  const std::string failed = WarnAboutPlugins(reports, host_opts.opp_paths, err);
  nlohmann::json summary;
  {
    Engine engine(registry);
    CompiledGraph compiled;
    RunResult result;
    try {
      CompileOptions copts;
      copts.soc = a.soc;
      for (const auto& o : a.option_args) copts.options[o.substr(0, o.find('='))] = o.substr(o.find('=') + 1);
      compiled = engine.Compile(graph, copts);
      result = engine.Run(compiled, a.repeat);
    } catch (const EngineError& e) {
      ReportEngineError(e, failed, reports.empty(), out, err);
      return 1;
    }
    summary = Summary(a, graph, compiled, result, reports, plugin_host.PythonCalls());
    WriteOutputs(graph, result, a.output_dir);
  }
  PrintSummary(summary, a, out);
  out.flush();
  exit_rc = 0;
  return 0;
}

}  // namespace

int RunGeRun(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
             const std::function<void(int)>& before_teardown) {
  RunArgs args;
  if (std::optional<int> rc = ParseArgs(argc, argv, args, out, err)) return FinishOutput("ge-run", out, err, *rc);
  ResolvePaths(args);
  // A crashing kernel ends ge-run from the signal handler, with its node and
  // kernel named, before anything can deadlock on a lock the kernel held.
  SetKernelCrashExit("ge-run: error: ");
  // Any other fatal signal names the plugin being loaded or called first.
  InstallCrashReport("ge-run: error: ",
                     "ge-run: note: `ge-plugin-ls --rescan` records the crash in the registry; `ge-run --skip-crashed` "
                     "then skips that plugin until its files change");
  int rc = 1;
  try {
    rc = Run(args, out, err, before_teardown);
  } catch (const std::exception& e) {  // GraphError, NpyError, the rest: one message, exit 1
    err << "ge-run: error: " << TerminalSafe(e.what()) << "\n";
  }
  return FinishOutput("ge-run", out, err, rc);
}

void BoundTheExit(int rc) {
  std::thread([rc] {
    std::this_thread::sleep_for(std::chrono::seconds(kExitGraceS));
    static const char kMsg[] =
        "ge-run: warning: the exit did not finish in time (a plugin's clean-up at Python finalization?); "
        "ending without it\n";
    (void)!::write(STDERR_FILENO, kMsg, sizeof(kMsg) - 1);
    std::_Exit(rc);
  }).detach();
}

}  // namespace ge::tools
