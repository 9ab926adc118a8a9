// compile.cc: OpCompileContext / CompilePlatformInfo views and the
// schema-bound `compile` dispatch (share/docs/compile.md).
#include <boost/python.hpp>

#include <optional>

#include "dispatch.h"
#include "errors.h"
#include "views.h"

namespace ge::py {

namespace {

using CompileCtxView = View<OpCompileContext>;

// A separate object from the context (share/docs/compile.md: the compile context itself has
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


std::string StrArg(bp::object o, const char* what) {
  if (!PyUnicode_Check(o.ptr())) {
    RaiseTypeError(std::string(what) + " must be a str, got " + Py_TYPE(o.ptr())->tp_name);
  }
  std::string s = SafeStr(o.ptr());
  if (s.empty()) RaiseValueError(std::string(what) + " must not be empty");
  if (s.find('\0') != std::string::npos) RaiseValueError(std::string(what) + " must not contain a NUL character");
  return s;
}

// A str from configuration bytes that may not be UTF-8 (undecodable bytes
// become surrogate escapes, as os.fsdecode does, instead of an exception).
bp::object Text(const std::string& s) {
  PyObject* u = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (u == nullptr) bp::throw_error_already_set();
  return bp::object(bp::handle<>(u));
}

// A strictly decimal, positive count ("4"; not " 4", "+4" or "").
std::optional<int64_t> PositiveCount(const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int64_t v = std::stoll(s);
  return v > 0 ? std::optional<int64_t>(v) : std::nullopt;
}

bp::object GetOption(const CompileCtxView& v, bp::object key) {
  OpCompileContext& ctx = v.Get();
  const std::string k = StrArg(key, "option key");
  auto value = ctx.GetOption(k);
  if (!value) RaiseKeyError(k);
  return Text(*value);
}

bp::object PlatformResource(const PlatformView& v, bp::object group, bp::object key) {
  CheckAlive(*v.lease);  // an expired view raises "expired" whatever the arguments
  const std::string g = StrArg(group, "group");
  const std::string k = StrArg(key, "key");
  auto p = v.Get();
  auto value = p->Get(g, k);
  if (!value) RaiseKeyError(g + ":" + k);
  return Text(*value);
}

bp::dict PlatformGroup(const PlatformView& v, bp::object group) {
  CheckAlive(*v.lease);
  const std::string g = StrArg(group, "group");
  auto p = v.Get();
  auto values = p->GetGroup(g);
  if (!values) RaiseKeyError(g);
  bp::dict d;
  for (const auto& [k, val] : *values) d[Text(k)] = Text(val);
  return d;
}

int64_t CoreNumOf(const PlatformInfos& p, const std::string& type) {
  static const std::map<std::string, std::string> kKeys{
      {"AiCore", "ai_core_cnt"}, {"VectorCore", "vector_core_cnt"}, {"CubeCore", "cube_core_cnt"}, {"AiCpu", "ai_cpu_cnt"}};
  auto k = kKeys.find(type);
  if (k == kKeys.end()) RaiseKeyError("SoCInfo:" + type);
  auto raw = p.Get("SoCInfo", k->second);
  if (!raw) RaiseKeyError("SoCInfo:" + k->second);
  auto n = p.CoreNum(type);
  if (!n) RaiseValueError("platform value SoCInfo:" + k->second + " is not a non-negative integer: '" + *raw + "'");
  return *n;
}

int64_t CoreNum(const PlatformView& v, bp::object core_type) {
  CheckAlive(*v.lease);
  std::string type;
  if (core_type.is_none()) {
    CheckAlive(*v.lease);
    auto opt = v.ctx->GetOption("ge.coreType");
    if (opt && opt->empty()) RaiseValueError("compile option ge.coreType must not be empty");
    type = opt ? *opt : v.Get()->DefaultCoreType();
    if (type.empty()) RaiseValueError("the platform's SoCInfo:core_type_list starts with an empty entry");
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
  if (auto limit = v.ctx->GetOption("ge.aicoreNum")) {
    auto l = PositiveCount(*limit);
    if (!l) RaiseValueError("compile option ge.aicoreNum must be a positive integer, got '" + *limit + "'");
    n = std::min<int64_t>(n, *l);
  }
  return n;
}

bp::object SocVersion(const PlatformView& v) {
  auto p = v.Get();
  auto s = p->Get("version", "SoC_version");
  if (!s) RaiseKeyError("version:SoC_version");
  return Text(*s);
}

bool PlatformActive(const PlatformView& v) { return v.lease && v.lease->alive(); }

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
          .def("_is_active", &CompileCtxView::alive);
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
  try {
    if (revalidate != nullptr && revalidate != Py_None) {
      OwnedRef ok = OwnedRef::Steal(PyObject_CallNoArgs(revalidate));  // compile is checked again on every call
      if (ok.get() == nullptr) return PythonErrorStatus(site, keep_python_error);
    }
    const OpSchema& schema = ctx->GetSchema();
    const std::size_t n_in = schema.inputs.size();
    OwnedRef args = OwnedRef::Steal(PyTuple_New(static_cast<Py_ssize_t>(n_in + schema.outputs.size())));
    if (args.get() == nullptr) bp::throw_error_already_set();
    SetEntryArgs(args.get(), 0, DynamicInputs(schema), ctx->InputLayout(),
                 [ctx](std::size_t i) { return ctx->GetInputTensor(i); }, lease, /*with_data=*/false);
    SetEntryArgs(args.get(), static_cast<Py_ssize_t>(n_in), DynamicOutputs(schema), ctx->OutputLayout(),
                 [ctx](std::size_t i) { return ctx->GetOutputTensor(i); }, lease, /*with_data=*/false);
    OwnedRef kwargs = AttrKwargs(schema, *ctx->GetAttrs(), lease);
    bp::object ctx_obj(CompileCtxView{ctx, nullptr, lease});
    bp::object plat_obj(PlatformView{ctx, lease});
    return CallSchemaBound(method, args.get(), kwargs.get(), {{ctx_var, ctx_obj.ptr()}, {platform_var, plat_obj.ptr()}},
                           site, keep_python_error);
  } catch (const bp::error_already_set&) {
    return PythonErrorStatus(site, keep_python_error);
  } catch (const std::exception& e) {
    return CppErrorStatus(site, e);
  }
}

}  // namespace ge::py
