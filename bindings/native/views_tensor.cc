// views_tensor.cc: Shape, StorageShape, ExpandDimsType, StorageFormat, TensorDesc and Tensor, and the argument readers.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "views.h"

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

// Tensor.data: a zero-copy memoryview through MakeBufferView (tensor_buffer.cc).
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

}  // namespace

// ---- public factories and argument readers -----------------------------------------

bp::object MakeTensor(ge::Tensor* t, std::shared_ptr<void> keep, const LeasePtr& lease, bool read_only) {
  // A tensor the engine marked read-only (an input the op does not declare as
  // mutated) gives read-only views: data, shape and format setters refuse.
  return bp::object(TensorView{t, std::move(keep), lease, read_only || t->IsReadOnly()});
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

void RegisterTensorViews() {
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
  FreezeClass(shape_cls);

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
  FreezeClass(ss_cls);

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
  FreezeClass(edt_cls);

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
  FreezeClass(sf_cls);

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
  FreezeClass(td_cls);

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
  FreezeClass(tensor_cls);
}

}  // namespace ge::py
