// plugin_host.cc: discovery, loading, the Python op adapter, unloading.
#include "ge/host/plugin_host.h"

#include <boost/filesystem.hpp>
#include <boost/python.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>

#include "dispatch.h"
#include "errors.h"
#include "ge/crash_report.h"
#include "ge/log.h"
#include "ge/log_spdlog.h"
#include "ge/op/library_registrations.h"
#include "ge/plugin/op_library.h"
#include "ge/plugin/resolve.h"
#include "ge/text.h"
#include "interpreter.h"
#include "library_probe.h"
#include "load_contract.h"
#include "process_plugin.h"
#include "process_worker.h"
#include "py_ref.h"
#include "views.h"
#include "worker_access.h"

#ifndef GE_LIB_TO_PYTHON
#define GE_LIB_TO_PYTHON "ge-plugin/python"
#endif

namespace bp = boost::python;
namespace fs = boost::filesystem;

namespace ge::host {

namespace {

// One loaded plugin: its interpreter and identity. Destroying it ends a
// sub-interpreter (bounded; see Interpreter::End).
struct LoadedPlugin {
  std::string name;
  std::string path;
  std::shared_ptr<PythonRuntime> runtime;
  std::shared_ptr<Interpreter> interp;
  double join_timeout_s = kThreadJoinTimeoutS;
  ~LoadedPlugin() {
    if (interp && !interp->is_main()) interp->End(join_timeout_s);
  }
};

std::string ExeDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return fs::path(buf).parent_path().string();
}

std::string FindPythonDir(const HostOptions& opts) {
  if (!opts.python_dir.empty()) {
    boost::system::error_code ec;
    if (!fs::is_regular_file(fs::path(opts.python_dir) / "ge" / "__init__.py", ec)) {
      throw std::runtime_error("HostOptions::python_dir " + opts.python_dir + " does not hold the ge Python package");
    }
    return fs::canonical(opts.python_dir, ec).string();
  }
  std::vector<std::string> candidates;
  if (!opts.python_dir.empty()) candidates.push_back(opts.python_dir);
  if (const char* env = std::getenv("GE_PLUGIN_PYTHON_DIR")) candidates.push_back(env);
  const std::string libdir = HostLibraryDir();
  if (!libdir.empty()) {
    candidates.push_back((fs::path(libdir) / GE_LIB_TO_PYTHON).string());  // installed
    candidates.push_back((fs::path(libdir) / ".." / "python").string());   // build tree
  }
  const std::string exe = ExeDir();
  if (!exe.empty()) {
    candidates.push_back((fs::path(exe) / ".." / "python").string());
    candidates.push_back((fs::path(exe) / ".." / "lib" / "ge-plugin" / "python").string());
  }
  for (const auto& c : candidates) {
    boost::system::error_code ec;
    if (fs::is_regular_file(fs::path(c) / "ge" / "__init__.py", ec)) return fs::canonical(c, ec).string();
  }
  std::string tried;
  for (const auto& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
  throw std::runtime_error("cannot find the ge Python package (tried: " + tried +
                           "); set GE_PLUGIN_PYTHON_DIR or HostOptions::python_dir");
}


// A Python object kept by a long-lived adapter: a reference of its own,
// released with Reset() in its interpreter (py_ref.h, InterpreterRef).
py::InterpreterRef Keep(const bp::object& o) { return py::InterpreterRef::Borrow(o.ptr()); }

// Each plugin has its own interpreter and registrations (a plugin cannot see
// another's prototype), where GE imports every custom-op file into one
// interpreter: the fix when a prototype and its implementation were split
// over two plugins (share/docs/plugin-authors.md, "One plugin, one registry").
using plugin::kSplitAdvice;

// The op_types the pending Python exception says its plugin implemented
// before it failed (ge._entry's __ge_op_types__), leaving the exception
// pending for FetchPythonError. Under the GIL.
std::vector<std::string> PendingOpTypes() {
  std::vector<std::string> out;
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value != nullptr) {
    py::OwnedRef list = py::OwnedRef::Steal(PyObject_GetAttrString(value, "__ge_op_types__"));
    if (list && PyList_Check(list.get())) {
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.get()); ++i) {
        const char* s = PyUnicode_Check(PyList_GET_ITEM(list.get(), i)) ? PyUnicode_AsUTF8(PyList_GET_ITEM(list.get(), i))
                                                                         : nullptr;
        if (s != nullptr) out.emplace_back(s);
      }
    }
    PyErr_Clear();
  }
  PyErr_Restore(type, value, tb);
  return out;
}

// The version of the load contract between this host and ge._entry: what
// its functions take and return (share/docs/host-design.md, "The load
// contract"). Raised by one each time either side changes it; both must agree.
using py::kLoadContractVersion;  // bindings/native/load_contract.h

// The one module the host calls into (bindings/python/ge/_entry.py), once
// its LOAD_CONTRACT_VERSION is the one this host reads. Raises (a Python
// RuntimeError, so the plugin being loaded reports it) when the ge package
// comes from another build: "got version X, this host reads version Y".
bp::object Entry() {
  bp::object entry = bp::import("ge._entry");
  // Read with the C API, every failure kept inside: a version that is no int
  // (a str, a bool, an object whose __str__ or __getattr__ raises) or one
  // beyond long long is "another version", described, never a second error.
  PyObject* declared = PyObject_GetAttrString(entry.ptr(), "LOAD_CONTRACT_VERSION");
  bp::handle<> held(bp::allow_null(declared));
  long long version = -1;
  int overflow = 0;
  if (declared != nullptr && PyLong_CheckExact(declared)) version = PyLong_AsLongLongAndOverflow(declared, &overflow);
  PyErr_Clear();
  if (declared != nullptr && PyLong_CheckExact(declared) && overflow == 0 && version == kLoadContractVersion) return entry;
  std::string got = "none";
  if (declared != nullptr) {
    bp::handle<> repr(bp::allow_null(PyObject_Repr(declared)));
    const char* text = repr ? PyUnicode_AsUTF8(repr.get()) : nullptr;
    got = text != nullptr ? Abbreviate(TerminalSafe(text), 80) : std::string("an object without a repr");
    PyErr_Clear();
  }
  std::string file = "?";
  if (bp::handle<> f(bp::allow_null(PyObject_GetAttrString(entry.ptr(), "__file__"))); f) {
    if (const char* text = PyUnicode_Check(f.get()) ? PyUnicode_AsUTF8(f.get()) : nullptr) file = text;
  }
  PyErr_Clear();
  const std::string message = "the ge package's load contract (" + file + ", LOAD_CONTRACT_VERSION) is version " + got +
                              ", this host reads version " + std::to_string(kLoadContractVersion) +
                              ": the ge package and the host come from different builds; install them together "
                              "(or point GE_PLUGIN_PYTHON_DIR at the package built with this host)";
  bp::object text(bp::handle<>(PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "replace")));
  PyErr_SetObject(PyExc_RuntimeError, text.ptr());
  bp::throw_error_already_set();
  return entry;
}

// A path as Python spells it (os.fsdecode): POSIX paths are bytes, and a
// non-UTF-8 one must reach the plugin's import unchanged.
// The native object a ge._entry function returned (bindings/native/load_contract.h),
// owned with it; a Python TypeError naming the function when it is another type.
template <typename T>
std::shared_ptr<T> Contract(const bp::object& o, const char* function) {
  bp::extract<std::shared_ptr<T>> got(o);
  if (!got.check()) {
    PyErr_Format(PyExc_TypeError, "ge._entry.%s returned %s, not the load contract's object (load contract version %d)",
                 function, Py_TYPE(o.ptr())->tp_name, py::kLoadContractVersion);
    bp::throw_error_already_set();
  }
  return got();
}

bp::object PathObject(const std::string& path) {
  PyObject* o = py::FsPathObject(path);
  if (o == nullptr) bp::throw_error_already_set();
  return bp::object(bp::handle<>(o));
}

}  // namespace

// ---- the Python op adapter ---------------------------------------------------------------

// A Python implementation class seen through the C++ capability interfaces. It
// inherits every interface; GetCapabilities() reports what the class defines,
// so CustomOpCast refuses the others. A failed call stores its Status (the
// Python exception, plugin, file:line, traceback) in the context's error slot
// and returns GRAPH_FAILED; the engine reports that Status.
class PythonOpAdapter final : public CapabilityReportingOp,
                              public EagerExecuteOp,
                              public CompilableOp,
                              public AnnotatedArgsOp,
                              public InferMetaOp {
 public:
  PythonOpAdapter(std::shared_ptr<LoadedPlugin> plugin, std::shared_ptr<const OpSchema> schema, uint32_t caps,
                  std::string descriptor_key, py::InterpreterRef cls, py::InterpreterRef proto, py::InterpreterRef call_infer_meta,
                  py::InterpreterRef ctx_var, py::InterpreterRef compile_vars, py::InterpreterRef revalidate_compile,
                  py::InterpreterRef launch_var, py::ExecuteCall execute_call,
                  std::shared_ptr<std::atomic<uint64_t>> calls)
      : plugin_(std::move(plugin)),
        schema_(std::move(schema)),
        caps_(caps),
        descriptor_key_(std::move(descriptor_key)),
        cls_(std::move(cls)),
        proto_(std::move(proto)),
        call_infer_meta_(std::move(call_infer_meta)),
        ctx_var_(std::move(ctx_var)),
        compile_vars_(std::move(compile_vars)),
        revalidate_compile_(std::move(revalidate_compile)),
        launch_var_(std::move(launch_var)),
        execute_call_(execute_call),
        calls_(std::move(calls)) {
    for (std::size_t m = 0; m < std::size(kMethods); ++m) {
      crumbs_[m] = "calling " + std::string(kMethods[m]) + " of op_type '" + TerminalSafe(Abbreviate(schema_->op_type)) +
                   "' (plugin '" + plugin_->name + "', " + TerminalSafe(plugin_->path) + ")";
    }
    execute_site_ = py::CallSite{plugin_->name, plugin_->path, schema_->op_type, "execute"};
    execute_frame_.emplace(schema_);
  }

  ~PythonOpAdapter() override {
    InterpreterGuard guard(*plugin_->interp);
    for (py::InterpreterRef* h : {&cls_, &proto_, &call_infer_meta_, &ctx_var_, &compile_vars_, &revalidate_compile_, &launch_var_,
                        &instance_, &execute_, &compile_, &declare_}) {
      h->Reset();
    }
    if (execute_frame_) execute_frame_->Reset();
  }

  uint32_t GetCapabilities() const noexcept override { return caps_; }
  const OpSchema& GetSchema() const noexcept override { return *schema_; }

  graphStatus Execute(gert::EagerOpExecutionContext* ctx) override { return Report(*ctx, DoExecute(ctx)); }
  graphStatus Compile(gert::OpCompileContext* ctx) override { return Report(*ctx, DoCompile(ctx)); }
  graphStatus DeclareLaunchArgs(gert::AnnotatedArgsContext& ctx) override { return Report(ctx, DoDeclareLaunchArgs(ctx)); }
  graphStatus InferMeta(InferMetaContext* ctx) override { return Report(*ctx, DoInferMeta(ctx)); }

 private:
  static graphStatus Report(gert::ExtendedKernelContext& ctx, Status st) {
    if (st.ok()) return GRAPH_SUCCESS;
    ctx.SetError(std::move(st));
    return GRAPH_FAILED;
  }

  Status DoExecute(EagerOpExecutionContext* ctx) {
    if (!HasCapability(caps_, CustomOpCapability::kEagerExecute)) return Status::Error(descriptor_key_ + " has no execute");
    InterpreterGuard guard(*plugin_->interp);
    const py::CallSite& site = execute_site_;
    CrashBreadcrumb crumb(crumbs_[0].c_str());
    if (!execute_) {
      Status st = BindMethod("execute", execute_, site);
      if (!st.ok()) return st;
    }
    calls_->fetch_add(1, std::memory_order_relaxed);
    return py::InvokeExecute(execute_.get(), ctx_var_.get(), ctx, site, /*keep_python_error=*/false, &*execute_frame_,
                             execute_call_);
  }

  Status DoCompile(OpCompileContext* ctx) {
    if (!HasCapability(caps_, CustomOpCapability::kCompilable)) return Status::Error(descriptor_key_ + " has no compile");
    InterpreterGuard guard(*plugin_->interp);
    py::CallSite site{plugin_->name, plugin_->path, schema_->op_type, "compile"};
    CrashBreadcrumb crumb(crumbs_[1].c_str());
    if (!compile_) {
      Status st = BindMethod("compile", compile_, site);
      if (!st.ok()) return st;
    }
    calls_->fetch_add(1, std::memory_order_relaxed);
    PyObject* vars = compile_vars_.get();  // (compile ctx var, platform var)
    return py::InvokeCompile(compile_.get(), revalidate_compile_.get(), PyTuple_GET_ITEM(vars, 0),
                             PyTuple_GET_ITEM(vars, 1), ctx, site);
  }

  Status DoDeclareLaunchArgs(AnnotatedArgsContext& ctx) {
    if (!HasCapability(caps_, CustomOpCapability::kAnnotatedArgs)) {
      return Status::Error(descriptor_key_ + " has no declare_launch_args");
    }
    InterpreterGuard guard(*plugin_->interp);
    py::CallSite site{plugin_->name, plugin_->path, schema_->op_type, "declare_launch_args"};
    CrashBreadcrumb crumb(crumbs_[2].c_str());
    if (!declare_) {
      Status st = BindMethod("declare_launch_args", declare_, site);
      if (!st.ok()) return st;
    }
    calls_->fetch_add(1, std::memory_order_relaxed);
    return py::InvokeDeclareLaunchArgs(declare_.get(), launch_var_.get(), &ctx, site);
  }

  Status DoInferMeta(InferMetaContext* ctx) {
    InterpreterGuard guard(*plugin_->interp);
    py::CallSite site{plugin_->name, plugin_->path, schema_->op_type, "infer_meta"};
    CrashBreadcrumb crumb(crumbs_[3].c_str());
    calls_->fetch_add(1, std::memory_order_relaxed);
    return py::InvokeInferMeta(call_infer_meta_.get(), proto_.get(), ctx, site);
  }

  // The class is instantiated with no arguments the first time the host needs
  // it (share/docs/plugin-authors.md, "The implementation"); bound methods are cached (an attribute lookup costs
  // ~140 ns on the hot path otherwise).
  Status BindMethod(const char* name, py::InterpreterRef& slot, const py::CallSite& site) {
    try {
      if (!instance_) {
        bp::object cls(bp::handle<>(bp::borrowed(cls_.get())));
        instance_ = Keep(cls());
      }
      bp::object inst(bp::handle<>(bp::borrowed(instance_.get())));
      slot = Keep(inst.attr(name));
      return Status::Ok();
    } catch (const bp::error_already_set&) {
      ErrorInfo e = py::FetchPythonError(site.plugin, site.file, site.method);
      e.message = "cannot instantiate " + descriptor_key_ + ": " + e.message;
      return Status::Error(e);
    }
  }

  std::shared_ptr<LoadedPlugin> plugin_;
  std::shared_ptr<const OpSchema> schema_;
  uint32_t caps_;
  std::string descriptor_key_;
  py::InterpreterRef cls_, proto_, call_infer_meta_, ctx_var_, compile_vars_, revalidate_compile_, launch_var_, instance_,
      execute_, compile_, declare_;
  // How execute is called: what the class is decided it at load
  // (share/docs/plugin-authors.md, "Plugins from earlier GE releases").
  py::ExecuteCall execute_call_;
  std::shared_ptr<std::atomic<uint64_t>> calls_;
  // What execute keeps between calls (bindings/native/dispatch.h); its site, made once.
  std::optional<py::ExecuteFrame> execute_frame_;
  py::CallSite execute_site_;
  // What a fatal signal during each callback names (ge/crash_report.h).
  static constexpr const char* kMethods[] = {"execute", "compile", "declare_launch_args", "infer_meta"};
  std::string crumbs_[std::size(kMethods)];
};

// ---- PluginHost ----------------------------------------------------------------------------


struct PluginHost::Impl {
  HostOptions opts;
  OpRegistry& registry;
  std::shared_ptr<PythonRuntime> runtime;
  std::vector<PluginReport> reports;
  std::set<std::string> loaded_paths;                      // plugin paths tried (ok or not)
  // Plugins not loaded whose op_types carry a note in the registry (NoteNotLoaded).
  std::vector<std::string> noted_sources;
  std::set<std::pair<std::string, std::string>> problems_reported;  // (path, error) of discovery problems
  // Python adapters and process proxies: strong refs, released outside any lock.
  std::vector<std::shared_ptr<CapabilityReportingOp>> adapters;
  std::vector<std::string> sources;                        // registered plugin and op library paths
  std::set<std::string> library_sources;                   // paths of the op libraries loaded (ok)
  // The C++ prototypes (REG_OP) of the op libraries loaded so far, by op_type:
  // the first in path order wins (share/docs/op-packages.md).
  struct CppPrototype {
    std::shared_ptr<const OpSchema> schema;
    std::string library;  // path of the op library that registered it
    // IMPL_OP infer functions of the op_type (any loaded library), null when none.
    InferShapeKernelFunc infer_shape = nullptr;
    InferDataTypeKernelFunc infer_datatype = nullptr;
    bool given = false;  // from HostOptions::prototype_libraries: a library loaded for real takes precedence
  };
  std::map<std::string, CppPrototype> cpp_protos;
  // The prototypes of op libraries that failed: op_type -> (library, its one-line error).
  std::map<std::string, std::pair<std::string, std::string>> failed_protos;
  bool prototype_libraries_loaded = false;  // HostOptions::prototype_libraries
  bool probe_warned = false;  // the "loaded without first loading each alone" warning, once
  // Main-interpreter plugins loaded: (module name, (op_type, descriptor key)...).
  // The main interpreter outlives the host, so Unload removes their modules and
  // registrations from it; otherwise a later host would re-import nothing.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> main_loaded;
  std::shared_ptr<std::atomic<uint64_t>> calls = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<spdlog::logger> log = Logger("host");
  // The current directory when the host was made: relative opp paths are
  // resolved against it, so a plugin calling os.chdir changes nothing.
  std::string base_dir;
  // This host runs inside a plugin worker (process_worker.h): isolation
  // "process" loads in this process's main interpreter.
  bool in_worker = false;

  Impl(HostOptions o, OpRegistry& r) : opts(std::move(o)), registry(r) {
    boost::system::error_code cec;
    base_dir = fs::current_path(cec).string();
    if (opts.default_isolation != "subinterpreter" && opts.default_isolation != "main" &&
        opts.default_isolation != "process") {
      throw std::invalid_argument(
          "HostOptions::default_isolation must be \"subinterpreter\", \"main\" or \"process\", got \"" +
          opts.default_isolation + "\"");
    }
    if (const std::string problem = CallTimeoutProblem(opts.call_timeout_s); !problem.empty()) {
      throw std::invalid_argument("HostOptions::call_timeout_s " + problem);
    }
    if (!opts.log_level.empty()) {
      auto level = ParseLogLevel(opts.log_level);
      if (!level) throw std::invalid_argument("HostOptions::log_level: unknown level \"" + opts.log_level + "\"");
      SetLogLevel(*level);
    }
    runtime = PythonRuntime::Get(FindPythonDir(opts));
    // Leaf lock policy: the sink runs with the GIL held and only takes
    // spdlog's sink mutex, whose holders never wait for the GIL.
    py::SetLogSink([](const std::string& plugin, bool is_stderr, const std::string& line) {
      Logger("plugin")->log(is_stderr ? spdlog::level::warn : spdlog::level::info, "[{}] {}", plugin, line);
    });
  }

  plugin::DiscoverOptions Discovering() const {
    plugin::DiscoverOptions d;
    d.uid = ::geteuid();
    return d;
  }

  // One plugin on its way in: its record and, once imported and validated,
  // what Commit registers. Ops are registered in path order after a whole
  // batch is loaded (main-interpreter plugins load first, but the first in
  // path order must win a conflict).
  struct Loading {
    plugin::Candidate plugin;
    PluginReport report;
    bool go_on = true;  // false: the report is final (an error, a skip)
    bool sub = true;
    bool process = false;  // isolation "process": the plugin lives in a worker process
    std::vector<std::shared_ptr<CapabilityReportingOp>> made;
    std::vector<std::pair<std::string, std::string>> keys;  // (op_type, descriptor key)
    std::vector<std::string> bound;  // per adapter: the op library whose C++ prototype it binds to, or ""
    // Per adapter: the IMPL_OP infer functions of that C++ prototype (null when none or not bound).
    std::vector<std::pair<InferShapeKernelFunc, InferDataTypeKernelFunc>> bound_infer;
    std::vector<std::string> own_protos;  // op_types of the prototypes the plugin registered itself
    // Per adapter (as `made`; in-process plugins): the release whose rules its
    // class followed and what the newest GE's rules refuse ("" when nothing).
    struct Rules {
      std::string rules, newest_refusal;
    };
    std::vector<Rules> rules;
    std::vector<plugin::OpRecord> worker_ops;  // isolation "process": the ops as its worker recorded them
    // Not loaded: the op_types it implements (as far as it got), each noted
    // in the registry as "implemented by this plugin, which was not loaded".
    std::vector<std::string> attempted;
  };

  // The record of each op a loading plugin makes: its capabilities (with
  // infer_meta when a bound C++ prototype has IMPL_OP functions) and the op
  // library whose prototype it binds to.
  static std::vector<plugin::OpRecord> OpRecordsOf(const Loading& l) {
    std::vector<plugin::OpRecord> ops;
    for (std::size_t i = 0; i < l.made.size(); ++i) {
      plugin::OpRecord op;
      op.op_type = l.made[i]->GetSchema().op_type;
      uint32_t caps = l.made[i]->GetCapabilities();
      if (i < l.bound_infer.size() && l.bound_infer[i].first != nullptr) caps = caps | CustomOpCapability::kInferMeta;
      op.capabilities = CapabilityNames(caps);
      if (i < l.bound.size()) op.prototype_library = l.bound[i];
      if (i < l.rules.size()) {
        op.rules = l.rules[i].rules;
        op.newest_refusal = l.rules[i].newest_refusal;
      } else if (l.process) {
        // A process plugin's rules were decided in its worker, whose record says them.
        for (const auto& w : l.worker_ops) {
          if (w.op_type != op.op_type) continue;
          op.rules = w.rules;
          op.newest_refusal = w.newest_refusal;
        }
      }
      ops.push_back(std::move(op));
    }
    return ops;
  }

  void Fail(Loading& l, const ErrorInfo& e, plugin::ErrorKind kind,
            plugin::PluginStatus status = plugin::PluginStatus::kError) {
    PluginReport& r = l.report;
    r.status = status;
    r.error.kind = plugin::KindFromPython(e.kind, kind);
    r.error.message = e.message;
    // Every failure names the plugin's file, also when no frame of the plugin
    // is on the traceback (signature validation, a decorator's check).
    if (!r.path.empty() && r.error.message.find(r.path) == std::string::npos) {
      r.error.message = r.path + ": " + r.error.message;
    }
    r.error.file = e.location_file;
    r.error.line = e.location_line;
    r.error.traceback = e.traceback;
    r.error.exception = e.exception_type;
    r.error.op_type = e.op_type;
    r.unprototyped.clear();  // a failed plugin registers nothing (all or nothing)
    l.go_on = false;
  }

  void Stop(Loading& l, plugin::PluginStatus status, plugin::ErrorKind kind, std::string message) {
    l.report.status = status;
    l.report.error = {};
    l.report.error.kind = kind;
    l.report.error.message = std::move(message);
    l.go_on = false;
  }

  // `l` loses op_type `op_type` to `other` (a path, or "builtin") by `rule`:
  // a conflict, the rule kept typed beside its words.
  void StopConflict(Loading& l, const std::string& op_type, const std::string& other, plugin::ConflictRule rule) {
    Stop(l, plugin::PluginStatus::kConflict, plugin::ErrorKind::kConflict,
         plugin::ConflictMessage(op_type, l.plugin.path, other, rule));
    l.report.error.op_type = op_type;
    l.report.error.rule = rule;
    l.report.conflicts_with = other;
  }

  // Safety verdict, skip verdict, pyproject.toml: all before any plugin code runs.
  Loading Admit(const plugin::Candidate& c) {
    Loading l;
    l.plugin = c;
    l.report.name = c.name;
    l.report.path = c.path;
    l.report.isolation = "subinterpreter";
    if (!c.insecure.empty() && !opts.allow_insecure) {
      Stop(l, plugin::PluginStatus::kInsecure, plugin::ErrorKind::kInsecure, plugin::InsecureMessage(c.insecure));
      return l;
    }
    if (opts.skip_plugin) {
      if (std::string why = opts.skip_plugin(c); !why.empty()) {
        Stop(l, plugin::PluginStatus::kSkipped, plugin::ErrorKind::kSkipped, c.path + ": " + why);
        return l;
      }
    }
    InterpreterGuard guard(*runtime->Main());
    try {
      bp::object entry = Entry();
      entry.attr("check_name")(c.name, PathObject(c.path));
      bp::dict md = bp::extract<bp::dict>(entry.attr("read_metadata")(PathObject(c.path), c.is_package));
      l.report.version = bp::extract<std::string>(md["version"]);
      l.report.description = bp::extract<std::string>(md["description"]);
      l.report.isolation = bp::extract<std::string>(md["isolation"]);
      if (!bp::extract<bool>(md["isolation_set"])) l.report.isolation = opts.default_isolation;
    } catch (const bp::error_already_set&) {
      Fail(l, py::FetchPythonError(c.name, c.path, "pyproject.toml"), plugin::ErrorKind::kMetadata);
      return l;
    }
    l.process = l.report.isolation == "process" && !in_worker;
    l.sub = l.report.isolation == "subinterpreter";
    return l;
  }

  // Imports the plugin in its interpreter and binds an adapter per
  // implementation; on any failure the plugin's registrations are undone (in
  // Python) and what was created here is dropped when `l` is.
  void Import(Loading& l) {
    if (l.process) return ImportInWorker(l);
    const plugin::Candidate& c = l.plugin;
    const std::string crumb_text = "loading plugin '" + TerminalSafe(c.name) + "' (" + TerminalSafe(c.path) + ")";
    CrashBreadcrumb crumb(crumb_text.c_str(), CrashBreadcrumb::Phase::kLoading);
    auto loaded = std::make_shared<LoadedPlugin>();
    loaded->name = c.name;
    loaded->path = c.path;
    loaded->runtime = runtime;
    loaded->join_timeout_s = opts.thread_join_timeout_s;
    try {
      loaded->interp = l.sub ? Interpreter::NewSub(runtime, c.name) : runtime->Main();
    } catch (const std::exception& e) {
      Stop(l, plugin::PluginStatus::kError, plugin::ErrorKind::kImport, e.what());
      return;
    }
    InterpreterGuard guard(*loaded->interp);
    bp::object entry, before;
    try {
      entry = Entry();
      bp::dict imported = bp::extract<bp::dict>(entry.attr("import_plugin")(c.name, PathObject(c.path), c.is_package, l.sub));
      // Without pyproject.toml metadata: the module's __version__ and the
      // first line of its docstring (what ge-plugin-ls shows too).
      if (l.report.version.empty()) l.report.version = bp::extract<std::string>(imported["version"]);
      if (l.report.description.empty()) l.report.description = bp::extract<std::string>(imported["description"]);
      before = imported["before"];
    } catch (const bp::error_already_set&) {
      l.attempted = PendingOpTypes();
      Fail(l, py::FetchPythonError(c.name, c.path, "import"), plugin::ErrorKind::kImport);
      return;
    }
    try {
      // The C++ prototypes, as this interpreter's own dicts: an implementation
      // without a Python prototype binds to the one of its op_type.
      bp::dict library_irs;
      for (const auto& [op_type, proto] : cpp_protos) library_irs[op_type] = py::SchemaToDict(*proto.schema);
      bp::dict failed_libraries;
      for (const auto& [op_type, lib] : failed_protos) failed_libraries[op_type] = bp::make_tuple(lib.first, lib.second);
      bp::object collected_obj = entry.attr("collect")(c.name, before, l.sub, library_irs, failed_libraries);
      const std::shared_ptr<py::CollectedPlugin> collected = Contract<py::CollectedPlugin>(collected_obj, "collect");
      for (const std::string& op_type : collected->protos) {
        l.own_protos.push_back(op_type);
        auto cpp = cpp_protos.find(op_type);
        if (cpp == cpp_protos.end()) continue;
        // GE's rule: a Python prototype replaces a C++ one of the same
        // op_type, except that of a C++ custom op, which keeps its own: the
        // resolver tells the two apart over the records and the verdict is
        // logged then (ResolveBatch).
        l.report.warnings.push_back(plugin::PrototypeReplaced(op_type, c.name, c.path, cpp->second.library));
      }
      bp::object shared_obj = entry.attr("adapter_objects")();
      const std::shared_ptr<py::AdapterObjects> shared = Contract<py::AdapterObjects>(shared_obj, "adapter_objects");
      for (const std::shared_ptr<py::CollectedImpl>& impl_p : collected->impls) {
        const py::CollectedImpl& impl = *impl_p;
        const std::string& op_type = impl.op_type;
        const std::string& key = impl.descriptor_key;
        const bool on_library = impl.library;
        const std::string& rules = impl.rules;
        const std::optional<py::ExecuteCall> call = py::ParseExecuteCall(impl.call);
        if (!call) throw std::logic_error("ge._entry.collect gave execute call form '" + impl.call + "'");
        for (const std::string& said : impl.warnings) {
          plugin::Diagnostic w = plugin::ReleaseRules(op_type, c.path, said);
          log->warn("{}", TerminalSafe(plugin::Text(w)));
          l.report.warnings.push_back(std::move(w));
        }
        const std::string& newest_refusal = impl.newest_refusal;
        if (rules == "newest" && !newest_refusal.empty()) {
          // Loads here (upstream's own earlier example does), refused by the
          // newest GE: logged; the record keeps the refusal (ge-plugin-ls --check).
          plugin::OpRecord said;
          said.op_type = op_type;
          said.rules = rules;
          said.newest_refusal = newest_refusal;
          log->warn("{}: {}", TerminalSafe(c.path), TerminalSafe(plugin::NewestRefusalNote(said)));
        }
        if (impl.ir.is_none()) {
          // A legacy execute registered without a prototype: nothing a node
          // can run until one is registered, which the node's error says (Commit).
          plugin::OpRecord op;
          op.op_type = op_type;
          op.capabilities = {"eager_execute"};
          op.rules = rules;
          op.newest_refusal = newest_refusal;
          l.report.unprototyped.push_back(std::move(op));  // logged when the plugin is registered (Commit)
          l.keys.emplace_back(op_type, key);  // forgotten with the plugin (main interpreter)
          continue;
        }
        std::shared_ptr<const OpSchema> schema;
        uint32_t mask = static_cast<uint32_t>(CustomOpCapability::kInferMeta);
        if (on_library) {
          // Bound to a C++ prototype: its schema as the library registered it;
          // infer_meta is not Python's but the prototype's IMPL_OP functions (if any).
          const CppPrototype& cpp = cpp_protos.at(op_type);
          schema = cpp.schema;
          mask = 0;
          l.bound.push_back(cpp.library);
          l.bound_infer.emplace_back(cpp.infer_shape, cpp.infer_datatype);
        } else {
          schema = py::SchemaFromDict(impl.ir);
          l.bound.emplace_back();
          l.bound_infer.emplace_back(nullptr, nullptr);
        }
        for (const std::string& itf : impl.interfaces) {
          if (itf == "eager_execute") mask |= static_cast<uint32_t>(CustomOpCapability::kEagerExecute);
          if (itf == "compilable") mask |= static_cast<uint32_t>(CustomOpCapability::kCompilable);
          if (itf == "annotated_args") mask |= static_cast<uint32_t>(CustomOpCapability::kAnnotatedArgs);
        }
        l.made.push_back(std::make_shared<PythonOpAdapter>(
            loaded, schema, mask, key, Keep(impl.cls), Keep(impl.proto), Keep(shared->call_infer_meta),
            Keep(shared->execute_ctx), Keep(shared->compile_vars), Keep(impl.revalidate), Keep(shared->launch_ctx), *call,
            calls));
        l.rules.push_back({rules, newest_refusal});
        l.keys.emplace_back(op_type, key);
      }
    } catch (const bp::error_already_set&) {
      l.attempted = PendingOpTypes();
      Fail(l, py::FetchPythonError(c.name, c.path, "validation"), plugin::ErrorKind::kValidation);
      return;
    }
    // An op_type registered by no plugin or op library of this host (a
    // built-in op, the engine's own) cannot be replaced: a conflict naming
    // both, and the plugin registers nothing. Between plugins and libraries
    // the resolver decides (LoadBatch). (The registry lock is a leaf lock:
    // its holders never call Python.)
    for (const auto& a : l.made) {
      if (auto existing = ForeignRegistration(a->GetSchema().op_type)) {
        StopConflict(l, a->GetSchema().op_type, existing->source, ConflictRule(existing->source));
        // The ops it would have registered (as the registry lists them).
        l.report.ops = OpRecordsOf(l);
        try {
          entry.attr("abandon")(c.name, before, l.sub);
        } catch (const bp::error_already_set&) {
          PyErr_Clear();
        }
        return;
      }
    }
  }

  // Isolation "process": a worker process loads the plugin with this same
  // code (isolation "main" there) and reports it; each of its ops gets a
  // proxy here with the op's schema and capability mask.
  void ImportInWorker(Loading& l) {
    const plugin::Candidate& c = l.plugin;
    ProcessPluginConfig cfg;
    cfg.name = c.name;
    cfg.path = c.path;
    cfg.python_dir = runtime->PackageDir();
    // The level in effect here (a tool's --log-level sets it process-wide and
    // leaves HostOptions::log_level empty), so that the worker's log lines,
    // a plugin's prints among them, follow the engine's.
    cfg.log_level = opts.log_level.empty() ? LogLevelName(CurrentLogLevel()) : opts.log_level;
    cfg.join_timeout_s = opts.thread_join_timeout_s;
    cfg.call_timeout_s = opts.call_timeout_s;
    std::set<std::string> libs;
    for (const auto& [op_type, proto] : cpp_protos) libs.insert(proto.library);
    cfg.prototype_libraries.assign(libs.begin(), libs.end());
    std::set<std::pair<std::string, std::string>> failed;
    for (const auto& [op_type, lib] : failed_protos) failed.insert(lib);
    cfg.failed_libraries.assign(failed.begin(), failed.end());
    ProcessPlugin::Loaded loaded;
    auto worker = std::make_shared<ProcessPlugin>(cfg, &loaded);
    PluginReport& r = l.report;
    const PluginReport& w = loaded.report;
    if (r.version.empty()) r.version = w.version;
    if (r.description.empty()) r.description = w.description;
    r.warnings.insert(r.warnings.end(), w.warnings.begin(), w.warnings.end());
    r.prototypes = w.prototypes;  // those it does not implement (UnimplementedPrototypes, in the worker)
    r.unprototyped = w.unprototyped;
    l.worker_ops = w.ops;
    if (!w.ok()) {
      r.status = w.status;
      r.error = w.error;
      r.ops = w.ops;
      r.conflicts_with = w.conflicts_with;
      l.go_on = false;
      return;
    }
    for (const ProcessOpInfo& info : loaded.ops) {
      std::string library;
      for (const auto& rec : w.ops) {
        if (rec.op_type == info.op_type) library = rec.prototype_library;
      }
      auto cpp = cpp_protos.find(info.op_type);
      if (!library.empty() && cpp != cpp_protos.end()) {
        l.bound.push_back(library);
        l.bound_infer.emplace_back(cpp->second.infer_shape, cpp->second.infer_datatype);
      } else {
        l.bound.push_back(library);
        l.bound_infer.emplace_back(nullptr, nullptr);
      }
      l.made.push_back(std::make_shared<ProcessOpProxy>(worker, info, calls));
    }
    for (const auto& a : l.made) {
      if (auto existing = ForeignRegistration(a->GetSchema().op_type)) {
        StopConflict(l, a->GetSchema().op_type, existing->source, ConflictRule(existing->source));
        r.ops = OpRecordsOf(l);
        for (const auto& op : r.ops) l.attempted.push_back(op.op_type);
        l.made.clear();  // the last proxy ends the worker
        return;
      }
    }
  }

  // Why the op already registered (from `existing`) wins over a Python
  // plugin's (or, with `library`, over a later op library's).
  plugin::ConflictRule ConflictRule(const std::string& existing, bool library = false) const {
    if (existing == "builtin") return plugin::ConflictRule::kBuiltin;
    if (library) return plugin::ConflictRule::kFirstLibrary;
    if (library_sources.count(existing)) return plugin::ConflictRule::kLibraryOverPython;
    return plugin::ConflictRule::kPathOrder;
  }

  // Removes a main-interpreter plugin's modules and registrations from the
  // main interpreter (which outlives the host).
  void ForgetMain(const std::string& name, const std::vector<std::pair<std::string, std::string>>& keys) {
    InterpreterGuard guard(*runtime->Main());
    try {
      bp::list pairs;
      for (const auto& [op_type, key] : keys) pairs.append(bp::make_tuple(op_type, key));
      Entry().attr("forget")(name, pairs);
    } catch (const bp::error_already_set&) {
      log->warn("cannot forget main-interpreter plugin '{}': {}", name, py::FetchPythonError(name, "", "unload").message);
    }
  }

  // The registration of `op_type` when neither a plugin nor an op library of
  // this host made it (a built-in op, one the engine registered itself): the
  // records know nothing of it, so the resolver cannot decide it.
  std::optional<OpRegistration> ForeignRegistration(const std::string& op_type) const {
    auto existing = registry.Find(op_type);
    if (!existing || std::find(sources.begin(), sources.end(), existing->source) != sources.end()) return std::nullopt;
    return existing;
  }

  // The records of what this host has registered: earlier batches' and
  // `libraries` (this batch's op libraries), those that are ok and still
  // registered (not unloaded since).
  std::vector<plugin::PluginRecord> RegisteredRecords(const std::vector<PluginReport>& libraries) const {
    std::vector<plugin::PluginRecord> view;
    const std::set<std::string> registered(sources.begin(), sources.end());
    for (const std::vector<PluginReport>* list : {&reports, &libraries}) {
      for (const auto& r : *list) {
        if (r.ok() && registered.count(r.path)) view.push_back(r);
      }
    }
    return view;
  }

  // The op_types a loaded plugin prototypes itself without implementing
  // them (PluginRecord::prototypes). A process plugin's were collected in
  // its worker, whose record lists them.
  static std::vector<std::string> UnimplementedPrototypes(const Loading& l) {
    if (l.process) return l.report.prototypes;
    std::set<std::string> implemented;
    for (const auto& k : l.keys) implemented.insert(k.first);
    std::set<std::string> out;
    for (const auto& op_type : l.own_protos) {
      if (!implemented.count(op_type)) out.insert(op_type);
    }
    return {out.begin(), out.end()};
  }

  // What the one resolver (ge/plugin/resolve.h) decides about the batch,
  // over the records of what this host registered so far (op libraries
  // first, then plugins, path order within each) and of the batch's
  // plugins: a plugin that loses an op_type (one it implements, or one its
  // legacy execute takes without a prototype) is a conflict naming the
  // winner and its rule, and registers nothing; a Python prototype of an
  // op_type an op library implements as a C++ custom op is not used (else
  // it replaces the library's), which is logged here.
  void ResolveBatch(std::vector<Loading>& batch, const std::vector<PluginReport>& libraries) {
    std::vector<plugin::PluginRecord> view = RegisteredRecords(libraries);
    const std::size_t first = view.size();
    for (auto& l : batch) {
      if (!l.go_on) {
        view.push_back(l.report);
        continue;
      }
      l.report.prototypes = UnimplementedPrototypes(l);
      plugin::PluginRecord r;
      r.name = l.plugin.name;
      r.path = l.plugin.path;
      r.status = plugin::PluginStatus::kOk;
      r.ops = OpRecordsOf(l);
      r.unprototyped = l.report.unprototyped;
      r.prototypes = l.report.prototypes;
      r.warnings = l.report.warnings;
      view.push_back(std::move(r));
    }
    view = plugin::Resolve(std::move(view));
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const plugin::PluginRecord& verdict = view[first + i];
      Loading& l = batch[i];
      l.report.warnings = verdict.warnings;
      for (const auto& w : l.report.warnings) {
        if (w.kind != plugin::DiagnosticKind::kPrototypeReplaced && w.kind != plugin::DiagnosticKind::kPrototypeUnused) {
          continue;
        }
        // (debug inside a worker: the engine, which resolves it too, says it.)
        log->log(in_worker ? spdlog::level::debug : spdlog::level::warn, "{}", TerminalSafe(plugin::Text(w)));
      }
      if (!l.go_on || verdict.status != plugin::PluginStatus::kConflict) continue;
      StopConflict(l, verdict.error.op_type, verdict.conflicts_with, verdict.error.rule);
      l.report.ops = OpRecordsOf(l);
      NoteAttempted(l);
      l.made.clear();  // releases the adapters (each in its interpreter), then the sub-interpreter or worker
      if (!l.sub && !l.process) ForgetMain(l.plugin.name, l.keys);
    }
  }

  // Registers a loaded plugin's ops, all or nothing (outside any interpreter:
  // the registry lock is taken here); ResolveBatch has decided its op_types.
  // Every op_type `l` would have provided, for the note on a plugin not loaded.
  void NoteAttempted(Loading& l) {
    for (const auto& m : l.made) l.attempted.push_back(m->GetSchema().op_type);
    for (const auto& op : l.report.unprototyped) l.attempted.push_back(op.op_type);
  }

  void Commit(Loading& l) {
    PluginReport& r = l.report;
    std::vector<std::string> done;
    for (std::size_t i = 0; i < l.made.size(); ++i) {
      const auto& a = l.made[i];
      OpRegistration reg;
      reg.op_type = a->GetSchema().op_type;
      reg.schema = std::shared_ptr<const OpSchema>(a, &a->GetSchema());
      reg.capabilities = a->GetCapabilities();
      if (i < l.bound_infer.size()) std::tie(reg.infer_shape, reg.infer_datatype) = l.bound_infer[i];
      reg.source = l.plugin.path;
      reg.plugin = l.plugin.name;
      std::weak_ptr<CapabilityReportingOp> weak = a;
      reg.creator = [weak]() -> std::shared_ptr<BaseCustomOp> { return weak.lock(); };
      const std::string op_type = reg.op_type;
      Status st = registry.Register(std::move(reg));
      if (!st.ok()) {
        for (const auto& op : done) registry.Unregister(op);
        // Registered meanwhile by someone no record knows (the engine itself).
        const auto existing = registry.Find(op_type);
        const std::string other = existing ? existing->source : std::string("builtin");
        StopConflict(l, op_type, other, ConflictRule(other));
        NoteAttempted(l);
        l.made.clear();  // releases the adapters (each in its interpreter) and then the sub-interpreter
        if (!l.sub && !l.process) ForgetMain(l.plugin.name, l.keys);
        return;  // LoadBatch logs it
      }
      done.push_back(a->GetSchema().op_type);
    }
    r.status = plugin::PluginStatus::kOk;
    r.ops = OpRecordsOf(l);
    sources.push_back(l.plugin.path);
    if (!l.sub && !l.process) main_loaded.emplace_back(l.plugin.name, l.keys);
    adapters.insert(adapters.end(), l.made.begin(), l.made.end());
    l.made.clear();
    // Inside a worker the engine logs the load (as "process"); the worker's
    // own line says where it is, not only the main interpreter it uses there.
    // (debug there: the engine's own line follows at info.)
    log->log(in_worker ? spdlog::level::debug : spdlog::level::info, "plugin '{}' loaded from {} ({}{}): {} op(s)", r.name,
             r.path, r.isolation, in_worker ? ", in its worker process" : "", done.size());
  }

  // Loads a batch of discovered plugins: main-interpreter plugins first (an
  // extension module such as numpy must be loaded by the main interpreter
  // before any sub-interpreter exists; share/docs/host-design.md,
  // "Interpreters"), then the others; ops are then registered in path order,
  // so the first plugin in path order wins a conflict whatever its isolation.
  std::vector<PluginReport> LoadBatch(const std::vector<plugin::Candidate>& found) {
    LoadPrototypeLibraries();
    // Op libraries first, so that their prototypes are there for the Python
    // plugins and their custom ops are registered before any Python op
    // (share/docs/op-packages.md); reports keep path order within each kind.
    std::vector<plugin::Candidate> libraries;
    for (const auto& c : found) {
      if (c.is_op_library && loaded_paths.insert(c.path).second) libraries.push_back(c);
    }
    std::vector<PluginReport> out = LoadLibraries(libraries);
    std::vector<Loading> batch;
    for (const auto& c : found) {
      if (c.is_op_library) continue;
      if (!loaded_paths.insert(c.path).second) continue;  // loading again is idempotent
      batch.push_back(Admit(c));
    }
    for (int pass = 0; pass < 2; ++pass) {
      for (auto& l : batch) {
        if (l.go_on && ((l.sub || l.process) == (pass == 1))) Import(l);
      }
    }
    ResolveBatch(batch, out);
    for (auto& l : batch) {
      if (l.go_on) Commit(l);
    }
    NoteUnserved(batch, out);
    NoteSplits(batch, out);
    for (auto& l : batch) {
      if (!l.go_on) {
        NoteNotLoaded(l);
        log->info("plugin '{}' ({}) not loaded: {}", l.report.name, l.report.path, l.report.error.OneLine());
      }
      out.push_back(l.report);
    }
    return out;
  }

  // A plugin that was not loaded. When it failed with "canonical IR not
  // found" for an op_type another loaded plugin prototypes (the two halves
  // split over two plugins, which do not see each other's registrations),
  // its error says so. Each op_type it implements (as far as its load got)
  // is noted in the registry, so that a node of one is told which plugin
  // would have served it and why it did not (over a prototype-only plugin's
  // note: the split advice would mislead).
  void NoteNotLoaded(Loading& l) {
    std::string split;  // NoteSplits' note, when there is one
    for (const auto& n : l.report.error.notes) {
      if (n.kind == plugin::DiagnosticKind::kSplitPrototype) split = plugin::Text(n);
    }
    if (l.attempted.empty()) return;
    const std::string why = "plugin '" + l.plugin.name + "' (" + l.plugin.path + "), which implements it, was not loaded" +
                            (split.empty() ? " (" + std::string(plugin::StatusName(l.report.status)) +
                                                 "): " + Abbreviate(l.report.error.OneLine(), 400)
                                           : ": " + split);
    for (const auto& op_type : l.attempted) registry.NoteUnimplemented(op_type, why, l.plugin.path, /*overrides=*/true);
    noted_sources.push_back(l.plugin.path);
  }

  // The registry's notes on op_types no node can run, decided by the one
  // resolver (plugin::UnservedNotes) over the records of what is registered:
  // a legacy execute without a prototype (the two halves of a split when
  // other plugins register it: share/docs/plugin-authors.md, "One plugin,
  // one registry"), a prototype no loaded plugin implements. The engine's
  // "unknown op_type" says them; a legacy op of this batch is logged too
  // (the record lists it under `unprototyped`).
  void NoteUnserved(const std::vector<Loading>& batch, const std::vector<PluginReport>& libraries) {
    std::vector<plugin::PluginRecord> view = RegisteredRecords(libraries);
    std::set<std::string> committed;
    for (const auto& l : batch) {
      if (l.go_on) {
        view.push_back(l.report);
        committed.insert(l.plugin.path);
      }
    }
    std::set<std::string> library_prototypes;
    for (const auto& [op_type, proto] : cpp_protos) library_prototypes.insert(op_type);
    for (const plugin::Diagnostic& d : plugin::UnservedNotes(view, library_prototypes)) {
      const bool split = d.kind == plugin::DiagnosticKind::kUnprototypedSplit;
      registry.NoteUnimplemented(d.op_type, plugin::Text(d), d.path, /*overrides=*/split);
      if (committed.count(d.path) && d.kind != plugin::DiagnosticKind::kPrototypeOnly) {
        // (debug inside a worker: the engine, which notes it too, says it.)
        log->log(in_worker ? spdlog::level::debug : spdlog::level::warn, "{}", TerminalSafe(plugin::Text(d)));
      }
    }
  }

  // The notes after the errors of the batch's plugins that were not loaded
  // (the plugin with the other half of a split prototype: an
  // implementation's "canonical IR not found" for an op_type another loaded
  // plugin prototypes), decided by the one resolver (ge/plugin/resolve.h)
  // over the records of what is registered and of the batch.
  void NoteSplits(std::vector<Loading>& batch, const std::vector<PluginReport>& libraries) {
    std::vector<plugin::PluginRecord> view = RegisteredRecords(libraries);
    const std::size_t first = view.size();
    for (const auto& l : batch) view.push_back(l.report);
    view = plugin::Resolve(std::move(view));
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!batch[i].go_on) batch[i].report.error.notes = view[first + i].error.notes;
    }
  }

  // ---- op libraries (share/docs/op-packages.md) ----

  // One op library on its way in.
  struct LibraryLoading {
    plugin::Candidate lib;
    PluginReport report;
    LibraryRegistrations regs;
    bool go_on = true;
  };

  void StopLibrary(LibraryLoading& l, plugin::PluginStatus status, plugin::ErrorKind kind, std::string message) {
    l.report.status = status;
    l.report.error = {};
    l.report.error.kind = kind;
    l.report.error.message = std::move(message);
    l.go_on = false;
  }

  // Op library `l` loses op_type `op_type` to `other` (a path, or "builtin").
  void StopLibraryConflict(LibraryLoading& l, const std::string& op_type, const std::string& other) {
    const plugin::ConflictRule rule = ConflictRule(other, /*library=*/true);
    StopLibrary(l, plugin::PluginStatus::kConflict, plugin::ErrorKind::kConflict,
                plugin::ConflictMessage(op_type, l.lib.path, other, rule));
    l.report.error.op_type = op_type;
    l.report.error.rule = rule;
    l.report.conflicts_with = other;
  }

  // Safety and skip verdicts (before anything of the library runs).
  void AdmitLibrary(LibraryLoading& l) {
    const plugin::Candidate& c = l.lib;
    if (!c.insecure.empty() && !opts.allow_insecure) {
      return StopLibrary(l, plugin::PluginStatus::kInsecure, plugin::ErrorKind::kInsecure, plugin::InsecureMessage(c.insecure));
    }
    if (opts.skip_plugin) {
      if (std::string why = opts.skip_plugin(c); !why.empty()) {
        return StopLibrary(l, plugin::PluginStatus::kSkipped, plugin::ErrorKind::kSkipped, c.path + ": " + why);
      }
    }
  }

  // The verdicts of the admitted libraries of `batch` loaded alone
  // (library_probe.h), each asked once per process and file version.
  std::vector<LibraryVerdict> ProbeLibraries(const std::vector<LibraryLoading>& batch) {
    std::vector<LibraryVerdict> out(batch.size());
    if (!opts.probe_op_libraries) return out;
    // (device, inode, mtime, size) -> verdict: a library file is probed once
    // per process (hosts of one process share it; a new version is probed again).
    using Key = std::tuple<dev_t, ino_t, long long, long long>;
    static std::mutex mu;
    static std::map<Key, LibraryVerdict> known;
    std::vector<std::string> paths;
    std::vector<std::size_t> which;
    std::vector<Key> keys(batch.size());
    {
      std::lock_guard<std::mutex> lock(mu);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (!batch[i].go_on) continue;
        struct stat st {};
        if (::stat(batch[i].lib.real_path.c_str(), &st) != 0) continue;  // LoadOpLibrary says why
        keys[i] = Key{st.st_dev, st.st_ino, static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec,
                      static_cast<long long>(st.st_size)};
        if (auto it = known.find(keys[i]); it != known.end()) {
          out[i] = it->second;
          continue;
        }
        paths.push_back(batch[i].lib.real_path);
        which.push_back(i);
      }
    }
    if (paths.empty()) return out;
    const std::string worker = WorkerExecutable();
    boost::system::error_code ec;
    std::vector<LibraryVerdict> got;
    if (!boost::filesystem::is_regular_file(worker, ec)) {
      got.assign(paths.size(), LibraryVerdict{});
      for (auto& v : got) v.message = "the op library probe " + worker + " does not exist (set GE_PLUGIN_WORKER to its path)";
    } else {
      got = ProbeOpLibraries(paths, worker, opts.op_library_probe_timeout_s);
    }
    std::lock_guard<std::mutex> lock(mu);
    for (std::size_t k = 0; k < which.size(); ++k) {
      out[which[k]] = got[k];
      if (got[k].outcome != LibraryVerdict::Outcome::kNotProbed) known[keys[which[k]]] = got[k];
    }
    return out;
  }

  // The library's verdict alone, then dlopen here (one at a time,
  // process-wide) and what the library registered; a prototype the library
  // could not describe (its `error`) fails the whole library.
  void OpenLibrary(LibraryLoading& l, const LibraryVerdict& alone) {
    const plugin::Candidate& c = l.lib;
    // dlopen names what it opened (the link's target): say which entry it was.
    const std::string entry = c.real_path != c.path ? " (op library " + c.path + ")" : std::string();
    switch (alone.outcome) {
      case LibraryVerdict::Outcome::kLoaded:
        break;
      case LibraryVerdict::Outcome::kNotProbed:
        if (opts.probe_op_libraries && !probe_warned) {
          probe_warned = true;
          log->warn("op libraries are loaded without first loading each alone: {}", TerminalSafe(alone.message));
        }
        break;
      case LibraryVerdict::Outcome::kRefused:
        return StopLibrary(l, plugin::PluginStatus::kError, plugin::ErrorKind::kLoad, alone.message + entry);
      case LibraryVerdict::Outcome::kCrashed:
        StopLibrary(l, plugin::PluginStatus::kCrashed, plugin::ErrorKind::kLoad, alone.message + entry);
        l.report.signal = alone.signal;
        return;
      case LibraryVerdict::Outcome::kExited:
        StopLibrary(l, plugin::PluginStatus::kExited, plugin::ErrorKind::kLoad, alone.message + entry);
        l.report.exit_code = alone.exit_code;
        return;
      case LibraryVerdict::Outcome::kHung:
        StopLibrary(l, plugin::PluginStatus::kHung, plugin::ErrorKind::kLoad, alone.message + entry);
        l.report.timeout_s = alone.timeout_s;
        return;
    }
    const std::string crumb_text = "loading op library " + TerminalSafe(c.path);
    CrashBreadcrumb crumb(crumb_text.c_str(), CrashBreadcrumb::Phase::kLoading);
    plugin::OpLibraryLoad load = plugin::LoadOpLibrary(c.real_path);
    if (!load.error.empty()) {
      return StopLibrary(l, plugin::PluginStatus::kError, plugin::ErrorKind::kLoad, load.error + entry);
    }
    l.regs = std::move(load.registrations);
    // Every bad registration is reported, in one error.
    std::vector<std::string> bad;
    bool bad_prototype = false;  // the first problem is a prototype's (error kind kPrototype)
    for (const auto& p : l.regs.prototypes) {
      if (!p.error.empty() || !p.schema) {
        if (bad.empty()) bad_prototype = true;
        bad.push_back("the prototype of op_type '" + p.op_type + "' cannot be used: " +
                      (p.error.empty() ? std::string("no schema") : p.error));
        continue;
      }
      l.report.prototypes.push_back(p.op_type);
    }
    std::set<std::string> custom;
    for (const auto& op : l.regs.custom_ops) {
      if (!custom.insert(op.op_type).second) {
        const std::string twice = "the library registers op_type '" + op.op_type + "' twice (REG_AUTO_MAPPING_OP)";
        if (std::find(bad.begin(), bad.end(), twice) == bad.end()) bad.push_back(twice);
      }
    }
    if (!bad.empty()) {
      l.report.prototypes.clear();
      return StopLibrary(l, plugin::PluginStatus::kError,
                         bad_prototype ? plugin::ErrorKind::kPrototype : plugin::ErrorKind::kLoad,
                         c.path + ": " + JoinProblems(bad));
    }
  }

  static std::string JoinProblems(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : "; ") + s;
    return out;
  }

  // The prototypes of the libraries still going on, first in path order wins.
  // Recomputed after a library fails: it registers nothing, its prototypes included.
  void CollectPrototypes(std::vector<LibraryLoading>& batch) {
    for (auto it = cpp_protos.begin(); it != cpp_protos.end();) {
      bool ours = false;
      for (const auto& l : batch) ours = ours || l.lib.path == it->second.library;
      it = ours ? cpp_protos.erase(it) : std::next(it);
    }
    for (auto& l : batch) {
      if (!l.go_on) continue;
      for (const auto& p : l.regs.prototypes) {
        auto [it, fresh] = cpp_protos.emplace(p.op_type, CppPrototype{p.schema, l.lib.path});
        if (!fresh && it->second.given) {
          it->second = CppPrototype{p.schema, l.lib.path};
        } else if (!fresh && it->second.library != l.lib.path) {
          plugin::Diagnostic w = plugin::LibraryPrototypeShadowed(p.op_type, l.lib.path, it->second.library);
          if (std::find(l.report.warnings.begin(), l.report.warnings.end(), w) == l.report.warnings.end()) {
            l.report.warnings.push_back(std::move(w));
          }
        }
      }
    }
    for (auto& l : batch) {
      if (l.go_on) AttachInferFuncs(l.regs.infer_funcs);
    }
  }

  // IMPL_OP functions join the prototype of their op_type (the first given
  // for each wins); those of an op_type without prototype are unused.
  void AttachInferFuncs(const std::vector<RegisteredInferFuncs>& funcs) {
    for (const auto& f : funcs) {
      auto it = cpp_protos.find(f.op_type);
      if (it == cpp_protos.end()) continue;
      if (f.infer_shape && !it->second.infer_shape) it->second.infer_shape = f.infer_shape;
      if (f.infer_datatype && !it->second.infer_datatype) it->second.infer_datatype = f.infer_datatype;
    }
  }

  // Registers a library's custom ops, all or nothing: each needs a prototype
  // of its op_type from some loaded library, an instance its creator makes
  // (its capabilities are the interfaces that instance's class implements,
  // ge::OpCapabilities), and an op_type nobody registered before (else the
  // library is a conflict).
  void CommitLibrary(LibraryLoading& l) {
    PluginReport& r = l.report;
    // First every custom op's registration (a probe instance each: every
    // creator that fails is reported), then registered all or nothing.
    std::vector<OpRegistration> regs;
    std::vector<plugin::OpRecord> recs;
    std::vector<std::string> bad;
    for (const auto& op : l.regs.custom_ops) {
      auto proto = cpp_protos.find(op.op_type);
      std::unique_ptr<BaseCustomOp> probe;
      std::string why;
      try {
        probe = op.creator ? op.creator() : nullptr;
        if (!probe) why = "its creator returned no object";
      } catch (const std::exception& e) {
        why = std::string("its creator threw: ") + e.what();
      } catch (...) {
        why = "its creator threw a non-standard exception";
      }
      if (!why.empty()) {
        bad.push_back("C++ custom op '" + op.op_type + "': " + why);
        continue;
      }
      OpRegistration reg;
      reg.op_type = op.op_type;
      reg.schema = proto->second.schema;
      reg.capabilities = OpCapabilities(*probe);
      reg.source = l.lib.path;
      // The prototype's IMPL_OP functions serve an op that cannot infer itself.
      reg.infer_shape = proto->second.infer_shape;
      reg.infer_datatype = proto->second.infer_datatype;
      if (reg.infer_shape != nullptr) reg.capabilities = reg.capabilities | CustomOpCapability::kInferMeta;
      auto creator = op.creator;
      reg.creator = [creator]() -> std::shared_ptr<BaseCustomOp> { return std::shared_ptr<BaseCustomOp>(creator()); };
      plugin::OpRecord rec;
      rec.op_type = op.op_type;
      rec.capabilities = CapabilityNames(reg.capabilities);
      if (proto->second.library != l.lib.path) rec.prototype_library = proto->second.library;
      regs.push_back(std::move(reg));
      recs.push_back(std::move(rec));
    }
    if (!bad.empty()) {
      return StopLibrary(l, plugin::PluginStatus::kError, plugin::ErrorKind::kLoad, l.lib.path + ": " + JoinProblems(bad));
    }
    std::vector<std::string> done;
    auto undo = [&]() {
      for (const auto& op : done) registry.Unregister(op);
      r.ops = recs;  // a conflict lists the ops it would have registered (as the registry does)
    };
    for (std::size_t i = 0; i < regs.size(); ++i) {
      const std::string op_type = regs[i].op_type;
      if (auto existing = registry.Find(op_type)) {
        undo();
        return StopLibraryConflict(l, op_type, existing->source);
      }
      if (Status st = registry.Register(std::move(regs[i])); !st.ok()) {
        undo();
        const auto existing = registry.Find(op_type);  // registered meanwhile (the engine itself)
        return StopLibraryConflict(l, op_type, existing ? existing->source : std::string("builtin"));
      }
      done.push_back(op_type);
    }
    r.ops = std::move(recs);
    r.status = plugin::PluginStatus::kOk;
    sources.push_back(l.lib.path);
    library_sources.insert(l.lib.path);
    log->info("op library {} loaded: {} prototype(s), {} C++ op(s)", TerminalSafe(r.path), r.prototypes.size(),
              r.ops.size());
  }

  // Loads op libraries in path order: all are opened before any custom op is
  // registered, so a custom op may use a prototype of a later library.
  std::vector<PluginReport> LoadLibraries(const std::vector<plugin::Candidate>& libs) {
    std::vector<LibraryLoading> batch;
    for (const auto& c : libs) {
      LibraryLoading l;
      l.lib = c;
      l.report.name = c.name;
      l.report.path = c.path;
      l.report.op_library = true;
      AdmitLibrary(l);
      batch.push_back(std::move(l));
    }
    // Each alone first (all probes at once), then here in path order.
    const std::vector<LibraryVerdict> alone = ProbeLibraries(batch);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].go_on) OpenLibrary(batch[i], alone[i]);
    }
    // A custom op whose op_type no library prototypes fails its library; that
    // library's prototypes go too, which may fail another: repeat until stable.
    for (bool again = true; again;) {
      again = false;
      CollectPrototypes(batch);
      for (auto& l : batch) {
        if (!l.go_on) continue;
        for (const auto& op : l.regs.custom_ops) {
          if (cpp_protos.count(op.op_type)) continue;
          std::string why = l.lib.path + ": C++ custom op '" + op.op_type +
                            "' has no prototype: no op library on the opp path registers REG_OP(" + op.op_type + ")";
          if (const std::string dep = plugin::DependencyPrototypeOwner(op.op_type); !dep.empty()) {
            why += "; " + dep + ", which it loads as a dependency, registers it, but a prototype is used only " +
                   "from an op library of the opp path (install " + dep + " beside it: share/docs/op-packages.md)";
          }
          StopLibrary(l, plugin::PluginStatus::kError, plugin::ErrorKind::kPrototype, std::move(why));
          l.report.error.op_type = op.op_type;
          again = true;
          break;
        }
      }
    }
    std::vector<PluginReport> out;
    for (auto& l : batch) {
      if (l.go_on) CommitLibrary(l);
      // A library that is not ok registers no prototype: it lists none.
      if (!l.go_on) {
        l.report.prototypes.clear();
        if (l.report.status == plugin::PluginStatus::kError) {
          for (const auto& p : l.regs.prototypes) {
            if (p.schema && p.error.empty()) failed_protos.emplace(p.op_type, std::make_pair(l.lib.path, l.report.error.OneLine()));
          }
        }
      }
      if (!l.go_on) log->info("op library {} not loaded: {}", TerminalSafe(l.report.path), l.report.error.message);
      for (const auto& w : l.report.warnings) log->warn("{}", TerminalSafe(plugin::Text(w)));
      out.push_back(l.report);
    }
    if (std::any_of(batch.begin(), batch.end(), [](const LibraryLoading& l) { return !l.go_on; })) {
      CollectPrototypes(batch);  // a library that failed while committing registers no prototype either
    }
    return out;
  }

  // HostOptions::prototype_libraries: their prototypes only, once per load.
  void LoadPrototypeLibraries() {
    if (prototype_libraries_loaded) return;
    prototype_libraries_loaded = true;
    for (const auto& [path, why] : opts.failed_libraries) {
      plugin::OpLibraryLoad load = plugin::LoadOpLibrary(path);
      for (const auto& p : load.registrations.prototypes) {
        if (p.schema && p.error.empty()) failed_protos.emplace(p.op_type, std::make_pair(path, why));
      }
    }
    for (const auto& path : opts.prototype_libraries) {
      plugin::OpLibraryLoad load = plugin::LoadOpLibrary(path);
      if (!load.error.empty()) {
        log->warn("{}", TerminalSafe(load.error));
        continue;
      }
      for (const auto& p : load.registrations.prototypes) {
        if (p.schema && p.error.empty()) cpp_protos.emplace(p.op_type, CppPrototype{p.schema, path, nullptr, nullptr, true});
      }
      AttachInferFuncs(load.registrations.infer_funcs);
    }
  }

  void Report(const plugin::Discovery& d) {
    for (const auto& p : d.problems) {
      if (!problems_reported.emplace(p.path, p.error.message).second) continue;
      // A report, not only a log line: the caller prints it (ge-run warns once).
      log->info("{}", p.error.message);
      reports.push_back(p);
    }
  }

  void Unload() {
    for (const auto& src : sources) registry.UnregisterSource(src);
    sources.clear();
    adapters.clear();  // each adapter releases its Python objects in its interpreter; the last ends it
    for (const auto& [name, keys] : main_loaded) ForgetMain(name, keys);
    main_loaded.clear();
    cpp_protos.clear();
    failed_protos.clear();
    for (const auto& src : noted_sources) registry.UnregisterSource(src);
    noted_sources.clear();
    library_sources.clear();
    prototype_libraries_loaded = false;
  }
};

PluginHost::PluginHost(HostOptions options, OpRegistry& registry)
    : impl_(std::make_unique<Impl>(std::move(options), registry)) {}

PluginHost::~PluginHost() { impl_->Unload(); }

const std::vector<PluginReport>& PluginHost::LoadAll() {
  std::vector<std::string> entries = impl_->opts.opp_paths;
  if (entries.empty() && impl_->opts.use_env_opp_path) {
    if (const char* env = std::getenv("ASCEND_CUSTOM_OPP_PATH")) entries = plugin::SplitOppPath(env);
  }
  const plugin::Discovery d = plugin::Discover(entries, impl_->Discovering(), impl_->base_dir);
  impl_->Report(d);
  for (auto& r : impl_->LoadBatch(d.plugins)) impl_->reports.push_back(std::move(r));
  return impl_->reports;
}

PluginReport PluginHost::LoadPlugin(const std::string& given) {
  const plugin::Discovery d = plugin::DiscoverOne(given, impl_->Discovering(), impl_->base_dir);
  if (!d.problems.empty()) {
    impl_->reports.push_back(d.problems.front());
    return d.problems.front();
  }
  const plugin::Candidate& c = d.plugins.front();
  if (impl_->loaded_paths.count(c.path)) {
    for (const auto& r : impl_->reports) {
      if (r.path == c.path) return r;
    }
  }
  std::vector<PluginReport> out = impl_->LoadBatch({c});
  impl_->reports.push_back(out.front());
  return out.front();
}

std::string CallTimeoutProblem(double seconds) {
  if (seconds >= kMinCallTimeoutS && seconds <= kMaxCallTimeoutS) return "";
  return fmt::format("must be from {:g} to {:g} seconds, got {:g}", kMinCallTimeoutS, kMaxCallTimeoutS, seconds);
}

std::string PluginHost::DeclaredIsolation(const std::string& given) {
  const plugin::Discovery d = plugin::DiscoverOne(given, impl_->Discovering(), impl_->base_dir);
  if (!d.problems.empty()) throw std::invalid_argument(d.problems.front().error.message);
  const plugin::Candidate& c = d.plugins.front();
  if (c.is_op_library) return "native";
  InterpreterGuard guard(*impl_->runtime->Main());
  try {
    bp::dict md = bp::extract<bp::dict>(Entry().attr("read_metadata")(PathObject(c.path), c.is_package));
    if (!bp::extract<bool>(md["isolation_set"])) return impl_->opts.default_isolation;
    return bp::extract<std::string>(md["isolation"]);
  } catch (const bp::error_already_set&) {
    throw std::invalid_argument(py::FetchPythonError(c.name, c.path, "pyproject.toml").message);
  }
}

const std::vector<PluginReport>& PluginHost::Reports() const noexcept { return impl_->reports; }
uint64_t PluginHost::PythonCalls() const noexcept { return impl_->calls->load(); }
void PluginHost::UnloadAll() { impl_->Unload(); }

void WorkerAccess::MarkWorker(PluginHost& host) { host.impl_->in_worker = true; }

void WorkerAccess::FlushPluginOutput(PluginHost& host) {
  InterpreterGuard guard(*host.impl_->runtime->Main());
  try {
    Entry().attr("flush_streams")();
  } catch (const bp::error_already_set&) {
    PyErr_Clear();
  }
}

}  // namespace ge::host
