// views_context.cc: EagerOpExecutionContext, the context of one eager execute (get_execute_ctx()).
#include <optional>
#include <string>

#include "dispatch.h"
#include "errors.h"
#include "views.h"

namespace ge::py {

namespace {

// ---- EagerOpExecutionContext -----------------------------------------------------

// Lookup and allocation failures of the execute context are RuntimeError, as
// in GE ("Raises RuntimeError if unavailable"); bad argument types TypeError.
bp::object CtxGetInput(const ExecCtxView& v, bp::object index) {
  auto& ctx = v.Get();
  std::size_t i = IndexArg(index, "input index");
  ge::Tensor* t = ctx.GetInputTensor(i);
  if (t == nullptr) {
    RaiseRuntimeError("input index " + std::to_string(i) + " out of range: the node has " +
                      std::to_string(ctx.GetInputNum()) + " input instance(s)");
  }
  return MakeTensor(t, t->Owner(), v.lease);
}

// The flattened instance of IR input `ir_index`, number `relative` within it.
// Null for an absent optional input. RuntimeError for a bad IR index.
ge::Tensor* IrInput(const ExecCtxView& v, bp::object ir_index, std::size_t relative, const char* kind) {
  auto& ctx = v.Get();
  const std::size_t ir = IndexArg(ir_index, "ir_index");
  const ge::InstanceLayout& layout = ctx.InputLayout();
  if (ir >= layout.IrNum()) {
    RaiseRuntimeError(std::string(kind) + " input ir_index " + std::to_string(ir) + " out of range: the IR has " +
                      std::to_string(layout.IrNum()) + " input(s)");
  }
  if (relative >= layout.Count(ir)) return nullptr;
  return ctx.GetInputTensor(layout.Start(ir) + relative);
}
bp::object CtxRequiredInput(const ExecCtxView& v, bp::object ir_index) {
  ge::Tensor* t = IrInput(v, ir_index, 0, "required");
  if (t == nullptr) RaiseRuntimeError("required input " + SafeStr(ir_index.ptr()) + " is unavailable");
  return MakeTensor(t, t->Owner(), v.lease);
}
bp::object CtxOptionalInput(const ExecCtxView& v, bp::object ir_index) {
  ge::Tensor* t = IrInput(v, ir_index, 0, "optional");
  if (t == nullptr) return bp::object();
  return MakeTensor(t, t->Owner(), v.lease);
}
bp::object CtxDynamicInput(const ExecCtxView& v, bp::object ir_index, bp::object relative_index) {
  const std::size_t rel = IndexArg(relative_index, "relative_index");
  ge::Tensor* t = IrInput(v, ir_index, rel, "dynamic");
  if (t == nullptr) {
    RaiseRuntimeError("dynamic input " + SafeStr(ir_index.ptr()) + " has no instance " + std::to_string(rel));
  }
  return MakeTensor(t, t->Owner(), v.lease);
}
std::size_t CtxDynamicInputNum(const ExecCtxView& v, bp::object ir_index) {
  auto& ctx = v.Get();
  const std::size_t ir = IndexArg(ir_index, "ir_index");
  if (ir >= ctx.InputLayout().IrNum()) {
    RaiseRuntimeError("dynamic input ir_index " + std::to_string(ir) + " out of range: the IR has " +
                      std::to_string(ctx.InputLayout().IrNum()) + " input(s)");
  }
  return ctx.InputLayout().Count(ir);
}

bp::object CtxGetOutput(const ExecCtxView& v, bp::object index) {
  auto& ctx = v.Get();
  std::size_t i = IndexArg(index, "output index");
  if (i >= ctx.GetOutputNum()) {
    RaiseRuntimeError("output index " + std::to_string(i) + " out of range: the node has " +
                      std::to_string(ctx.GetOutputNum()) + " output instance(s)");
  }
  ge::Tensor* t = ctx.GetOutputTensor(i);
  if (t == nullptr) {
    RaiseRuntimeError("output " + std::to_string(i) +
                      " is unavailable: allocate it first (malloc_output_tensor or make_output_ref_input)");
  }
  return MakeTensor(t, t->Owner(), v.lease);
}

// malloc_output_tensor(index, shape, format, dtype): GE's form. Ours also takes
// (index, shape, dtype): the third argument is then a DataType, which no
// StorageFormat is, so the two forms cannot be confused.
bp::object CtxMallocOutput(const ExecCtxView& v, bp::object index, bp::object shape, bp::object format,
                           bp::object dtype) {
  auto& ctx = v.Get();
  std::size_t i = IndexArg(index, "output index");
  ge::StorageShape ss;
  bp::extract<const StorageShapeView&> as_ss(shape);
  if (as_ss.check()) {
    ss = as_ss().Get();
  } else {
    ss = ge::StorageShape(ShapeFromPython(shape, "output shape"));
  }
  std::optional<ge::StorageFormat> fmt;
  if (dtype.is_none()) {  // ours: (index, shape, dtype)
    if (bp::extract<const StorageFormatView&>(format).check()) {
      RaiseTypeError("malloc_output_tensor(index, shape, format, dtype): dtype is missing");
    }
    dtype = format;
  } else {
    bp::extract<const StorageFormatView&> as_fmt(format);
    if (!as_fmt.check()) {
      RaiseTypeError("malloc_output_tensor format must be a StorageFormat, got " +
                     std::string(Py_TYPE(format.ptr())->tp_name));
    }
    fmt = as_fmt().Get();
  }
  ge::DataType dt = DataTypeArg(dtype, "output data_type", /*strict_enum=*/false);
  ge::Tensor* t = nullptr;
  try {
    t = ctx.MallocOutputTensor(i, ss, dt);
  } catch (const std::bad_alloc&) {
    RaiseRuntimeError("cannot allocate output " + std::to_string(i) + " of shape " + ss.GetStorageShape().ToString());
  } catch (const std::exception& e) {
    RaiseRuntimeError(std::string("malloc_output_tensor(") + std::to_string(i) + "): " + e.what());
  }
  if (fmt) t->MutableDesc().format = *fmt;
  return MakeTensor(t, t->Owner(), v.lease);
}
bp::object CtxRefInput(const ExecCtxView& v, bp::object out_index, bp::object in_index) {
  auto& ctx = v.Get();
  std::size_t o = IndexArg(out_index, "output index");
  std::size_t i = IndexArg(in_index, "input index");
  ge::Tensor* t = ctx.MakeOutputRefInput(o, i);
  if (t == nullptr) {
    // The context's reason ("MakeOutputRefInput(o, i): ..."), said in Python's spelling.
    const std::string args = "(" + std::to_string(o) + ", " + std::to_string(i) + "): ";
    std::string why = ctx.TakeError().message();
    if (why.rfind("MakeOutputRefInput" + args, 0) == 0) why.erase(0, std::string("MakeOutputRefInput").size() + args.size());
    RaiseRuntimeError("make_output_ref_input" + args + why);
  }
  return MakeTensor(t, t->Owner(), v.lease);
}
std::shared_ptr<void> WorkspaceBuffer(const ExecCtxView& v, bp::object size, int64_t* n_out) {
  auto& ctx = v.Get();
  int64_t n = IntArg(size, "workspace size");
  if (n <= 0) RaiseValueError("workspace size must be positive, got " + std::to_string(n));
  *n_out = n;
  try {
    return ctx.MallocWorkspaceBuffer(static_cast<std::size_t>(n));
  } catch (const std::bad_alloc&) {
    RaiseRuntimeError("cannot allocate a workspace of " + std::to_string(n) + " bytes");
  }
}
uintptr_t CtxMallocWorkspace(const ExecCtxView& v, bp::object size) {
  int64_t n = 0;
  return reinterpret_cast<uintptr_t>(WorkspaceBuffer(v, size, &n).get());
}
bp::object CtxMallocWorkspaceBuffer(const ExecCtxView& v, bp::object size) {
  int64_t n = 0;
  std::shared_ptr<void> buf = WorkspaceBuffer(v, size, &n);
  return MakeBufferView(buf.get(), static_cast<std::size_t>(n), false, 'B', 1, {static_cast<Py_ssize_t>(n)}, buf, v.lease);
}
// ---- RuntimeAttrs: the node's attributes by IR index (GE's ctx.get_attrs()) ----------
//
// A view of the context's attributes, borrowed like the context (it expires
// with the callback). GE's typed getters: get_int(index), get_float(index),
// ...; the IR decides each index's type, and asking for another one (or an
// index past the attributes) is GE's RuntimeError "Failed to get runtime attr
// type[VT_X] at index[i]", with what the attribute is.
struct AttrsView {
  const ge::EagerOpExecutionContext* ctx = nullptr;
  LeasePtr lease;
  const ge::EagerOpExecutionContext& Get() const {
    CheckAlive(*lease);
    return *ctx;
  }
};

template <ge::AttrType kType>
bp::object AttrsGet(const AttrsView& v, bp::object index) {
  const ge::EagerOpExecutionContext& ctx = v.Get();
  const ge::RuntimeAttrs& attrs = *ctx.GetAttrs();
  const std::size_t i = IndexArg(index, "attr index");
  const std::string wanted(ge::AttrTypeName(kType));
  const std::string failed = "Failed to get runtime attr type[" + wanted + "] at index[" + std::to_string(i) + "]";
  if (i >= attrs.GetAttrNum()) {
    RaiseRuntimeError(failed + ": the op has " + std::to_string(attrs.GetAttrNum()) + " attr(s)");
  }
  const ge::AttrValue& value = attrs.At(i);
  if (ge::TypeOf(value) != kType) {
    const auto& ir = ctx.GetSchema().attrs;
    const std::string name = i < ir.size() ? " '" + ir[i].name + "'" : std::string();
    RaiseRuntimeError(failed + ": attr " + std::to_string(i) + name + " is " +
                      std::string(ge::AttrTypeName(ge::TypeOf(value))));
  }
  return AttrToPython(value, v.lease);
}
std::size_t AttrsNum(const AttrsView& v) { return v.Get().GetAttrs()->GetAttrNum(); }

bp::object CtxGetAttrs(const ExecCtxView& v) { return bp::object(AttrsView{&v.Get(), v.lease}); }

uintptr_t CtxStream(const ExecCtxView& v) { return reinterpret_cast<uintptr_t>(v.Get().GetStream()); }
std::size_t CtxInputNum(const ExecCtxView& v) { return v.Get().GetInputNum(); }
std::size_t CtxOutputNum(const ExecCtxView& v) { return v.Get().GetOutputNum(); }

}  // namespace

bp::object MakeExecCtx(ge::EagerOpExecutionContext* ctx, const LeasePtr& lease) {
  return bp::object(ExecCtxView{ctx, nullptr, lease, false});
}

void RegisterContextViews() {
  bp::object ctx_cls =
      bp::class_<ExecCtxView>("EagerOpExecutionContext",
                              "Context of one eager execute (get_execute_ctx()); borrowed, expires with the callback.",
                              bp::no_init)
          .def("__init__", bp::raw_function(&RefuseInit))
          .def("get_input_num", &CtxInputNum)
          .def("get_output_num", &CtxOutputNum)
          .def("get_input_tensor", &CtxGetInput, (bp::arg("self"), bp::arg("index")),
               "get_input_tensor(index) -> Tensor (flattened instance index); RuntimeError when unavailable.")
          .def("get_required_input_tensor", &CtxRequiredInput, (bp::arg("self"), bp::arg("ir_index")),
               "get_required_input_tensor(ir_index) -> Tensor; RuntimeError when unavailable.")
          .def("get_optional_input_tensor", &CtxOptionalInput, (bp::arg("self"), bp::arg("ir_index")),
               "get_optional_input_tensor(ir_index) -> Tensor, or None when the input is absent.")
          .def("get_dynamic_input_tensor", &CtxDynamicInput,
               (bp::arg("self"), bp::arg("ir_index"), bp::arg("relative_index")),
               "get_dynamic_input_tensor(ir_index, relative_index) -> Tensor; RuntimeError when unavailable.")
          .def("get_dynamic_input_num", &CtxDynamicInputNum, (bp::arg("self"), bp::arg("ir_index")),
               "get_dynamic_input_num(ir_index) -> int: instances of that IR input.")
          .def("get_output_tensor", &CtxGetOutput, (bp::arg("self"), bp::arg("index")),
               "get_output_tensor(index) -> Tensor; RuntimeError when out of range or not yet allocated.")
          .def("get_attrs", &CtxGetAttrs,
               "get_attrs() -> RuntimeAttrs: the node's attributes by IR index (get_int(index), get_float(index), "
               "...), borrowed like the context.")
          .def("malloc_output_tensor", &CtxMallocOutput,
               (bp::arg("self"), bp::arg("index"), bp::arg("shape"), bp::arg("format"), bp::arg("dtype") = bp::object()),
               "malloc_output_tensor(index, shape: StorageShape, format: StorageFormat, dtype: DataType) -> Tensor "
               "(zero-filled host memory, GE's form); ours also: malloc_output_tensor(index, shape, dtype). "
               "RuntimeError when the output cannot be allocated.")
          .def("make_output_ref_input", &CtxRefInput,
               (bp::arg("self"), bp::arg("output_index"), bp::arg("input_index")),
               "make_output_ref_input(output_index, input_index) -> Tensor sharing the input's memory; "
               "RuntimeError on a lookup failure.")
          .def("malloc_workspace", &CtxMallocWorkspace, (bp::arg("self"), bp::arg("size")),
               "malloc_workspace(size) -> int: the address of size bytes of scratch memory, valid until the "
               "callback returns; ValueError for size <= 0, RuntimeError when it cannot be allocated.")
          .def("malloc_workspace_buffer", &CtxMallocWorkspaceBuffer, (bp::arg("self"), bp::arg("size")),
               "Ours: malloc_workspace_buffer(size) -> writable memoryview of size bytes (expires with the "
               "callback); errors as malloc_workspace.")
          .def("get_stream", &CtxStream)
          .def("_is_active", &ExecCtxView::alive);
  FreezeClass(ctx_cls);
  using ge::AttrType;
  bp::object attrs_cls =
      bp::class_<AttrsView>("RuntimeAttrs",
                            "The attributes of one eager execute by IR index (EagerOpExecutionContext.get_attrs()); "
                            "borrowed, expires with the callback.",
                            bp::no_init)
          .def("__init__", bp::raw_function(&RefuseInit))
          .def("get_int", &AttrsGet<AttrType::VT_INT>, (bp::arg("self"), bp::arg("index")))
          .def("get_float", &AttrsGet<AttrType::VT_FLOAT>, (bp::arg("self"), bp::arg("index")))
          .def("get_bool", &AttrsGet<AttrType::VT_BOOL>, (bp::arg("self"), bp::arg("index")))
          .def("get_str", &AttrsGet<AttrType::VT_STRING>, (bp::arg("self"), bp::arg("index")))
          .def("get_data_type", &AttrsGet<AttrType::VT_DATA_TYPE>, (bp::arg("self"), bp::arg("index")))
          .def("get_tensor", &AttrsGet<AttrType::VT_TENSOR>, (bp::arg("self"), bp::arg("index")))
          .def("get_list_int", &AttrsGet<AttrType::VT_LIST_INT>, (bp::arg("self"), bp::arg("index")))
          .def("get_list_float", &AttrsGet<AttrType::VT_LIST_FLOAT>, (bp::arg("self"), bp::arg("index")))
          .def("get_list_bool", &AttrsGet<AttrType::VT_LIST_BOOL>, (bp::arg("self"), bp::arg("index")))
          .def("get_list_str", &AttrsGet<AttrType::VT_LIST_STRING>, (bp::arg("self"), bp::arg("index")))
          .def("get_list_data_type", &AttrsGet<AttrType::VT_LIST_DATA_TYPE>, (bp::arg("self"), bp::arg("index")))
          .def("get_list_list_int", &AttrsGet<AttrType::VT_LIST_LIST_INT>, (bp::arg("self"), bp::arg("index")))
          .def("get_attr_num", &AttrsNum);
  FreezeClass(attrs_cls);
}

}  // namespace ge::py
