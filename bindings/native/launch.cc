// launch.cc: AnnotatedArgsContext / AnnotatedKernelArgs / WorkspaceAddr views
// and the schema-bound `declare_launch_args` dispatch (share/docs/launch-args.md).
#include <boost/python.hpp>

#include "dispatch.h"
#include "errors.h"
#include "views.h"

namespace ge::py {

namespace {

using LaunchCtxView = View<AnnotatedArgsContext>;

// The argument list being built; shared so that add_launch can mark it consumed.
struct ArgsState {
  AnnotatedArgsContext* ctx = nullptr;
  std::vector<KernelArgSlot> slots;
  bool consumed = false;
};

struct KernelArgsView {
  std::shared_ptr<ArgsState> state;
  LeasePtr lease;
  ArgsState& Get() const {
    CheckAlive(*lease);
    if (state->consumed) RaiseRuntimeError("AnnotatedKernelArgs has been consumed by add_launch");
    return *state;
  }
};

struct WorkspaceView {
  AnnotatedArgsContext* ctx = nullptr;
  std::size_t index = 0;
  std::size_t size = 0;
  LeasePtr lease;
};


uint64_t NonNegative(bp::object o, const char* what) {
  long long v = 0;
  int overflow = 0;
  if (!IndexValue(o.ptr(), &v, &overflow)) {
    RaiseTypeError(std::string(what) + " must be an int, got " + Py_TYPE(o.ptr())->tp_name);
  }
  if (overflow < 0 || (overflow == 0 && v < 0)) RaiseTypeError(std::string(what) + " must not be negative");
  if (overflow > 0) {
    bp::handle<> exact(IndexObject(o.ptr()));
    const unsigned long long u = PyLong_AsUnsignedLongLong(exact.get());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      RaiseValueError(std::string(what) + " does not fit in uint64");
    }
    return u;
  }
  return static_cast<uint64_t>(v);
}

bp::object MallocWorkspace(const LaunchCtxView& v, bp::object size) {
  AnnotatedArgsContext& ctx = v.Get();
  const uint64_t n = NonNegative(size, "workspace size");
  if (n == 0) RaiseValueError("workspace size must be positive, got 0");
  if (n > (uint64_t{1} << 40)) RaiseValueError("workspace size " + std::to_string(n) + " bytes is too large");
  const gert::WorkspaceAddr ws = ctx.MallocWorkSpace(static_cast<std::size_t>(n));
  if (ws.addr == nullptr) {
    ctx.TakeError();  // the same reason, said for Python below
    RaiseRuntimeError("cannot allocate a workspace of " + std::to_string(n) + " bytes");
  }
  return bp::object(WorkspaceView{&ctx, ws.index, static_cast<std::size_t>(n), v.lease});
}

int64_t StreamId(const LaunchCtxView& v) { return v.Get().GetStreamId(); }

bp::object CreateKernelArgs(const LaunchCtxView& v) {
  auto state = std::make_shared<ArgsState>();
  state->ctx = &v.Get();
  return bp::object(KernelArgsView{state, v.lease});
}

void AppendTensor(const KernelArgsView& a, bp::object index, bp::object tensor, bool input) {
  ArgsState& st = a.Get();
  const uint64_t i = NonNegative(index, "instance_index");
  const std::size_t n = input ? st.ctx->GetInputNum() : st.ctx->GetOutputNum();
  if (i >= n) {
    RaiseIndexError(std::string(input ? "input" : "output") + " instance_index " + std::to_string(i) +
                    " out of range: the node has " + std::to_string(n) + " " + (input ? "input" : "output") +
                    " instance(s)");
  }
  if (!tensor.is_none()) {
    bp::extract<const TensorView&> t(tensor);
    if (!t.check()) RaiseTypeError("tensor must be a Tensor of this node or None");
    Tensor* expected = input ? st.ctx->GetInputTensor(i) : st.ctx->GetOutputTensor(i);
    if (t().Get().GetAddr() != nullptr || t().ptr != expected) {
      RaiseValueError("tensor is not " + std::string(input ? "input" : "output") + " instance " + std::to_string(i) +
                      " of this node");
    }
  }
  st.slots.push_back({input ? KernelArgSlot::Kind::kInput : KernelArgSlot::Kind::kOutput, i});
}

void AppendInput(const KernelArgsView& a, bp::object index, bp::object tensor) { AppendTensor(a, index, tensor, true); }
void AppendOutput(const KernelArgsView& a, bp::object index, bp::object tensor) { AppendTensor(a, index, tensor, false); }

void AppendWorkspace(const KernelArgsView& a, bp::object ws) {
  ArgsState& st = a.Get();
  bp::extract<const WorkspaceView&> w(ws);
  if (!w.check()) RaiseTypeError("append_workspace takes a WorkspaceAddr from malloc_workspace");
  CheckAlive(*w().lease);
  if (w().ctx != st.ctx) RaiseValueError("the WorkspaceAddr belongs to another declare_launch_args call");
  st.slots.push_back({KernelArgSlot::Kind::kWorkspace, w().index});
}

void AppendScalar(const KernelArgsView& a, bp::object value) {
  ArgsState& st = a.Get();
  st.slots.push_back({KernelArgSlot::Kind::kScalar, NonNegative(value, "scalar")});
}

std::size_t ArgsLen(const KernelArgsView& a) { return a.Get().slots.size(); }

void AddLaunch(const LaunchCtxView& v, bp::object info, bp::object args) {
  AnnotatedArgsContext& ctx = v.Get();
  bp::object cls = bp::import("ge.custom_op").attr("AnnotatedKernelLaunchInfo");
  const int is_info = PyObject_IsInstance(info.ptr(), cls.ptr());
  if (is_info < 0) bp::throw_error_already_set();
  if (is_info == 0) {
    RaiseTypeError("add_launch takes an AnnotatedKernelLaunchInfo, got " + std::string(Py_TYPE(info.ptr())->tp_name));
  }
  bp::extract<const KernelArgsView&> a(args);
  if (!a.check()) {
    RaiseTypeError("add_launch takes AnnotatedKernelArgs from create_kernel_args(), got " +
                   std::string(Py_TYPE(args.ptr())->tp_name));
  }
  ArgsState& st = a().Get();
  if (st.ctx != &ctx) RaiseValueError("the AnnotatedKernelArgs belong to another declare_launch_args call");
  KernelLaunch launch;
  launch.kernel_name = bp::extract<std::string>(info.attr("kernel_name"));
  bp::object bin = info.attr("kernel_bin");
  if (!PyBytes_Check(bin.ptr())) RaiseTypeError("kernel_bin must be bytes");
  launch.kernel_bin = std::make_shared<const std::string>(PyBytes_AS_STRING(bin.ptr()),
                                                          static_cast<std::size_t>(PyBytes_GET_SIZE(bin.ptr())));
  const uint64_t block_dim = NonNegative(info.attr("block_dim"), "block_dim");
  if (block_dim > 0xFFFFFFFFULL) RaiseValueError("block_dim must fit in uint32");
  launch.block_dim = static_cast<uint32_t>(block_dim);
  bp::object stream = info.attr("stream_id");
  long long sid = 0;
  int overflow = 0;
  if (!IndexValue(stream.ptr(), &sid, &overflow)) RaiseTypeError("stream_id must be an int");
  if (overflow != 0) RaiseValueError("stream_id must fit in int64");
  launch.stream_id = sid;
  launch.args = st.slots;
  try {
    ctx.AddLaunch(std::move(launch));
  } catch (const std::invalid_argument& e) {
    RaiseValueError(e.what());
  }
  st.consumed = true;  // any later use raises "has been consumed"
}

std::size_t WsSize(const WorkspaceView& w) {
  CheckAlive(*w.lease);
  return w.size;
}
std::size_t WsIndex(const WorkspaceView& w) {
  CheckAlive(*w.lease);
  return w.index;
}
uintptr_t WsAddr(const WorkspaceView& w) {
  CheckAlive(*w.lease);
  return reinterpret_cast<uintptr_t>(w.ctx->WorkspaceAddress(w.index));
}

}  // namespace

void RegisterLaunchViews() {
  bp::object ctx_cls =
      bp::class_<LaunchCtxView>("AnnotatedArgsContext",
                                "Context of one declare_launch_args (get_declare_launch_args_ctx()); borrowed.",
                                bp::no_init)
          .def("__init__", bp::raw_function(&RefuseInit))
          .def("malloc_workspace", &MallocWorkspace, (bp::arg("self"), bp::arg("size")),
               "malloc_workspace(size) -> WorkspaceAddr: a workspace of size bytes for every run (ValueError for 0).")
          .def("get_stream_id", &StreamId)
          .def("create_kernel_args", &CreateKernelArgs, "create_kernel_args() -> AnnotatedKernelArgs (empty).")
          .def("add_launch", &AddLaunch, (bp::arg("self"), bp::arg("launch_info"), bp::arg("args")),
               "add_launch(launch_info, args): declares one launch; consumes args. ValueError on a stream mismatch.")
          .def("_is_active", &LaunchCtxView::alive);
  FreezeClass(ctx_cls);

  bp::object args_cls =
      bp::class_<KernelArgsView>("AnnotatedKernelArgs",
                                 "Argument slots of one kernel launch, in order; consumed by add_launch.", bp::no_init)
          .def("__init__", bp::raw_function(&RefuseInit))
          .def("append_input", &AppendInput, (bp::arg("self"), bp::arg("instance_index"), bp::arg("tensor") = bp::object()),
               "append_input(instance_index, tensor=None): the address of the node's flattened input instance. "
               "IndexError out of range, TypeError when negative.")
          .def("append_output", &AppendOutput,
               (bp::arg("self"), bp::arg("instance_index"), bp::arg("tensor") = bp::object()),
               "append_output(instance_index, tensor=None): the address of the node's flattened output instance.")
          .def("append_workspace", &AppendWorkspace, (bp::arg("self"), bp::arg("workspace")))
          .def("append_scalar", &AppendScalar, (bp::arg("self"), bp::arg("value")),
               "append_scalar(value): a uint64 slot; TypeError when negative.")
          .def("__len__", &ArgsLen);
  FreezeClass(args_cls);

  bp::object ws_cls = bp::class_<WorkspaceView>("WorkspaceAddr", "A workspace of the task plan (borrowed).", bp::no_init)
                          .def("__init__", bp::raw_function(&RefuseInit))
                          .add_property("size", &WsSize)
                          .add_property("index", &WsIndex, "Workspace index in the task plan.")
                          .add_property("addr", &WsAddr,
                                        "Host address (int) of the workspace: the plan allocates it when declared "
                                        "and every run reuses it.");
  FreezeClass(ws_cls);
}

Status InvokeDeclareLaunchArgs(PyObject* method, PyObject* ctx_var, AnnotatedArgsContext* ctx, const CallSite& site,
                               bool keep_python_error) {
  auto lease = std::make_shared<Lease>(/*read_only=*/true);
  LeaseScope scope(lease);
  try {
    const OpSchema& schema = ctx->GetSchema();
    const std::size_t n_in = schema.inputs.size();
    OwnedRef args = OwnedRef::Steal(PyTuple_New(static_cast<Py_ssize_t>(n_in + schema.outputs.size())));
    if (args.get() == nullptr) bp::throw_error_already_set();
    SetEntryArgs(args.get(), 0, DynamicInputs(schema), ctx->InputLayout(),
                 [ctx](std::size_t i) { return ctx->GetInputTensor(i); }, lease, /*with_data=*/false);
    SetEntryArgs(args.get(), static_cast<Py_ssize_t>(n_in), DynamicOutputs(schema), ctx->OutputLayout(),
                 [ctx](std::size_t i) { return ctx->GetOutputTensor(i); }, lease, /*with_data=*/false);
    OwnedRef kwargs = AttrKwargs(schema, *ctx->GetAttrs(), lease);
    bp::object ctx_obj(LaunchCtxView{ctx, nullptr, lease});
    Status st = CallSchemaBound(method, args.get(), kwargs.get(), {{ctx_var, ctx_obj.ptr()}}, site, keep_python_error);
    if (st.ok() && ctx->Plan().launches.empty()) {
      return CppErrorStatus(site, std::runtime_error("declare_launch_args declared no launch (call add_launch at least once)"));
    }
    return st;
  } catch (const bp::error_already_set&) {
    return PythonErrorStatus(site, keep_python_error);
  } catch (const std::exception& e) {
    return CppErrorStatus(site, e);
  }
}

}  // namespace ge::py
