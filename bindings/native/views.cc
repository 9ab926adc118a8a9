// views.cc: Shape, StorageShape, StorageFormat, ExpandDimsType, TensorDesc,
// Tensor (with zero-copy .data and __array_interface__), the eager execution
// context, and the stdout/stderr writer used to capture plugin output.
#include "views.h"

#include "ge/text.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <mutex>
#include <sstream>

#include "errors.h"

namespace ge::py {

namespace {

// ---- helpers ----------------------------------------------------------------


bp::object EnumMember(const char* module, const char* cls, int value) {
  bp::object enum_cls = bp::import(module).attr(cls);
  PyObject* r = PyObject_CallFunction(enum_cls.ptr(), "i", value);
  if (r == nullptr) {  // a value the enum lacks: keep the int rather than fail a getter
    PyErr_Clear();
    return bp::object(value);
  }
  return bp::object(bp::handle<>(r));
}

bp::list DimsList(const ge::Shape& s) {
  bp::list l;
  for (std::size_t i = 0; i < s.GetDimNum(); ++i) l.append(s.GetDim(i));
  return l;
}

int64_t IntArg(bp::object obj, const std::string& what) {
  long long v = 0;
  int overflow = 0;
  if (!IndexValue(obj.ptr(), &v, &overflow)) {
    RaiseTypeError(what + " must be an int, got " + std::string(Py_TYPE(obj.ptr())->tp_name));
  }
  if (overflow != 0) RaiseValueError(what + " does not fit in int64");
  return v;
}

std::size_t IndexArg(bp::object obj, const std::string& what) {
  int64_t v = IntArg(obj, what);
  if (v < 0) RaiseTypeError(what + " must be a non-negative int, got " + std::to_string(v));
  return static_cast<std::size_t>(v);
}

// A value a plugin constructs (StorageShape(...), TensorDesc(...)): the
// Python object owns `owned`; its views share an owner lease that the deleter
// expires when that Python object is freed (Boost.Python drops the holder's
// shared_ptr then, in the owning interpreter, GIL held), so a view such as
// `desc.shape` kept past its TensorDesc raises instead of reading it.
template <typename T>
std::shared_ptr<View<T>> NewOwnerView(std::shared_ptr<T> owned, const char* owner) {
  auto* v = new View<T>{owned.get(), owned, Lease::ForOwner(owner), false};
  return std::shared_ptr<View<T>>(v, [](View<T>* p) {
    p->lease->Expire();
    delete p;
  });
}

// ---- Shape ------------------------------------------------------------------

bp::list ShapeDims(const ShapeView& v) { return DimsList(v.Get()); }
std::size_t ShapeDimNum(const ShapeView& v) { return v.Get().GetDimNum(); }
int64_t ShapeSize(const ShapeView& v) { return v.Get().GetShapeSize(); }
int64_t ShapeGetDim(const ShapeView& v, bp::object i) {
  const ge::Shape& s = v.Get();
  int64_t idx = IntArg(i, "index");
  if (idx < 0 || static_cast<std::size_t>(idx) >= s.GetDimNum()) {
    RaiseValueError("dim index " + std::to_string(idx) + " out of range for rank " + std::to_string(s.GetDimNum()));
  }
  return s.GetDim(static_cast<std::size_t>(idx));
}
void ShapeSetDim(const ShapeView& v, bp::object i, bp::object value) {
  ge::Shape& s = v.Mut();
  int64_t idx = IntArg(i, "index");
  int64_t val = IntArg(value, "dim value");
  if (idx < 0 || static_cast<std::size_t>(idx) >= s.GetDimNum()) {
    RaiseValueError("dim index " + std::to_string(idx) + " out of range for rank " + std::to_string(s.GetDimNum()));
  }
  s.SetDim(static_cast<std::size_t>(idx), val);
}
void ShapeAppendDim(const ShapeView& v, bp::object value) {
  ge::Shape& s = v.Mut();
  int64_t val = IntArg(value, "dim value");
  if (s.GetDimNum() >= ge::kMaxDimNum) {
    RaiseValueError("cannot append a dim: the shape already has the maximum rank " + std::to_string(ge::kMaxDimNum));
  }
  s.AppendDim(val);
}
bool ShapeIsScalar(const ShapeView& v) { return v.Get().IsScalar(); }
void ShapeSetScalar(const ShapeView& v) { v.Mut().SetScalar(); }
std::string ShapeRepr(const ShapeView& v) {
  if (!v.alive()) return "<Shape (expired)>";
  return "Shape(" + v.ptr->ToString() + ")";
}
bool ShapeEq(const ShapeView& v, bp::object other) {
  bp::extract<const ShapeView&> as_view(other);
  if (as_view.check()) return v.Get() == as_view().Get();
  if (PyList_Check(other.ptr()) || PyTuple_Check(other.ptr())) {
    try {
      return v.Get() == ShapeFromPython(other, "shape");
    } catch (const bp::error_already_set&) {
      PyErr_Clear();
      return false;
    }
  }
  return false;
}

bp::object NewShapeView(ge::Shape* s, const std::shared_ptr<void>& keep, const LeasePtr& lease, bool ro) {
  return bp::object(ShapeView{s, keep, lease, ro});
}

// ---- StorageShape -------------------------------------------------------------

std::shared_ptr<StorageShapeView> NewStorageShape(bp::object origin, bp::object storage) {
  auto owned = std::make_shared<ge::StorageShape>();
  if (!origin.is_none() || !storage.is_none()) {
    if (origin.is_none() || storage.is_none()) {
      RaiseTypeError("StorageShape takes no arguments or both origin and storage");
    }
    *owned = ge::StorageShape(ShapeFromPython(origin, "origin"), ShapeFromPython(storage, "storage"));
  }
  return NewOwnerView(std::move(owned), "StorageShape");
}

bp::object SSOrigin(const StorageShapeView& v) {
  return NewShapeView(&v.Get().MutableOriginShape(), v.keep, v.lease, v.read_only);
}
bp::object SSStorage(const StorageShapeView& v) {
  return NewShapeView(&v.Get().MutableStorageShape(), v.keep, v.lease, v.read_only);
}
void SSSetOrigin(const StorageShapeView& v, bp::object dims) {
  ge::Shape s = ShapeFromPython(dims, "origin shape");
  v.Mut().MutableOriginShape() = s;
}
void SSSetStorage(const StorageShapeView& v, bp::object dims) {
  ge::Shape s = ShapeFromPython(dims, "storage shape");
  v.Mut().MutableStorageShape() = s;
}
std::string SSRepr(const StorageShapeView& v) {
  if (!v.alive()) return "<StorageShape (expired)>";
  return "StorageShape(origin=" + v.ptr->GetOriginShape().ToString() + ", storage=" +
         v.ptr->GetStorageShape().ToString() + ")";
}
bool SSEq(const StorageShapeView& v, bp::object other) {
  bp::extract<const StorageShapeView&> o(other);
  return o.check() && v.Get() == o().Get();
}

// ---- ExpandDimsType (owned snapshot) -----------------------------------------

std::shared_ptr<ge::ExpandDimsType> ParseExpandDims(bp::object rule) {
  if (rule.is_none()) return std::make_shared<ge::ExpandDimsType>();
  if (PyUnicode_Check(rule.ptr())) {
    try {
      return std::make_shared<ge::ExpandDimsType>(std::string(bp::extract<std::string>(rule)));
    } catch (const std::invalid_argument& e) {
      RaiseValueError(e.what());
    }
  }
  if (PyObject* as_int = IndexObject(rule.ptr())) {
    Py_DECREF(as_int);
    try {
      return std::make_shared<ge::ExpandDimsType>(IntArg(rule, "expand dims mask"));
    } catch (const std::invalid_argument& e) {
      RaiseValueError(e.what());
    }
  }
  RaiseTypeError("ExpandDimsType takes a rule string such as \"101\" or an int mask, got " +
                 std::string(Py_TYPE(rule.ptr())->tp_name));
}
std::shared_ptr<ExpandDimsView> NewExpandDims(bp::object rule) {
  return NewOwnerView(ParseExpandDims(rule), "ExpandDimsType");
}
std::string EdtRepr(const ExpandDimsView& e) {
  if (!e.alive()) return "<ExpandDimsType (expired)>";
  return "ExpandDimsType(\"" + e.ptr->ToString() + "\")";
}
bool EdtIsExpand(const ExpandDimsView& e, bp::object i) { return e.Get().IsExpandIndex(IndexArg(i, "index")); }
void EdtSetExpand(const ExpandDimsView& e, bp::object i) {
  const std::size_t index = IndexArg(i, "index");
  ge::ExpandDimsType& rule = e.Mut();
  try {
    rule.SetExpandIndex(index);
  } catch (const std::out_of_range& ex) {
    RaiseValueError(ex.what());
  }
}
bp::object NewExpandView(ge::ExpandDimsType* e, const std::shared_ptr<void>& keep, const LeasePtr& lease, bool ro) {
  return bp::object(ExpandDimsView{e, keep, lease, ro});
}

// ---- StorageFormat ------------------------------------------------------------

// A Format argument: a ge.graph.Format member or a plain int, in the range of
// the C++ enum. Another IntEnum (a DataType) is a TypeError, not silently a format.
ge::Format FormatArg(bp::object obj, const std::string& what) {
  if (Py_TYPE(obj.ptr()) != &PyLong_Type) {
    bp::object fmt_cls = bp::import("ge.graph").attr("Format");
    const int is_fmt = PyObject_IsInstance(obj.ptr(), fmt_cls.ptr());
    if (is_fmt < 0) bp::throw_error_already_set();
    if (is_fmt == 0) RaiseTypeError(what + " must be a Format (ge.graph.Format) or an int, got " + Py_TYPE(obj.ptr())->tp_name);
  }
  int64_t v = IntArg(obj, what);
  if (v < 0 || v > INT32_MAX) RaiseValueError(what + " must be in [0, 2147483647], got " + std::to_string(v));
  return static_cast<ge::Format>(v);
}

std::shared_ptr<StorageFormatView> NewStorageFormat(bp::object origin, bp::object storage, bp::object expand) {
  auto owned = std::make_shared<ge::StorageFormat>();
  if (!origin.is_none()) owned->SetOriginFormat(FormatArg(origin, "origin_format"));
  owned->SetStorageFormat(storage.is_none() ? owned->GetOriginFormat() : FormatArg(storage, "storage_format"));
  if (!expand.is_none()) {
    bp::extract<const ExpandDimsView&> e(expand);
    if (!e.check()) RaiseTypeError("expand_dims_type must be an ExpandDimsType");
    owned->SetExpandDimsType(e().Get());
  }
  return NewOwnerView(std::move(owned), "StorageFormat");
}
bp::object SFOrigin(const StorageFormatView& v) { return FormatEnum(v.Get().GetOriginFormat()); }
bp::object SFStorage(const StorageFormatView& v) { return FormatEnum(v.Get().GetStorageFormat()); }
bp::object SFExpand(const StorageFormatView& v) {
  return NewExpandView(&v.Get().MutableExpandDimsType(), v.keep, v.lease, v.read_only);
}
void SFSetOrigin(const StorageFormatView& v, bp::object f) { v.Mut().SetOriginFormat(FormatArg(f, "format")); }
void SFSetStorage(const StorageFormatView& v, bp::object f) { v.Mut().SetStorageFormat(FormatArg(f, "format")); }
void SFSetExpand(const StorageFormatView& v, bp::object e) {
  bp::extract<const ExpandDimsView&> x(e);
  if (!x.check()) RaiseTypeError("expand_dims_type must be an ExpandDimsType");
  ge::ExpandDimsType rule = x().Get();
  v.Mut().SetExpandDimsType(rule);
}

// ---- TensorDesc ---------------------------------------------------------------

// GE's TensorDesc shape argument: a StorageShape (copied), a list of ints (origin
// and storage both), or None (a scalar). Anything else, including a tuple or a
// list holding bools or floats, is a TypeError; more dims than kMaxDimNum a ValueError.
ge::StorageShape TensorDescShapeArg(bp::object shape) {
  static const std::string kExpected = "TensorDesc shape must be a StorageShape, list of integers, or None";
  if (shape.is_none()) return ge::StorageShape();
  bp::extract<const StorageShapeView&> ss(shape);
  if (ss.check()) return ss().Get();
  if (!PyList_Check(shape.ptr())) RaiseTypeError(kExpected + ", got " + Py_TYPE(shape.ptr())->tp_name);
  const Py_ssize_t n = PyList_GET_SIZE(shape.ptr());
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyList_GET_ITEM(shape.ptr(), i);
    PyObject* as_int = IndexObject(item);
    Py_XDECREF(as_int);
    if (as_int == nullptr) {
      RaiseTypeError(kExpected + ", got a list holding " + Py_TYPE(item)->tp_name + " at index " +
                     std::to_string(i));
    }
  }
  if (static_cast<std::size_t>(n) > ge::kMaxDimNum) {
    RaiseValueError("TensorDesc shape exceeds the maximum dimension count " + std::to_string(ge::kMaxDimNum) +
                    ": got " + std::to_string(n) + " dims");
  }
  return ge::StorageShape(ShapeFromPython(shape, "TensorDesc shape"));
}

std::shared_ptr<TensorDescView> NewTensorDesc(bp::object shape, bp::object data_type) {
  auto owned = std::make_shared<ge::TensorDesc>();
  owned->shape = TensorDescShapeArg(shape);
  owned->data_type = DataTypeArg(data_type, "TensorDesc data_type");
  return NewOwnerView(std::move(owned), "TensorDesc");
}
void TDSetShape(const TensorDescView& v, bp::object shape) {
  ge::StorageShape parsed = TensorDescShapeArg(shape);  // parse before touching the value
  v.Mut().shape = parsed;
}
bp::object TDShape(const TensorDescView& v) {
  return bp::object(StorageShapeView{&v.Get().shape, v.keep, v.lease, v.read_only});
}
bp::object TDOrigin(const TensorDescView& v) {
  return NewShapeView(&v.Get().shape.MutableOriginShape(), v.keep, v.lease, v.read_only);
}
bp::object TDStorage(const TensorDescView& v) {
  return NewShapeView(&v.Get().shape.MutableStorageShape(), v.keep, v.lease, v.read_only);
}
bp::object TDFormat(const TensorDescView& v) {
  return bp::object(StorageFormatView{&v.Get().format, v.keep, v.lease, v.read_only});
}
bp::object TDDataType(const TensorDescView& v) { return DataTypeEnum(v.Get().data_type); }
void TDSetDataType(const TensorDescView& v, bp::object dt) {
  ge::DataType d = DataTypeArg(dt, "data_type");
  v.Mut().data_type = d;
}
std::string TDRepr(const TensorDescView& v) {
  if (!v.alive()) return "<TensorDesc (expired)>";
  return "TensorDesc(" + v.ptr->shape.GetStorageShape().ToString() + ", " + ge::DataTypeName(v.ptr->data_type) + ")";
}
bool TDEq(const TensorDescView& v, bp::object other) {
  bp::extract<const TensorDescView&> o(other);
  return o.check() && v.Get() == o().Get();
}

// ---- Tensor -------------------------------------------------------------------

// The buffer exporter behind Tensor.data: a tiny static type implementing the
// buffer protocol (a memoryview over it is zero-copy). It keeps the tensor's
// buffer owner alive, so a view kept past the callback never reads freed memory;
// the memoryview itself is released when the callback's lease expires.
struct TensorBufferObject {
  PyObject_HEAD
  void* buf;
  Py_ssize_t len;
  Py_ssize_t itemsize;
  int readonly;
  int ndim;
  char format[4];
  Py_ssize_t shape[ge::kMaxDimNum + 1];
  Py_ssize_t strides[ge::kMaxDimNum + 1];
  std::shared_ptr<void>* keep;
};

int TensorBufferGet(PyObject* self, Py_buffer* view, int flags) {
  auto* o = reinterpret_cast<TensorBufferObject*>(self);
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE && o->readonly) {
    PyErr_SetString(PyExc_BufferError, "tensor data is read-only");
    return -1;
  }
  view->obj = Py_NewRef(self);
  view->buf = o->buf;
  view->len = o->len;
  view->readonly = o->readonly;
  view->itemsize = o->itemsize;
  view->format = (flags & PyBUF_FORMAT) ? o->format : nullptr;
  view->ndim = o->ndim;
  view->shape = (flags & PyBUF_ND) ? o->shape : nullptr;
  view->strides = ((flags & PyBUF_STRIDES) == PyBUF_STRIDES) ? o->strides : nullptr;
  view->suboffsets = nullptr;
  view->internal = nullptr;
  return 0;
}

void TensorBufferDealloc(PyObject* self) {
  auto* o = reinterpret_cast<TensorBufferObject*>(self);
  delete o->keep;
  Py_TYPE(self)->tp_free(self);
}

PyBufferProcs g_tensor_buffer_procs = {TensorBufferGet, nullptr};

PyTypeObject g_tensor_buffer_type = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "_ge_native._TensorBuffer";
  t.tp_basicsize = sizeof(TensorBufferObject);
  t.tp_dealloc = TensorBufferDealloc;
  t.tp_as_buffer = &g_tensor_buffer_procs;
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION;
  t.tp_doc = "Buffer exporter behind Tensor.data (internal).";
  return t;
}();

// A memoryview over `buf` (C-contiguous `shape` of `itemsize`-byte `fmt`
// elements) through a TensorBufferObject that keeps `keep` alive: views derived
// from it (casts, slices) can never reach freed memory. The memoryview itself
// is registered with `lease` and released when the callback ends.
bp::object MakeBufferView(void* buf, std::size_t len, bool readonly, char fmt, Py_ssize_t itemsize,
                          const std::vector<Py_ssize_t>& shape, std::shared_ptr<void> keep, const LeasePtr& lease) {
  auto* o = PyObject_New(TensorBufferObject, &g_tensor_buffer_type);
  if (o == nullptr) bp::throw_error_already_set();
  o->keep = new std::shared_ptr<void>(std::move(keep));
  o->buf = buf;
  o->len = static_cast<Py_ssize_t>(len);
  o->readonly = readonly ? 1 : 0;
  o->format[0] = fmt;
  o->format[1] = '\0';
  o->itemsize = itemsize;
  o->ndim = static_cast<int>(shape.size());
  Py_ssize_t stride = itemsize;
  for (int i = o->ndim - 1; i >= 0; --i) {
    o->shape[i] = shape[static_cast<std::size_t>(i)];
    o->strides[i] = stride;
    stride *= o->shape[i];
  }
  if (stride != o->len) {
    Py_DECREF(o);
    RaiseRuntimeError("buffer of " + std::to_string(len) + " bytes does not match its shape");
  }
  PyObject* mv = PyMemoryView_FromObject(reinterpret_cast<PyObject*>(o));
  Py_DECREF(o);
  if (mv == nullptr) bp::throw_error_already_set();
  if (lease != Lease::Owned()) lease->AdoptMemoryView(mv);
  return bp::object(bp::handle<>(mv));
}

bp::object TensorData(const TensorView& v) {
  ge::Tensor& t = v.Get();
  if (!t.HasData()) {
    RaiseRuntimeError("tensor has no host data (compile-time tensors carry metadata only)");
  }
  const ge::Shape& s = t.GetStorageShape();
  std::optional<char> fmt = ge::DataTypeStructFormat(t.GetDataType());
  const std::size_t elem = ge::DataTypeSize(t.GetDataType());
  std::vector<Py_ssize_t> shape;
  for (std::size_t i = 0; i < s.GetDimNum(); ++i) shape.push_back(static_cast<Py_ssize_t>(s.GetDim(i)));
  if (!fmt && elem > 1) {  // plain bytes: the last dim counts bytes
    if (shape.empty()) shape.push_back(static_cast<Py_ssize_t>(elem));
    else shape.back() *= static_cast<Py_ssize_t>(elem);
  }
  // No elements: a one-dimensional empty view. CPython cannot cast a memoryview
  // with a zero in its shape ("cannot cast view with zeros in shape"), so the
  // documented flat idiom data.cast("B").cast(fmt) works for every shape.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) shape.assign(1, 0);
  const bool ro = t.IsReadOnly() || v.read_only || v.lease->read_only();
  return MakeBufferView(t.GetAddr(), t.GetSize(), ro, fmt ? *fmt : 'B', fmt ? static_cast<Py_ssize_t>(elem) : 1, shape,
                        v.keep, v.lease);
}

bp::dict TensorArrayInterface(const TensorView& v) {
  ge::Tensor& t = v.Get();
  if (!t.HasData()) RaiseRuntimeError("tensor has no host data (compile-time tensors carry metadata only)");
  bp::dict d;
  bp::list shape = DimsList(t.GetStorageShape());
  d["shape"] = bp::tuple(shape);
  d["typestr"] = ge::DataTypeTypestr(t.GetDataType());
  const bool ro = t.IsReadOnly() || v.read_only || v.lease->read_only();
  d["data"] = bp::make_tuple(reinterpret_cast<uintptr_t>(t.GetAddr()), ro);
  d["strides"] = bp::object();
  d["version"] = 3;
  return d;
}

uintptr_t TensorAddr(const TensorView& v) { return reinterpret_cast<uintptr_t>(v.Get().GetAddr()); }
std::size_t TensorSize(const TensorView& v) { return v.Get().GetSize(); }
int64_t TensorShapeSize(const TensorView& v) { return v.Get().GetShapeSize(); }
bp::object TensorShape(const TensorView& v) {
  return bp::object(StorageShapeView{&v.Get().MutableDesc().shape, v.keep, v.lease, v.read_only});
}
bp::object TensorStorageShape(const TensorView& v) {
  return NewShapeView(&v.Get().MutableDesc().shape.MutableStorageShape(), v.keep, v.lease, v.read_only);
}
bp::object TensorOriginShape(const TensorView& v) {
  return NewShapeView(&v.Get().MutableDesc().shape.MutableOriginShape(), v.keep, v.lease, v.read_only);
}
bp::object TensorFormat(const TensorView& v) {
  return bp::object(StorageFormatView{&v.Get().MutableDesc().format, v.keep, v.lease, v.read_only});
}
bp::object TensorStorageFormat(const TensorView& v) { return FormatEnum(v.Get().Desc().format.GetStorageFormat()); }
bp::object TensorOriginFormat(const TensorView& v) { return FormatEnum(v.Get().Desc().format.GetOriginFormat()); }
bp::object TensorExpand(const TensorView& v) {
  return NewExpandView(&v.Get().MutableDesc().format.MutableExpandDimsType(), v.keep, v.lease, v.read_only);
}
bp::object TensorDataType(const TensorView& v) { return DataTypeEnum(v.Get().GetDataType()); }
bp::object TensorPlacementOf(const TensorView& v) {
  return EnumMember("ge.runtime", "TensorPlacement", v.Get().Desc().placement);
}
std::string TensorRepr(const TensorView& v) {
  if (!v.alive()) return "<Tensor (expired)>";
  return "<Tensor " + v.ptr->Desc().ToString() + (v.ptr->HasData() ? "" : " (no data)") + ">";
}

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
  ge::Tensor* t = nullptr;
  try {
    t = ctx.MakeOutputRefInput(o, i);
  } catch (const std::exception& e) {
    RaiseRuntimeError(std::string("make_output_ref_input(") + std::to_string(o) + ", " + std::to_string(i) +
                      "): " + e.what());
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
uintptr_t CtxStream(const ExecCtxView& v) { return reinterpret_cast<uintptr_t>(v.Get().GetStream()); }
std::size_t CtxInputNum(const ExecCtxView& v) { return v.Get().GetInputNum(); }
std::size_t CtxOutputNum(const ExecCtxView& v) { return v.Get().GetOutputNum(); }

// ---- stdout / stderr capture ----------------------------------------------------

std::mutex g_sink_mu;  // guards g_sink only; never held while calling Python
LogSink g_sink;

void Emit(const std::string& plugin, bool is_stderr, const std::string& line) {
  LogSink sink;
  {
    std::lock_guard<std::mutex> lock(g_sink_mu);
    sink = g_sink;
  }
  if (sink) {
    sink(plugin, is_stderr, line);
  } else {
    std::fprintf(is_stderr ? stderr : stdout, "[%s] %s\n", plugin.c_str(), line.c_str());
  }
}

// Properties of the shared classes are replaced by FrozenProperty objects:
// a `property` can be re-initialized from Python (property.__init__ again),
// which would let one plugin change every other plugin's tensors.
struct FrozenPropertyObject {
  PyObject_HEAD
  PyObject* fget;
  PyObject* fset;
  PyObject* doc;
};

PyObject* FrozenGet(PyObject* self, PyObject* obj, PyObject*) {
  auto* p = reinterpret_cast<FrozenPropertyObject*>(self);
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  return PyObject_CallOneArg(p->fget, obj);
}

int FrozenSet(PyObject* self, PyObject* obj, PyObject* value) {
  auto* p = reinterpret_cast<FrozenPropertyObject*>(self);
  if (value == nullptr || p->fset == nullptr || p->fset == Py_None) {
    PyErr_SetString(PyExc_AttributeError, value == nullptr ? "can't delete attribute" : "can't set attribute");
    return -1;
  }
  PyObject* r = PyObject_CallFunctionObjArgs(p->fset, obj, value, nullptr);
  if (r == nullptr) return -1;
  Py_DECREF(r);
  return 0;
}

void FrozenDealloc(PyObject* self) {
  auto* p = reinterpret_cast<FrozenPropertyObject*>(self);
  Py_XDECREF(p->fget);
  Py_XDECREF(p->fset);
  Py_XDECREF(p->doc);
  Py_TYPE(self)->tp_free(self);
}

PyObject* FrozenDoc(PyObject* self, void*) {
  PyObject* d = reinterpret_cast<FrozenPropertyObject*>(self)->doc;
  return Py_NewRef(d ? d : Py_None);
}

PyGetSetDef g_frozen_getset[] = {{"__doc__", FrozenDoc, nullptr, nullptr, nullptr}, {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject g_frozen_property_type = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "_ge_native.frozen_property";
  t.tp_basicsize = sizeof(FrozenPropertyObject);
  t.tp_dealloc = FrozenDealloc;
  t.tp_descr_get = FrozenGet;
  t.tp_descr_set = FrozenSet;
  t.tp_getset = g_frozen_getset;
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION;
  t.tp_doc = "A read-only replacement of property for the classes shared by all interpreters.";
  return t;
}();

}  // namespace

void FreezeClass(bp::object cls) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  if (PyType_Ready(&g_frozen_property_type) < 0) bp::throw_error_already_set();
  PyObject* dict = type->tp_dict;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  std::vector<std::pair<PyObject*, PyObject*>> replace;
  while (PyDict_Next(dict, &pos, &key, &value)) {
    if (!PyObject_TypeCheck(value, &PyProperty_Type)) continue;
    auto* fp = PyObject_New(FrozenPropertyObject, &g_frozen_property_type);
    if (fp == nullptr) bp::throw_error_already_set();
    fp->fget = PyObject_GetAttrString(value, "fget");
    fp->fset = PyObject_GetAttrString(value, "fset");
    fp->doc = PyObject_GetAttrString(value, "__doc__");
    PyErr_Clear();
    replace.emplace_back(key, reinterpret_cast<PyObject*>(fp));
  }
  for (auto& [k, fp] : replace) {
    PyDict_SetItem(dict, k, fp);
    Py_DECREF(fp);
  }
  // Boost.Python classes are one object shared by every interpreter (the module
  // is single-phase); forbid plugins from changing them (share/docs/host-design.md, "Interpreters").
  type->tp_flags |= Py_TPFLAGS_IMMUTABLETYPE;
  PyType_Modified(type);
}

namespace {

void MakeImmutable(bp::object cls) { FreezeClass(cls); }


}  // namespace

// ---- public factories -------------------------------------------------------------

bp::object RefuseInit(bp::tuple args, bp::dict) {
  bp::object self = args[0];
  std::string name = bp::extract<std::string>(self.attr("__class__").attr("__name__"));
  RaiseTypeError(name + " cannot be constructed from Python: it is a borrowed native view handed to callbacks");
}

bp::object MakeTensor(ge::Tensor* t, std::shared_ptr<void> keep, const LeasePtr& lease, bool read_only) {
  // A tensor the engine marked read-only (an input the op does not declare as
  // mutated) gives read-only views: data, shape and format setters refuse.
  return bp::object(TensorView{t, std::move(keep), lease, read_only || t->IsReadOnly()});
}

bp::object MakeExecCtx(ge::EagerOpExecutionContext* ctx, const LeasePtr& lease) {
  return bp::object(ExecCtxView{ctx, nullptr, lease, false});
}

bp::object MakeOwnedTensorDesc(const ge::TensorDesc& desc) {
  auto owned = std::make_shared<ge::TensorDesc>(desc);
  return bp::object(TensorDescView{owned.get(), owned, Lease::Owned(), false});
}

ge::TensorDesc ExtractTensorDesc(bp::object obj, const std::string& what) {
  bp::extract<const TensorDescView&> td(obj);
  if (!td.check()) {
    RaiseTypeError(what + " must be a TensorDesc, got " + std::string(Py_TYPE(obj.ptr())->tp_name));
  }
  return td().Get();
}

bp::object DataTypeEnum(int value) { return EnumMember("ge.graph", "DataType", value); }
bp::object FormatEnum(int value) { return EnumMember("ge.graph", "Format", value); }

ge::DataType DataTypeArg(bp::object obj, const std::string& what, bool strict_enum) {
  // Not strict: a plain int is accepted with no module lookup (the fast path of
  // malloc_output_tensor, per output); any other int subclass must be a
  // DataType, so that a Format member is never taken for a dtype.
  bool accepted = !strict_enum && Py_TYPE(obj.ptr()) == &PyLong_Type;
  if (!accepted) {
    bp::object dt_cls = bp::import("ge.graph").attr("DataType");
    const int is_enum = PyObject_IsInstance(obj.ptr(), dt_cls.ptr());
    if (is_enum < 0) bp::throw_error_already_set();
    accepted = is_enum == 1;
  }
  if (!accepted) {
    RaiseTypeError(what + " must be a DataType (ge.graph.DataType), got " + std::string(Py_TYPE(obj.ptr())->tp_name));
  }
  int64_t v = IntArg(obj, what);
  if (v >= ge::DT_MAX || v < 0) {
    RaiseValueError(what + " must be less than DataType.DT_MAX (" + std::to_string(static_cast<int>(ge::DT_MAX)) +
                    "), got " + std::to_string(v));
  }
  if (!ge::IsKnownDataType(v)) RaiseValueError(what + " " + std::to_string(v) + " is not a known DataType");
  return static_cast<ge::DataType>(v);
}

ge::Shape ShapeFromPython(bp::object obj, const std::string& what) {
  bp::extract<const ShapeView&> sv(obj);
  if (sv.check()) return sv().Get();
  if (!PyList_Check(obj.ptr()) && !PyTuple_Check(obj.ptr())) {
    RaiseTypeError(what + " must be a list of ints, got " + std::string(Py_TYPE(obj.ptr())->tp_name));
  }
  const Py_ssize_t n = PySequence_Size(obj.ptr());
  if (static_cast<std::size_t>(n) > ge::kMaxDimNum) {
    RaiseValueError(what + " has " + std::to_string(n) + " dims, more than the maximum dimension count " +
                    std::to_string(ge::kMaxDimNum));
  }
  ge::Shape s;
  for (Py_ssize_t i = 0; i < n; ++i) {
    bp::object item(bp::handle<>(PySequence_GetItem(obj.ptr(), i)));
    s.AppendDim(IntArg(item, what + " dim " + std::to_string(i)));
  }
  return s;
}

void SetLogSink(LogSink sink) {
  std::lock_guard<std::mutex> lock(g_sink_mu);
  g_sink = std::move(sink);
}

void RegisterViews() {
  if (PyType_Ready(&g_tensor_buffer_type) < 0) bp::throw_error_already_set();

  bp::object shape_cls =
      bp::class_<ShapeView>("Shape", "A tensor shape view (borrowed; expires with its callback or owner).", bp::no_init)
          .def("__init__", bp::raw_function(&RefuseInit))
          .add_property("dims", &ShapeDims, "Dims as a new list[int].")
          .add_property("dim_num", &ShapeDimNum, "Rank.")
          .add_property("size", &ShapeSize, "Number of elements (1 for a scalar, -1 with unknown dims).")
          .def("get_dim", &ShapeGetDim, "get_dim(i) -> int; ValueError when out of range.")
          .def("set_dim", &ShapeSetDim, "set_dim(i, v); ValueError when out of range; RuntimeError when read-only.")
          .def("append_dim", &ShapeAppendDim, "append_dim(v); ValueError past the maximum rank.")
          .def("is_scalar", &ShapeIsScalar)
          .def("set_scalar", &ShapeSetScalar)
          .def("__len__", &ShapeDimNum)
          .def("__eq__", &ShapeEq)
          .def("__repr__", &ShapeRepr);
  MakeImmutable(shape_cls);

  bp::object ss_cls =
      bp::class_<StorageShapeView>("StorageShape",
                                   "Origin and storage shapes. StorageShape() or StorageShape(origin, storage) is owned; "
                                   "a tensor's is a view.",
                                   bp::no_init)
          .def("__init__", bp::make_constructor(&NewStorageShape, bp::default_call_policies(),
                                                (bp::arg("origin") = bp::object(), bp::arg("storage") = bp::object())))
          .add_property("origin_shape", &SSOrigin)
          .add_property("storage_shape", &SSStorage)
          .def("set_origin_shape", &SSSetOrigin)
          .def("set_storage_shape", &SSSetStorage)
          .def("__eq__", &SSEq)
          .def("__repr__", &SSRepr);
  MakeImmutable(ss_cls);

  bp::object edt_cls =
      bp::class_<ExpandDimsView>("ExpandDimsType",
                                 "Expand-dims rule (\"101\" string or int mask). ExpandDimsType(rule) is owned; a "
                                 "tensor's or StorageFormat's is a view that expires with it.",
                                 bp::no_init)
          .def("__init__", bp::make_constructor(&NewExpandDims, bp::default_call_policies(),
                                                (bp::arg("rule") = bp::object())))
          .add_property("rule", +[](const ExpandDimsView& e) { return e.Get().ToString(); })
          .add_property("mask", +[](const ExpandDimsView& e) { return e.Get().GetMask(); })
          .add_property("rule_size", +[](const ExpandDimsView& e) { return e.Get().GetRuleSize(); })
          .add_property("full_size", +[](const ExpandDimsView& e) { return e.Get().GetRuleSize(); },
                        "Dimension count after expansion (the rule's length).")
          .def("is_expand_index", &EdtIsExpand)
          .def("set_expand_index", &EdtSetExpand,
               "set_expand_index(index): marks index (< full_size) as an inserted axis; ValueError past the rule, "
               "RuntimeError on a read-only view.")
          .def("__eq__", +[](const ExpandDimsView& a, bp::object b) {
            bp::extract<const ExpandDimsView&> e(b);
            return e.check() && a.Get() == e().Get();
          })
          .def("__repr__", &EdtRepr);
  MakeImmutable(edt_cls);

  bp::object sf_cls =
      bp::class_<StorageFormatView>("StorageFormat", "Origin/storage formats and expand-dims rule.", bp::no_init)
          .def("__init__", bp::make_constructor(&NewStorageFormat, bp::default_call_policies(),
                                                (bp::arg("origin_format") = bp::object(),
                                                 bp::arg("storage_format") = bp::object(),
                                                 bp::arg("expand_dims_type") = bp::object())))
          .add_property("origin_format", &SFOrigin)
          .add_property("storage_format", &SFStorage)
          .add_property("expand_dims_type", &SFExpand)
          .def("set_origin_format", &SFSetOrigin)
          .def("set_storage_format", &SFSetStorage)
          .def("set_expand_dims_type", &SFSetExpand);
  MakeImmutable(sf_cls);

  bp::object td_cls =
      bp::class_<TensorDescView>("TensorDesc", "TensorDesc(shape, data_type): owned shape + dtype description.",
                                 bp::no_init)
          .def("__init__", bp::make_constructor(&NewTensorDesc, bp::default_call_policies(),
                                                (bp::arg("shape"), bp::arg("data_type"))))
          .add_property("shape", &TDShape, &TDSetShape,
                        "StorageShape view; expires with this TensorDesc. Setting it takes a StorageShape "
                        "(copied), a list of ints (origin and storage) or None (scalar).")
          .add_property("origin_shape", &TDOrigin)
          .add_property("storage_shape", &TDStorage)
          .add_property("format", &TDFormat)
          .add_property("data_type", &TDDataType, &TDSetDataType)
          .def("__eq__", &TDEq)
          .def("__repr__", &TDRepr);
  MakeImmutable(td_cls);

  bp::object tensor_cls =
      bp::class_<TensorView>("Tensor", "A borrowed tensor view handed to a callback; expires when it returns.",
                             bp::no_init)
          .def("__init__", bp::raw_function(&RefuseInit))
          .add_property("addr", &TensorAddr, "Host address of the data (int).")
          .add_property("size", &TensorSize, "Data size in bytes.")
          .add_property("shape_size", &TensorShapeSize)
          .add_property("shape", &TensorShape)
          .add_property("storage_shape", &TensorStorageShape)
          .add_property("origin_shape", &TensorOriginShape)
          .add_property("format", &TensorFormat)
          .add_property("storage_format", &TensorStorageFormat)
          .add_property("origin_format", &TensorOriginFormat)
          .add_property("expand_dims_type", &TensorExpand)
          .add_property("data_type", &TensorDataType)
          .add_property("placement", &TensorPlacementOf)
          .add_property("data", &TensorData, "Zero-copy memoryview of the host data (C-contiguous, typed format).")
          .add_property("__array_interface__", &TensorArrayInterface)
          .def("__repr__", &TensorRepr);
  MakeImmutable(tensor_cls);

  bp::object ctx_cls =
      bp::class_<ExecCtxView>("EagerOpExecutionContext",
                              "Context of one eager execute (get_execute_ctx()); borrowed, expires with the callback.",
                              bp::no_init)
          .def("__init__", bp::raw_function(&RefuseInit))
          .def("get_input_num", &CtxInputNum)
          .def("get_output_num", &CtxOutputNum)
          .def("get_input_tensor", &CtxGetInput,
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
          .def("get_output_tensor", &CtxGetOutput,
               "get_output_tensor(index) -> Tensor; RuntimeError when out of range or not yet allocated.")
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
  MakeImmutable(ctx_cls);

  bp::def("_log_line", +[](const std::string& plugin, bool is_stderr, bp::object text) {
    // Control characters (NUL, terminal escapes) are escaped before they reach the log.
    const std::string clean = ge::TerminalSafe(SafeStr(text.ptr()), /*keep_newlines=*/true);  // one line: keeps tabs
    Emit(plugin, is_stderr, clean);
  }, "Writes one line of a plugin's captured output to the host log (internal).");
}

}  // namespace ge::py
