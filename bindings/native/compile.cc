// compile.cc: OpCompileContext / CompilePlatformInfo views and the
// schema-bound `compile` dispatch (API.md section 4).
#include <boost/python.hpp>

#include "dispatch.h"
#include "errors.h"
#include "views.h"

namespace ge::py {

namespace {

struct CompileCtxView {
  OpCompileContext* ctx = nullptr;
  LeasePtr lease;
  OpCompileContext& Get() const {
    CheckAlive(*lease);
    return *ctx;
  }
};

// A separate object from the context (API.md: the compile context itself has
// no platform methods); it reads the platform lazily, once per callback.
struct PlatformView {
  OpCompileContext* ctx = nullptr;
  LeasePtr lease;
  std::shared_ptr<const PlatformInfos> Get() const {
    CheckAlive(*lease);
    try {
      return ctx->Platform();
    } catch (const std::exception& e) {
      RaiseRuntimeError(std::string("Failed to get platform infos: ") + e.what());
    }
  }
};

bp::object RefuseInit(bp::tuple args, bp::dict) {
  std::string name = bp::extract<std::string>(args[0].attr("__class__").attr("__name__"));
  RaiseTypeError(name + " cannot be constructed from Python: the host hands it to compile");
}

std::string StrArg(bp::object o, const char* what) {
  if (!PyUnicode_Check(o.ptr())) {
    RaiseTypeError(std::string(what) + " must be a str, got " + Py_TYPE(o.ptr())->tp_name);
  }
  std::string s = SafeStr(o.ptr());
  if (s.empty()) RaiseValueError(std::string(what) + " must not be empty");
  return s;
}

std::string GetOption(const CompileCtxView& v, bp::object key) {
  OpCompileContext& ctx = v.Get();
  const std::string k = StrArg(key, "option key");
  auto value = ctx.GetOption(k);
  if (!value) RaiseKeyError(k);
  return *value;
}

std::string PlatformResource(const PlatformView& v, bp::object group, bp::object key) {
  CheckAlive(*v.lease);  // an expired view raises "expired" whatever the arguments
  const std::string g = StrArg(group, "group");
  const std::string k = StrArg(key, "key");
  auto p = v.Get();
  auto value = p->Get(g, k);
  if (!value) RaiseKeyError(g + ":" + k);
  return *value;
}

bp::dict PlatformGroup(const PlatformView& v, bp::object group) {
  CheckAlive(*v.lease);
  const std::string g = StrArg(group, "group");
  auto p = v.Get();
  auto values = p->GetGroup(g);
  if (!values) RaiseKeyError(g);
  bp::dict d;
  for (const auto& [k, val] : *values) d[k] = val;
  return d;
}

int64_t CoreNumOf(const PlatformInfos& p, const std::string& type) {
  static const std::map<std::string, std::string> kKeys{
      {"AiCore", "ai_core_cnt"}, {"VectorCore", "vector_core_cnt"}, {"CubeCore", "cube_core_cnt"}, {"AiCpu", "ai_cpu_cnt"}};
  auto k = kKeys.find(type);
  if (k == kKeys.end()) RaiseKeyError("SoCInfo:" + type);
  auto n = p.CoreNum(type);
  if (!n) RaiseKeyError("SoCInfo:" + k->second);
  return *n;
}

int64_t CoreNum(const PlatformView& v, bp::object core_type) {
  CheckAlive(*v.lease);
  std::string type;
  if (core_type.is_none()) {
    CheckAlive(*v.lease);
    auto opt = v.ctx->GetOption("ge.coreType");
    type = opt && !opt->empty() ? *opt : v.Get()->DefaultCoreType();
  } else {
    if (!PyUnicode_Check(core_type.ptr())) RaiseTypeError("core_type must be a string or None");
    type = SafeStr(core_type.ptr());
    if (type.empty()) RaiseValueError("core_type must not be empty");
  }
  return CoreNumOf(*v.Get(), type);
}

int64_t AiCoreNum(const PlatformView& v) {
  auto p = v.Get();
  int64_t n = CoreNumOf(*p, "AiCore");
  if (auto limit = v.ctx->GetOption("ge.aicoreNum"); limit && !limit->empty()) {
    std::size_t used = 0;
    long long l = -1;
    try {
      l = std::stoll(*limit, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != limit->size() || l <= 0) {
      RaiseValueError("compile option ge.aicoreNum must be a positive integer, got '" + *limit + "'");
    }
    n = std::min<int64_t>(n, l);
  }
  return n;
}

std::string SocVersion(const PlatformView& v) {
  auto p = v.Get();
  auto s = p->Get("version", "SoC_version");
  if (!s) RaiseKeyError("version:SoC_version");
  return *s;
}

bool CompileActive(const CompileCtxView& v) { return v.lease && v.lease->alive(); }
bool PlatformActive(const PlatformView& v) { return v.lease && v.lease->alive(); }

// Owning PyObject* for the dispatch path.
struct Owned {
  PyObject* p = nullptr;
  Owned() = default;
  explicit Owned(PyObject* o) : p(o) {}
  ~Owned() { Py_XDECREF(p); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
};

// One IR entry's argument: a Tensor, None (absent optional) or a list.
PyObject* EntryArg(bool dynamic, std::size_t start, std::size_t count, Tensor* (*get)(OpCompileContext*, std::size_t),
                   OpCompileContext* ctx, const LeasePtr& lease) {
  if (dynamic) {
    PyObject* l = PyList_New(static_cast<Py_ssize_t>(count));
    if (l == nullptr) bp::throw_error_already_set();
    for (std::size_t i = 0; i < count; ++i) {
      Tensor* t = get(ctx, start + i);
      PyList_SET_ITEM(l, static_cast<Py_ssize_t>(i), bp::incref(MakeTensor(t, nullptr, lease, true).ptr()));
    }
    return l;
  }
  if (count == 0) return Py_NewRef(Py_None);
  return bp::incref(MakeTensor(get(ctx, start), nullptr, lease, true).ptr());
}

}  // namespace

void RegisterCompileViews() {
  bp::object ctx_cls =
      bp::class_<CompileCtxView>("OpCompileContext",
                                 "Context of one schema-bound compile (get_compile_ctx()); borrowed, expires with it.",
                                 bp::no_init)
          .def("__init__", bp::raw_function(&RefuseInit))
          .def("get_option", &GetOption, (bp::arg("self"), bp::arg("key")),
               "get_option(key) -> str (a copy). TypeError for a non-str key, ValueError for an empty one, "
               "KeyError when the option is not set.")
          .def("_is_active", &CompileActive);
  FreezeClass(ctx_cls);

  bp::object plat_cls =
      bp::class_<PlatformView>("CompilePlatformInfo",
                               "Target platform of one compile (get_compile_platform_info()); read lazily, once per "
                               "callback; every method raises RuntimeError 'Failed to get platform infos' when that "
                               "read failed.",
                               bp::no_init)
          .def("__init__", bp::raw_function(&RefuseInit))
          .def("get_platform_resource", &PlatformResource, (bp::arg("self"), bp::arg("group"), bp::arg("key")),
               "get_platform_resource(group, key) -> str; KeyError 'group:key' when absent.")
          .def("get_platform_resource_group", &PlatformGroup, (bp::arg("self"), bp::arg("group")),
               "get_platform_resource_group(group) -> dict[str, str] (a copy); KeyError when absent.")
          .def("get_core_num", &CoreNum, (bp::arg("self"), bp::arg("core_type") = bp::object()),
               "get_core_num(core_type=None) -> int: cores of a type (AiCore, VectorCore, CubeCore, AiCpu); None: "
               "the compile option ge.coreType, else the platform's first core type.")
          .def("get_soc_version", &SocVersion)
          .def("get_ai_core_num", &AiCoreNum,
               "get_ai_core_num() -> int: AI cores, limited by the compile option ge.aicoreNum when set.")
          .def("_is_active", &PlatformActive);
  FreezeClass(plat_cls);
}

Status InvokeCompile(PyObject* method, PyObject* revalidate, PyObject* ctx_var, PyObject* platform_var,
                     OpCompileContext* ctx, const CallSite& site, bool keep_python_error) {
  auto lease = std::make_shared<Lease>(/*read_only=*/true);
  LeaseScope scope(lease);
  auto fail = [&]() -> Status {
    if (keep_python_error) return Status::Error("Python exception pending");
    return Status::Error(FetchPythonError(site.plugin, site.file, site.method));
  };
  try {
    if (revalidate != nullptr && revalidate != Py_None) {
      Owned ok(PyObject_CallNoArgs(revalidate));  // compile is checked again on every call
      if (ok.p == nullptr) return fail();
    }
    const OpSchema& schema = ctx->GetSchema();
    const std::size_t n_in = schema.inputs.size(), n_out = schema.outputs.size();
    Owned args(PyTuple_New(static_cast<Py_ssize_t>(n_in + n_out)));
    if (args.p == nullptr) bp::throw_error_already_set();
    auto in_get = +[](OpCompileContext* c, std::size_t i) { return c->GetInputTensor(i); };
    auto out_get = +[](OpCompileContext* c, std::size_t i) { return c->GetOutputTensor(i); };
    for (std::size_t k = 0; k < n_in; ++k) {
      PyTuple_SET_ITEM(args.p, static_cast<Py_ssize_t>(k),
                       EntryArg(schema.inputs[k].kind == IrInputKind::kDynamic, ctx->InputLayout().Start(k),
                                ctx->InputLayout().Count(k), in_get, ctx, lease));
    }
    for (std::size_t k = 0; k < n_out; ++k) {
      PyTuple_SET_ITEM(args.p, static_cast<Py_ssize_t>(n_in + k),
                       EntryArg(schema.outputs[k].kind == IrOutputKind::kDynamic, ctx->OutputLayout().Start(k),
                                ctx->OutputLayout().Count(k), out_get, ctx, lease));
    }
    Owned kwargs(PyDict_New());
    for (std::size_t i = 0; i < schema.attrs.size(); ++i) {
      bp::object v = AttrToPython(ctx->GetAttrs().At(i), lease);
      if (PyDict_SetItemString(kwargs.p, schema.attrs[i].name.c_str(), v.ptr()) < 0) bp::throw_error_already_set();
    }
    bp::object ctx_obj(CompileCtxView{ctx, lease});
    bp::object plat_obj(PlatformView{ctx, lease});
    Owned t1(PyContextVar_Set(ctx_var, ctx_obj.ptr()));
    if (t1.p == nullptr) bp::throw_error_already_set();
    Owned t2(PyContextVar_Set(platform_var, plat_obj.ptr()));
    if (t2.p == nullptr) {
      PyContextVar_Reset(ctx_var, t1.p);
      bp::throw_error_already_set();
    }
    Owned result(PyObject_Call(method, args.p, kwargs.p));
    {
      PyObject *t, *v, *tb;
      PyErr_Fetch(&t, &v, &tb);
      if (PyContextVar_Reset(platform_var, t2.p) < 0) PyErr_Clear();
      if (PyContextVar_Reset(ctx_var, t1.p) < 0) PyErr_Clear();
      PyErr_Restore(t, v, tb);
    }
    if (result.p == nullptr) return fail();
    if (result.p != Py_None) {
      ErrorInfo e;
      e.plugin = site.plugin;
      e.file = site.file;
      e.call_site = site.method;
      e.exception_type = "TypeError";
      e.message = std::string(keep_python_error ? "" : "TypeError: ") + "compile must return None, got " +
                  Py_TYPE(result.p)->tp_name;
      return Status::Error(e);
    }
    return Status::Ok();
  } catch (const bp::error_already_set&) {
    return fail();
  } catch (const std::exception& e) {
    ErrorInfo info;
    info.plugin = site.plugin;
    info.file = site.file;
    info.call_site = site.method;
    info.message = e.what();
    return Status::Error(info);
  }
}

}  // namespace ge::py
