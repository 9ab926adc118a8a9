// plugin_host.cc: discovery, loading, the Python op adapter, unloading.
#include "ge/host/plugin_host.h"

#include <boost/filesystem.hpp>
#include <boost/python.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <regex>
#include <set>
#include <dlfcn.h>
#include <unistd.h>

#include "dispatch.h"
#include "errors.h"
#include "ge/crash_report.h"
#include "ge/log.h"
#include "ge/text.h"
#include "interpreter.h"
#include "views.h"

#ifndef GE_LIB_TO_PYTHON
#define GE_LIB_TO_PYTHON "ge-plugin/python"
#endif

namespace bp = boost::python;
namespace fs = boost::filesystem;

namespace ge::host {

// ---- discovery ----------------------------------------------------------------------------

std::vector<std::string> SplitOppPath(const std::string& value) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find(':', start);
    if (end == std::string::npos) end = value.size();
    if (end > start) out.push_back(value.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::vector<DiscoveredPlugin> DiscoverPlugins(const std::vector<std::string>& entries,
                                              std::vector<PluginReport>& problems) {
  std::vector<DiscoveredPlugin> found;
  std::set<std::string> seen;
  auto add = [&](const fs::path& p, bool is_package) {
    boost::system::error_code ec;
    fs::path canon = fs::canonical(p, ec);
    const std::string key = (ec ? p : canon).string();
    if (!seen.insert(key).second) return;  // the same file reached twice loads once
    found.push_back({is_package ? p.filename().string() : p.stem().string(), key, is_package});
  };
  for (const auto& entry : entries) {
    fs::path p(entry);
    boost::system::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) {
      PluginReport r;
      r.name = p.filename().string();
      r.path = entry;
      r.status = "missing";
      r.error = "opp path entry " + entry + " does not exist";
      problems.push_back(r);
      continue;
    }
    if (fs::is_regular_file(st)) {
      if (p.extension() != ".py") {
        PluginReport r;
        r.name = p.filename().string();
        r.path = entry;
        r.status = "error";
        r.error = "opp path entry " + entry + " is neither a .py file nor a folder";
        problems.push_back(r);
        continue;
      }
      add(p, false);
      continue;
    }
    if (!fs::is_directory(st)) {
      PluginReport r;
      r.name = p.filename().string();
      r.path = entry;
      r.status = "error";
      r.error = "opp path entry " + entry + " is neither a .py file nor a folder";
      problems.push_back(r);
      continue;
    }
    std::vector<fs::path> children;
    for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) children.push_back(it->path());
    if (ec) {
      PluginReport r;
      r.name = p.filename().string();
      r.path = entry;
      r.status = "error";
      r.error = "cannot list opp folder " + entry + ": " + ec.message();
      problems.push_back(r);
      continue;
    }
    std::sort(children.begin(), children.end());
    for (const auto& c : children) {
      const std::string name = c.filename().string();
      boost::system::error_code cec;
      if (fs::is_regular_file(c, cec) && c.extension() == ".py" && !name.empty() && name[0] != '_') {
        add(c, false);
      } else if (fs::is_directory(c, cec) && fs::is_regular_file(c / "__init__.py", cec)) {
        add(c, true);
      }
    }
  }
  return found;
}

namespace {

// An owned reference to a Python object of one interpreter. It must be
// released (Reset) with that interpreter current; a handle destroyed while
// still holding a reference leaks it rather than touch Python without the GIL.
class PyHandle {
 public:
  PyHandle() = default;
  explicit PyHandle(bp::object o) : p_(bp::incref(o.ptr())) {}
  ~PyHandle() {
    if (p_ != nullptr) Logger("host")->error("a Python reference was leaked at shutdown (not released in its interpreter)");
  }
  PyHandle(PyHandle&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  PyHandle& operator=(PyHandle&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  PyHandle(const PyHandle&) = delete;
  PyHandle& operator=(const PyHandle&) = delete;
  PyObject* get() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  // Precondition: the owning interpreter is current.
  void Reset() noexcept {
    Py_XDECREF(p_);
    p_ = nullptr;
  }

 private:
  PyObject* p_ = nullptr;
};

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

// Where this library lives (installed: <libdir>; build tree: build/lib).
std::string LibraryDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&LibraryDir), &info) == 0 || info.dli_fname == nullptr) return {};
  return fs::path(info.dli_fname).parent_path().string();
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
  const std::string libdir = LibraryDir();
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

bp::object Import(const char* name) { return bp::import(name); }

}  // namespace

// ---- the Python op adapter ---------------------------------------------------------------

// A Python implementation class seen through the C++ capability interfaces. It
// inherits every interface; GetCapabilities() reports what the class defines,
// so CustomOpCast refuses the others.
class PythonOpAdapter final : public EagerExecuteOp, public CompilableOp, public AnnotatedArgsOp, public InferMetaOp {
 public:
  PythonOpAdapter(std::shared_ptr<LoadedPlugin> plugin, std::shared_ptr<const OpSchema> schema, uint32_t caps,
                  std::string descriptor_key, PyHandle cls, PyHandle proto, PyHandle call_infer_meta, PyHandle ctx_var,
                  PyHandle compile_vars, PyHandle revalidate_compile, PyHandle launch_var,
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
        calls_(std::move(calls)) {
    for (std::size_t m = 0; m < std::size(kMethods); ++m) {
      crumbs_[m] = "calling " + std::string(kMethods[m]) + " of op_type '" + TerminalSafe(Abbreviate(schema_->op_type)) +
                   "' (plugin '" + plugin_->name + "', " + TerminalSafe(plugin_->path) + ")";
    }
  }

  ~PythonOpAdapter() override {
    InterpreterGuard guard(*plugin_->interp);
    for (PyHandle* h : {&cls_, &proto_, &call_infer_meta_, &ctx_var_, &compile_vars_, &revalidate_compile_, &launch_var_,
                        &instance_, &execute_, &compile_, &declare_}) {
      h->Reset();
    }
  }

  uint32_t GetCapabilities() const noexcept override { return caps_; }
  const OpSchema& GetSchema() const noexcept override { return *schema_; }

  Status Execute(EagerOpExecutionContext* ctx) override {
    if (!HasCapability(caps_, CustomOpCapability::kEagerExecute)) return Status::Error(descriptor_key_ + " has no execute");
    InterpreterGuard guard(*plugin_->interp);
    py::CallSite site{plugin_->name, plugin_->path, schema_->op_type, "execute"};
    CrashBreadcrumb crumb(crumbs_[0].c_str());
    if (!execute_) {
      Status st = BindMethod("execute", execute_, site);
      if (!st.ok()) return st;
    }
    calls_->fetch_add(1, std::memory_order_relaxed);
    return py::InvokeExecute(execute_.get(), ctx_var_.get(), ctx, site);
  }

  Status Compile(OpCompileContext* ctx) override {
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

  Status DeclareLaunchArgs(AnnotatedArgsContext& ctx) override {
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

  Status InferMeta(InferMetaContext* ctx) override {
    InterpreterGuard guard(*plugin_->interp);
    py::CallSite site{plugin_->name, plugin_->path, schema_->op_type, "infer_meta"};
    CrashBreadcrumb crumb(crumbs_[3].c_str());
    calls_->fetch_add(1, std::memory_order_relaxed);
    return py::InvokeInferMeta(call_infer_meta_.get(), proto_.get(), ctx, site);
  }

 private:
  // The class is instantiated with no arguments the first time the host needs
  // it (share/docs/plugin-authors.md, "The implementation"); bound methods are cached (an attribute lookup costs
  // ~140 ns on the hot path otherwise).
  Status BindMethod(const char* name, PyHandle& slot, const py::CallSite& site) {
    try {
      if (!instance_) {
        bp::object cls(bp::handle<>(bp::borrowed(cls_.get())));
        instance_ = PyHandle(cls());
      }
      bp::object inst(bp::handle<>(bp::borrowed(instance_.get())));
      slot = PyHandle(inst.attr(name));
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
  PyHandle cls_, proto_, call_infer_meta_, ctx_var_, compile_vars_, revalidate_compile_, launch_var_, instance_, execute_,
      compile_, declare_;
  std::shared_ptr<std::atomic<uint64_t>> calls_;
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
  std::set<std::string> loaded_paths;
  std::vector<std::shared_ptr<PythonOpAdapter>> adapters;  // strong refs: released outside any lock
  std::vector<std::string> sources;                        // registered plugin paths
  // Main-interpreter plugins loaded: (module name, (op_type, descriptor key)...).
  // The main interpreter outlives the host, so Unload removes their modules and
  // registrations from it; otherwise a later host would re-import nothing.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> main_loaded;
  std::shared_ptr<std::atomic<uint64_t>> calls = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<spdlog::logger> log = Logger("host");
  // The current directory when the host was made: relative opp paths are
  // resolved against it, so a plugin calling os.chdir changes nothing.
  fs::path base_dir;

  // `p` made absolute against base_dir (unchanged when already absolute).
  std::string Resolve(const std::string& p) const {
    if (p.empty() || fs::path(p).is_absolute()) return p;
    return (base_dir / p).lexically_normal().string();
  }

  Impl(HostOptions o, OpRegistry& r) : opts(std::move(o)), registry(r) {
    boost::system::error_code cec;
    base_dir = fs::current_path(cec);
    if (opts.default_isolation != "subinterpreter" && opts.default_isolation != "main") {
      throw std::invalid_argument("HostOptions::default_isolation must be \"subinterpreter\" or \"main\", got \"" +
                                  opts.default_isolation + "\"");
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

  struct Meta {
    PluginReport report;
    DiscoveredPlugin plugin;
    bool ok = true;
  };

  Meta ReadMeta(const DiscoveredPlugin& d) {
    Meta m;
    m.plugin = d;
    m.report.name = d.name;
    m.report.path = d.path;
    m.report.isolation = "subinterpreter";
    InterpreterGuard guard(*runtime->Main());
    try {
      bp::dict md = bp::extract<bp::dict>(Import("ge._loader").attr("read_metadata")(d.path, d.is_package));
      m.report.version = bp::extract<std::string>(md["version"]);
      m.report.description = bp::extract<std::string>(md["description"]);
      m.report.isolation = bp::extract<std::string>(md["isolation"]);
      if (!bp::extract<bool>(md["isolation_set"])) m.report.isolation = opts.default_isolation;
    } catch (const bp::error_already_set&) {
      ErrorInfo e = py::FetchPythonError(d.name, d.path, "pyproject.toml");
      m.report.status = "error";
      m.report.error = e.message;
      m.ok = false;
    }
    return m;
  }

  void Fail(PluginReport& r, const ErrorInfo& e, const std::string& status = "error") {
    r.status = status;
    r.error = e.message;
    if (!e.location.empty()) r.error += " (at " + e.location + ")";
    // Every load failure names the plugin's file, also when no frame of the
    // plugin is on the traceback (signature validation, a decorator's check).
    if (!r.path.empty() && r.error.find(r.path) == std::string::npos) r.error = r.path + ": " + r.error;
    r.details = e.traceback;
  }

  // A plugin that imported and validated, waiting to register its ops. Ops are
  // registered in path order after a whole batch is loaded (main-interpreter
  // plugins load first, but the first in path order must win a conflict).
  struct Pending {
    std::string name;
    std::string path;
    bool sub = true;
    std::vector<std::shared_ptr<PythonOpAdapter>> made;
    std::vector<std::pair<std::string, std::string>> keys;  // (op_type, descriptor key)
    std::vector<std::pair<std::string, std::string>> caps;
  };

  PluginReport Load(Meta m, Pending& pending) {
    PluginReport r = m.report;
    const DiscoveredPlugin& d = m.plugin;
    if (!m.ok) return r;
    if (opts.skip_plugin) {
      const std::string why = opts.skip_plugin(d);
      if (!why.empty()) {
        r.status = "skipped";
        r.error = d.path + ": " + why;
        log->info("{}", r.error);
        return r;
      }
    }
    static const std::regex kIdent("[A-Za-z_][A-Za-z0-9_]*");
    if (!std::regex_match(d.name, kIdent)) {
      r.status = "error";
      r.error = "plugin name '" + d.name + "' (" + d.path + ") is not a valid Python module name";
      return r;
    }
    if (r.isolation == "process") {
      r.status = "error";
      r.error = d.path + ": isolation \"process\" is not supported by this host version (use \"subinterpreter\" or \"main\")";
      return r;
    }
    const bool sub = r.isolation != "main";
    const std::string crumb_text = "loading plugin '" + TerminalSafe(d.name) + "' (" + TerminalSafe(d.path) + ")";
    CrashBreadcrumb crumb(crumb_text.c_str(), CrashBreadcrumb::Phase::kLoading);
    auto plugin = std::make_shared<LoadedPlugin>();
    plugin->name = d.name;
    plugin->path = d.path;
    plugin->runtime = runtime;
    plugin->join_timeout_s = opts.thread_join_timeout_s;
    try {
      plugin->interp = sub ? Interpreter::NewSub(runtime, d.name) : runtime->Main();
    } catch (const std::exception& e) {
      r.status = "error";
      r.error = e.what();
      return r;
    }

    std::vector<std::shared_ptr<PythonOpAdapter>> made;
    std::vector<std::pair<std::string, std::string>> caps;
    std::vector<std::pair<std::string, std::string>> keys;  // (op_type, descriptor key)
    {
      InterpreterGuard guard(*plugin->interp);
      const fs::path p(d.path);
      const std::string path_entry = p.parent_path().string();
      bp::object loader, host_mod, before;
      try {
        loader = Import("ge._loader");
        host_mod = Import("ge.custom_op._host");
        loader.attr("prepare")(d.name, path_entry, sub, d.is_package);
        before = host_mod.attr("snapshot")();
      } catch (const bp::error_already_set&) {
        Fail(r, py::FetchPythonError(d.name, d.path, "prepare"));
        return Abandon(r, plugin, made);
      }
      try {
        bp::object module = loader.attr("import_plugin")(d.name, d.name, d.path, d.is_package);
        // Without pyproject.toml metadata: the module's __version__ and the
        // first line of its docstring (what ge-plugin-ls shows too).
        bp::dict meta = bp::extract<bp::dict>(loader.attr("module_metadata")(module));
        if (r.version.empty()) r.version = bp::extract<std::string>(meta["version"]);
        if (r.description.empty()) r.description = bp::extract<std::string>(meta["description"]);
      } catch (const bp::error_already_set&) {
        ErrorInfo e = py::FetchPythonError(d.name, d.path, "import");
        std::string refused;
        try {
          bp::list names = bp::extract<bp::list>(loader.attr("refused_extensions")());
          for (Py_ssize_t i = 0; i < bp::len(names); ++i) {
            refused += (refused.empty() ? "" : ", ") + std::string(bp::extract<std::string>(names[i]));
          }
          host_mod.attr("discard")(before);
          if (!sub) loader.attr("forget_plugin")(d.name);
        } catch (const bp::error_already_set&) {
          PyErr_Clear();
        }
        if (!refused.empty()) {
          e.message = "import failed because extension module(s) " + refused +
                      " cannot be loaded in a sub-interpreter; " +
                      (d.is_package ? std::string("set isolation = \"main\" under [tool.ge-plugin] in the plugin's "
                                                  "pyproject.toml")
                                    : std::string("single-file plugins always run in a sub-interpreter: make it a "
                                                  "package (a folder with __init__.py) whose pyproject.toml sets "
                                                  "isolation = \"main\" under [tool.ge-plugin]")) +
                      " (" + e.message + ")";
        }
        Fail(r, e);
        return Abandon(r, plugin, made);
      }
      try {
        bp::dict collected = bp::extract<bp::dict>(host_mod.attr("collect")(before));
        bp::object protos = collected["protos"];
        bp::object impls = collected["impls"];
        bp::object proto_mod = Import("ge.custom_op.proto");
        bp::object call_infer_meta = Import("ge.custom_op._proto").attr("call_infer_meta");
        bp::object custom_op = Import("ge.custom_op");
        bp::object ctx_var = custom_op.attr("_EXECUTE_CTX");
        bp::object compile_vars = bp::make_tuple(bp::object(custom_op.attr("_COMPILE_CTX")),
                                                  bp::object(custom_op.attr("_COMPILE_PLATFORM")));
        bp::object validate_impl = Import("ge.custom_op._validate").attr("validate_impl");
        bp::object partial = Import("functools").attr("partial");
        for (Py_ssize_t i = 0; i < bp::len(impls); ++i) {
          bp::object impl = impls[i];
          const std::string op_type = bp::extract<std::string>(impl["op_type"]);
          const std::string key = bp::extract<std::string>(impl["descriptor_key"]);
          bp::object proto_dict;
          for (Py_ssize_t k = 0; k < bp::len(protos); ++k) {
            if (std::string(bp::extract<std::string>(protos[k]["op_type"])) == op_type) proto_dict = protos[k];
          }
          if (proto_dict.is_none()) {
            throw std::invalid_argument("op_type '" + op_type + "' (" + key + "): canonical IR not found");
          }
          std::shared_ptr<const OpSchema> schema = py::SchemaFromDict(proto_dict);
          uint32_t mask = static_cast<uint32_t>(CustomOpCapability::kInferMeta);
          bp::object interfaces = impl["interfaces"];
          for (Py_ssize_t k = 0; k < bp::len(interfaces); ++k) {
            const std::string itf = bp::extract<std::string>(interfaces[k]);
            if (itf == "eager_execute") mask |= static_cast<uint32_t>(CustomOpCapability::kEagerExecute);
            if (itf == "compilable") mask |= static_cast<uint32_t>(CustomOpCapability::kCompilable);
            if (itf == "annotated_args") mask |= static_cast<uint32_t>(CustomOpCapability::kAnnotatedArgs);
          }
          bp::object proto_obj = proto_mod.attr("get_registered_op_proto_by_op_type")(op_type);
          // compile is validated again before every call (share/docs/plugin-authors.md, "The implementation").
          bp::object descriptor = impl["cls"].attr("__ge_op_impl_descriptor__");
          bp::object revalidate = partial(validate_impl, descriptor, "compile", proto_obj);
          made.push_back(std::make_shared<PythonOpAdapter>(
              plugin, schema, mask, key, PyHandle(impl["cls"]), PyHandle(proto_obj), PyHandle(call_infer_meta),
              PyHandle(ctx_var), PyHandle(compile_vars), PyHandle(revalidate),
              PyHandle(bp::object(custom_op.attr("_LAUNCH_CTX"))), calls));
          caps.emplace_back(op_type, CapabilityString(mask));
          keys.emplace_back(op_type, key);
        }
      } catch (const bp::error_already_set&) {
        Fail(r, py::FetchPythonError(d.name, d.path, "validation"));
        try {
          host_mod.attr("discard")(before);
          if (!sub) loader.attr("forget_plugin")(d.name);
        } catch (const bp::error_already_set&) {
          PyErr_Clear();
        }
        return Abandon(r, plugin, made);
      } catch (const std::exception& e) {
        r.status = "error";
        r.error = d.path + ": " + e.what();
        try {
          host_mod.attr("discard")(before);
        } catch (const bp::error_already_set&) {
          PyErr_Clear();
        }
        return Abandon(r, plugin, made);
      }
      // First in path order wins: a plugin defining an op_type that is already
      // registered is a conflict naming both files, and registers nothing.
      // (The registry lock is a leaf lock: its holders never call Python.)
      for (const auto& a : made) {
        if (auto existing = registry.Find(a->GetSchema().op_type)) {
          r.status = "conflict";
          r.error = "op_type '" + a->GetSchema().op_type + "' from " + d.path + " conflicts with the one from " +
                    existing->source + " (first in path order wins)";
          try {
            host_mod.attr("discard")(before);
            if (!sub) loader.attr("forget_plugin")(d.name);
          } catch (const bp::error_already_set&) {
            PyErr_Clear();
          }
          return Abandon(r, plugin, made);
        }
      }
    }
    pending.name = d.name;
    pending.path = d.path;
    pending.sub = sub;
    pending.made = std::move(made);
    pending.keys = std::move(keys);
    pending.caps = std::move(caps);
    r.status = "ok";
    return r;
  }

  // Removes a main-interpreter plugin's modules and registrations from the
  // main interpreter (which outlives the host).
  void ForgetMain(const std::string& name, const std::vector<std::pair<std::string, std::string>>& keys) {
    InterpreterGuard guard(*runtime->Main());
    try {
      bp::object impl_mod = Import("ge.custom_op._impl");
      bp::object proto_mod = Import("ge.custom_op._proto");
      for (const auto& [op_type, key] : keys) {
        impl_mod.attr("_unregister_op_impl")(key);
        proto_mod.attr("_unregister_op_proto")(op_type);
      }
      Import("ge._loader").attr("forget_plugin")(name);
    } catch (const bp::error_already_set&) {
      log->warn("cannot forget main-interpreter plugin '{}': {}", name, py::FetchPythonError(name, "", "unload").message);
    }
  }

  // Registers a loaded plugin's ops, all or nothing (outside any interpreter:
  // the registry lock is taken here). On a conflict the plugin is dropped.
  void Commit(Pending& p, PluginReport& r) {
    std::vector<std::string> done;
    for (const auto& a : p.made) {
      OpRegistration reg;
      reg.op_type = a->GetSchema().op_type;
      reg.schema = std::shared_ptr<const OpSchema>(a, &a->GetSchema());
      reg.capabilities = a->GetCapabilities();
      reg.source = p.path;
      reg.plugin = p.name;
      std::weak_ptr<PythonOpAdapter> weak = a;
      reg.creator = [weak]() -> std::shared_ptr<BaseCustomOp> { return weak.lock(); };
      Status st = registry.Register(std::move(reg));
      if (!st.ok()) {
        for (const auto& op : done) registry.Unregister(op);
        r.status = "conflict";
        r.error = st.message();
        r.op_types.clear();
        p.made.clear();  // releases the adapters (each in its interpreter) and then the sub-interpreter
        if (!p.sub) ForgetMain(p.name, p.keys);
        log->info("plugin '{}' ({}) not loaded: {}", r.name, r.path, r.error);
        return;
      }
      done.push_back(a->GetSchema().op_type);
    }
    r.status = "ok";
    r.op_types = done;
    r.capabilities = p.caps;
    sources.push_back(p.path);
    if (!p.sub) main_loaded.emplace_back(p.name, p.keys);
    adapters.insert(adapters.end(), p.made.begin(), p.made.end());
    p.made.clear();
    log->info("plugin '{}' loaded from {} ({}): {} op(s)", r.name, r.path, r.isolation, done.size());
  }

  // A failed load: what it created is dropped when Load returns, in order:
  // Python locals and the guard, then the adapters (each releasing its objects
  // in the interpreter), then the plugin (ending its sub-interpreter).
  PluginReport Abandon(PluginReport& r, std::shared_ptr<LoadedPlugin>&, std::vector<std::shared_ptr<PythonOpAdapter>>&) {
    log->info("plugin '{}' ({}) not loaded: {}", r.name, r.path, r.error);
    return r;
  }

  void Unload() {
    for (const auto& src : sources) registry.UnregisterSource(src);
    sources.clear();
    adapters.clear();  // each adapter releases its Python objects in its interpreter; the last ends it
    for (const auto& [name, keys] : main_loaded) ForgetMain(name, keys);
    main_loaded.clear();
  }
};

PluginHost::PluginHost(HostOptions options, OpRegistry& registry)
    : impl_(std::make_unique<Impl>(std::move(options), registry)) {}

PluginHost::~PluginHost() { impl_->Unload(); }

const std::vector<PluginReport>& PluginHost::LoadAll() {
  std::vector<std::string> entries = impl_->opts.opp_paths;
  if (entries.empty() && impl_->opts.use_env_opp_path) {
    if (const char* env = std::getenv("ASCEND_CUSTOM_OPP_PATH")) entries = SplitOppPath(env);
  }
  for (auto& e : entries) e = impl_->Resolve(e);
  std::vector<PluginReport> problems;
  std::vector<DiscoveredPlugin> found = DiscoverPlugins(entries, problems);
  for (auto& p : problems) {
    impl_->log->warn("{}", p.error);
    impl_->reports.push_back(p);
  }
  std::vector<Impl::Meta> metas;
  for (const auto& d : found) {
    if (impl_->loaded_paths.count(d.path)) continue;  // loading again is idempotent
    impl_->loaded_paths.insert(d.path);
    metas.push_back(impl_->ReadMeta(d));
  }
  // Main-interpreter plugins load first: an extension module (numpy) must be
  // loaded by the main interpreter before any sub-interpreter exists
  // (share/docs/host-design.md, "Interpreters"). Ops are then registered in path order, so the first plugin in
  // path order wins a conflict whatever its isolation.
  std::vector<PluginReport> results(metas.size());
  std::vector<Impl::Pending> pending(metas.size());
  std::vector<bool> is_main(metas.size());
  for (std::size_t i = 0; i < metas.size(); ++i) is_main[i] = metas[i].ok && metas[i].report.isolation == "main";
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < metas.size(); ++i) {
      if (is_main[i] != (pass == 0)) continue;
      results[i] = impl_->Load(std::move(metas[i]), pending[i]);
    }
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].status == "ok") impl_->Commit(pending[i], results[i]);
    impl_->reports.push_back(results[i]);
  }
  return impl_->reports;
}

PluginReport PluginHost::LoadPlugin(const std::string& given) {
  const std::string path = impl_->Resolve(given);
  std::vector<PluginReport> problems;
  std::vector<DiscoveredPlugin> found;
  boost::system::error_code ec;
  fs::path p(path);
  if (fs::is_directory(p, ec) && fs::is_regular_file(p / "__init__.py", ec)) {
    found.push_back({p.filename().string(), fs::canonical(p, ec).string(), true});
  } else {
    found = DiscoverPlugins({path}, problems);
  }
  if (!problems.empty()) {
    impl_->reports.push_back(problems.front());
    return problems.front();
  }
  if (found.size() != 1) {
    PluginReport r;
    r.path = path;
    r.status = "error";
    r.error = path + " is not one plugin (a .py file or a package directory with __init__.py)";
    impl_->reports.push_back(r);
    return r;
  }
  if (impl_->loaded_paths.count(found[0].path)) {
    for (const auto& r : impl_->reports) {
      if (r.path == found[0].path) return r;
    }
  }
  impl_->loaded_paths.insert(found[0].path);
  Impl::Pending pending;
  PluginReport r = impl_->Load(impl_->ReadMeta(found[0]), pending);
  if (r.status == "ok") impl_->Commit(pending, r);
  impl_->reports.push_back(r);
  return r;
}

const std::vector<PluginReport>& PluginHost::Reports() const noexcept { return impl_->reports; }
uint64_t PluginHost::PythonCalls() const noexcept { return impl_->calls->load(); }
void PluginHost::UnloadAll() { impl_->Unload(); }

}  // namespace ge::host
