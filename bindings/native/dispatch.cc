// dispatch.cc: argument binding and invocation of schema-bound callbacks.
#include "dispatch.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "errors.h"
#include "frame_context.h"
#include "views.h"

namespace ge::py {

namespace {

std::string DictStr(bp::object d, const char* key, const std::string& where) {
  bp::object v = d.attr("get")(key);
  bp::extract<std::string> s(v);
  if (v.is_none() || !s.check()) throw std::invalid_argument(where + ": field '" + key + "' must be a str");
  return s();
}

template <typename T, typename F>
std::vector<T> ListOf(bp::object obj, AttrType type, const std::string& name, F&& item) {
  if (!PyList_Check(obj.ptr())) {
    RaiseTypeError("attr '" + name + "' must be a list for " + std::string(AttrTypeName(type)) + ", got " +
                   Py_TYPE(obj.ptr())->tp_name);
  }
  std::vector<T> out;
  const Py_ssize_t n = PyList_GET_SIZE(obj.ptr());
  out.reserve(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    out.push_back(item(bp::object(bp::handle<>(bp::borrowed(PyList_GET_ITEM(obj.ptr(), i))))));
  }
  return out;
}

int64_t StrictInt(bp::object o, const std::string& name) {
  long long v = 0;
  int overflow = 0;
  if (!IndexValue(o.ptr(), &v, &overflow)) {
    RaiseTypeError("attr '" + name + "' expects int, got " + std::string(Py_TYPE(o.ptr())->tp_name));
  }
  if (overflow) RaiseValueError("attr '" + name + "' does not fit in int64");
  return v;
}
float StrictFloat(bp::object o, const std::string& name) {
  if (!PyFloat_Check(o.ptr())) {
    RaiseTypeError("attr '" + name + "' expects float, got " + std::string(Py_TYPE(o.ptr())->tp_name));
  }
  return static_cast<float>(PyFloat_AS_DOUBLE(o.ptr()));
}
bool StrictBool(bp::object o, const std::string& name) {
  if (!PyBool_Check(o.ptr())) {
    RaiseTypeError("attr '" + name + "' expects bool, got " + std::string(Py_TYPE(o.ptr())->tp_name));
  }
  return o.ptr() == Py_True;
}
std::string StrictStr(bp::object o, const std::string& name) {
  if (!PyUnicode_Check(o.ptr())) {
    RaiseTypeError("attr '" + name + "' expects str, got " + std::string(Py_TYPE(o.ptr())->tp_name));
  }
  return SafeStr(o.ptr());
}

bp::object IntList(const std::vector<int64_t>& v) {
  bp::list l;
  for (int64_t x : v) l.append(x);
  return l;
}

ErrorInfo TypeErrorInfo(const CallSite& site, const std::string& text) {
  ErrorInfo e;
  e.plugin = site.plugin;
  e.file = site.file;
  e.call_site = site.method;
  e.exception_type = "TypeError";
  e.message = "TypeError: " + text;
  return e;
}

}  // namespace

std::shared_ptr<OpSchema> SchemaFromDict(bp::object d) {
  auto s = std::make_shared<OpSchema>();
  s->op_type = DictStr(d, "op_type", "prototype");
  const std::string where = "prototype of '" + s->op_type + "'";
  bp::object inputs = d["inputs"];
  for (Py_ssize_t i = 0, n = bp::len(inputs); i < n; ++i) {
    bp::object in = inputs[i];
    IrInput ir;
    ir.name = DictStr(in, "name", where);
    std::string kind = DictStr(in, "kind", where);
    if (kind == "required") ir.kind = IrInputKind::kRequired;
    else if (kind == "optional") ir.kind = IrInputKind::kOptional;
    else if (kind == "dynamic") ir.kind = IrInputKind::kDynamic;
    else throw std::invalid_argument(where + ": unknown input kind '" + kind + "'");
    s->inputs.push_back(ir);
  }
  bp::object outputs = d["outputs"];
  for (Py_ssize_t i = 0, n = bp::len(outputs); i < n; ++i) {
    bp::object out = outputs[i];
    IrOutput ir;
    ir.name = DictStr(out, "name", where);
    std::string kind = DictStr(out, "kind", where);
    if (kind == "required") ir.kind = IrOutputKind::kRequired;
    else if (kind == "dynamic") ir.kind = IrOutputKind::kDynamic;
    else throw std::invalid_argument(where + ": unknown output kind '" + kind + "'");
    s->outputs.push_back(ir);
  }
  bp::object attrs = d["attrs"];
  for (Py_ssize_t i = 0, n = bp::len(attrs); i < n; ++i) {
    bp::object a = attrs[i];
    IrAttr ir;
    ir.name = DictStr(a, "name", where);
    std::string type = DictStr(a, "type", where);
    auto t = AttrTypeFromName(type);
    if (!t) throw std::invalid_argument(where + ": attr '" + ir.name + "' has unknown type '" + type + "'");
    ir.type = *t;
    const bool required = bp::extract<bool>(a.attr("get")("required", true));
    if (!required) ir.default_value = AttrFromPython(a["default"], ir.type, ir.name);
    s->attrs.push_back(std::move(ir));
  }
  bp::object mutates = d.attr("get")("mutates", bp::list());
  for (Py_ssize_t i = 0, n = bp::len(mutates); i < n; ++i) {
    std::string in_name = bp::extract<std::string>(mutates[i][0]);
    std::size_t out_index = bp::extract<std::size_t>(mutates[i][1]);
    auto in_idx = s->FindInput(in_name);
    if (!in_idx) throw std::invalid_argument(where + ": mutates names unknown input '" + in_name + "'");
    s->aliases.emplace_back(*in_idx, out_index);
  }
  return s;
}

bp::dict SchemaToDict(const OpSchema& s) {
  bp::dict d;
  d["op_type"] = s.op_type;
  bp::list inputs, outputs, attrs, mutates;
  for (const auto& i : s.inputs) {
    bp::dict e;
    e["name"] = i.name;
    e["kind"] = std::string(IrInputKindName(i.kind));
    inputs.append(e);
  }
  for (const auto& o : s.outputs) {
    bp::dict e;
    e["name"] = o.name;
    e["kind"] = std::string(IrOutputKindName(o.kind));
    outputs.append(e);
  }
  for (const auto& a : s.attrs) {
    bp::dict e;
    e["name"] = a.name;
    e["type"] = std::string(AttrTypeName(a.type));
    e["required"] = !a.default_value;
    // A tensor attribute has no default a plugin could see (the prototype
    // rules of share/docs/plugin-authors.md); it is listed as None.
    e["default"] = a.default_value && a.type != AttrType::VT_TENSOR ? AttrToPython(*a.default_value, nullptr) : bp::object();
    attrs.append(e);
  }
  for (const auto& [in, out] : s.aliases) {
    if (in < s.inputs.size()) mutates.append(bp::make_tuple(s.inputs[in].name, out));
  }
  d["inputs"] = inputs;
  d["outputs"] = outputs;
  d["attrs"] = attrs;
  d["mutates"] = mutates;
  return d;
}

bp::object AttrToPython(const AttrValue& value, const LeasePtr& lease) {
  switch (TypeOf(value)) {
    case AttrType::VT_INT: return bp::object(std::get<int64_t>(value));
    case AttrType::VT_FLOAT: return bp::object(static_cast<double>(std::get<float>(value)));
    case AttrType::VT_BOOL: return bp::object(std::get<bool>(value));
    case AttrType::VT_STRING: return bp::object(std::get<std::string>(value));
    case AttrType::VT_DATA_TYPE: return DataTypeEnum(std::get<DataType>(value));
    case AttrType::VT_TENSOR: {
      const TensorAttr& t = std::get<TensorAttr>(value);
      if (!t) return bp::object();
      // The attribute owns its tensor; Python sees it read-only.
      return MakeTensor(const_cast<Tensor*>(t.get()), std::const_pointer_cast<Tensor>(t), lease, true);
    }
    case AttrType::VT_LIST_INT: return IntList(std::get<std::vector<int64_t>>(value));
    case AttrType::VT_LIST_FLOAT: {
      bp::list l;
      for (float f : std::get<std::vector<float>>(value)) l.append(static_cast<double>(f));
      return l;
    }
    case AttrType::VT_LIST_BOOL: {
      bp::list l;
      for (bool b : std::get<std::vector<bool>>(value)) l.append(b);
      return l;
    }
    case AttrType::VT_LIST_STRING: {
      bp::list l;
      for (const auto& s : std::get<std::vector<std::string>>(value)) l.append(s);
      return l;
    }
    case AttrType::VT_LIST_DATA_TYPE: {
      bp::list l;
      for (DataType dt : std::get<std::vector<DataType>>(value)) l.append(DataTypeEnum(dt));
      return l;
    }
    case AttrType::VT_LIST_LIST_INT: {
      bp::list l;
      for (const auto& v : std::get<std::vector<std::vector<int64_t>>>(value)) l.append(IntList(v));
      return l;
    }
  }
  return bp::object();
}

AttrValue AttrFromPython(bp::object o, AttrType type, const std::string& name) {
  switch (type) {
    case AttrType::VT_INT: return StrictInt(o, name);
    case AttrType::VT_FLOAT: return StrictFloat(o, name);
    case AttrType::VT_BOOL: return StrictBool(o, name);
    case AttrType::VT_STRING: return StrictStr(o, name);
    case AttrType::VT_DATA_TYPE: return DataTypeArg(o, "attr '" + name + "'");
    case AttrType::VT_TENSOR: RaiseTypeError("attr '" + name + "': Tensor attributes cannot come from Python values");
    case AttrType::VT_LIST_INT:
      return ListOf<int64_t>(o, type, name, [&](bp::object x) { return StrictInt(x, name); });
    case AttrType::VT_LIST_FLOAT:
      return ListOf<float>(o, type, name, [&](bp::object x) { return StrictFloat(x, name); });
    case AttrType::VT_LIST_BOOL:
      return ListOf<bool>(o, type, name, [&](bp::object x) { return StrictBool(x, name); });
    case AttrType::VT_LIST_STRING:
      return ListOf<std::string>(o, type, name, [&](bp::object x) { return StrictStr(x, name); });
    case AttrType::VT_LIST_DATA_TYPE:
      return ListOf<DataType>(o, type, name, [&](bp::object x) { return DataTypeArg(x, "attr '" + name + "'"); });
    case AttrType::VT_LIST_LIST_INT:
      return ListOf<std::vector<int64_t>>(o, type, name, [&](bp::object x) {
        return ListOf<int64_t>(x, AttrType::VT_LIST_INT, name, [&](bp::object y) { return StrictInt(y, name); });
      });
  }
  RaiseTypeError("attr '" + name + "' has an unknown type");
}

std::vector<bool> DynamicInputs(const OpSchema& schema) {
  std::vector<bool> d;
  for (const auto& in : schema.inputs) d.push_back(in.kind == IrInputKind::kDynamic);
  return d;
}

std::vector<bool> DynamicOutputs(const OpSchema& schema) {
  std::vector<bool> d;
  for (const auto& out : schema.outputs) d.push_back(out.kind == IrOutputKind::kDynamic);
  return d;
}

void SetEntryArgs(PyObject* tuple, Py_ssize_t offset, const std::vector<bool>& dynamic, const InstanceLayout& layout,
                  const TensorGetter& get, const LeasePtr& lease, bool with_data) {
  auto view = [&](std::size_t i) {
    Tensor* t = get(i);
    return bp::incref(MakeTensor(t, with_data ? t->Owner() : nullptr, lease, !with_data).ptr());
  };
  for (std::size_t k = 0; k < dynamic.size(); ++k) {
    const std::size_t start = layout.Start(k), count = layout.Count(k);
    PyObject* item = nullptr;
    if (dynamic[k]) {
      item = PyList_New(static_cast<Py_ssize_t>(count));
      if (item == nullptr) bp::throw_error_already_set();
      for (std::size_t i = 0; i < count; ++i) PyList_SET_ITEM(item, static_cast<Py_ssize_t>(i), view(start + i));
    } else if (count == 0) {
      item = Py_NewRef(Py_None);
    } else {
      item = view(start);
    }
    PyTuple_SET_ITEM(tuple, offset + static_cast<Py_ssize_t>(k), item);
  }
}

OwnedRef AttrKwargs(const OpSchema& schema, const RuntimeAttrs& attrs, const LeasePtr& lease) {
  if (schema.attrs.empty()) return OwnedRef();
  OwnedRef kwargs = OwnedRef::Steal(PyDict_New());
  if (kwargs.get() == nullptr) bp::throw_error_already_set();
  for (std::size_t i = 0; i < schema.attrs.size(); ++i) {
    bp::object v = AttrToPython(attrs.At(i), lease);
    if (PyDict_SetItemString(kwargs.get(), schema.attrs[i].name.c_str(), v.ptr()) < 0) bp::throw_error_already_set();
  }
  return kwargs;
}

Status PythonErrorStatus(const CallSite& site, bool keep_python_error) {
  if (keep_python_error) return Status::Error("Python exception pending");
  return Status::Error(FetchPythonError(site.plugin, site.file, site.method));
}

Status CppErrorStatus(const CallSite& site, const std::exception& e) {
  ErrorInfo info;
  info.plugin = site.plugin;
  info.file = site.file;
  info.call_site = site.method;
  info.message = e.what();
  return Status::Error(info);
}

namespace {

template <typename Call>
Status CheckNone(const CallSite& site, bool keep_python_error, Call&& call, bool check = true);

// Runs `call` (returns a new reference or null with an error set) with each
// (ContextVar, value) of [first, last) bound for its duration (reset
// afterwards, in reverse order, keeping the callback's error pending), and
// checks that it returned None.
template <typename Call>
Status WithContextVars(const std::pair<PyObject*, PyObject*>* first, std::size_t n, const CallSite& site,
                       bool keep_python_error, Call&& call, bool check_none = true) {
  constexpr std::size_t kMaxBindings = 4;
  if (n > kMaxBindings) throw std::logic_error("more ContextVars than a schema-bound call binds");
  OwnedRef tokens[kMaxBindings];
  std::size_t set = 0;
  auto reset = [&]() {
    // PyContextVar_Reset must not run with an error pending: the callback's
    // error (if any) is set aside and restored, untouched, afterwards. The
    // usual case (no error) skips that round trip.
    PyObject *t = nullptr, *v = nullptr, *tb = nullptr;
    const bool pending = PyErr_Occurred() != nullptr;
    if (pending) PyErr_Fetch(&t, &v, &tb);
    for (std::size_t i = set; i-- > 0;) {
      if (PyContextVar_Reset(first[i].first, tokens[i].get()) < 0) PyErr_Clear();
    }
    if (pending) PyErr_Restore(t, v, tb);
  };
  for (; set < n; ++set) {
    PyObject* token = PyContextVar_Set(first[set].first, first[set].second);
    if (token == nullptr) {
      reset();
      return PythonErrorStatus(site, keep_python_error);
    }
    tokens[set] = OwnedRef::Steal(token);
  }
  return CheckNone(
      site, keep_python_error,
      [&] {
        PyObject* result = call();
        reset();
        return result;
      },
      check_none);
}

// Runs `call` (returns a new reference or null with an error set) and, with
// `check`, checks that it returned None.
template <typename Call>
Status CheckNone(const CallSite& site, bool keep_python_error, Call&& call, bool check) {
  OwnedRef result = OwnedRef::Steal(call());
  if (result.get() == nullptr) return PythonErrorStatus(site, keep_python_error);
  if (check && result.get() != Py_None) {
    const std::string text = site.method + " must return None, got " + Py_TYPE(result.get())->tp_name;
    ErrorInfo e = TypeErrorInfo(site, text);
    if (keep_python_error) e.message = text;
    return Status::Error(e);
  }
  return Status::Ok();
}

}  // namespace

Status CallSchemaBound(PyObject* method, PyObject* args, PyObject* kwargs,
                       const std::vector<std::pair<PyObject*, PyObject*>>& bindings, const CallSite& site,
                       bool keep_python_error) {
  return WithContextVars(bindings.data(), bindings.size(), site, keep_python_error,
                         [&] { return PyObject_Call(method, args, kwargs); });
}

// ---- ExecuteFrame ---------------------------------------------------------------------

namespace {

// A view object a frame keeps: the frame's reference and the View it holds
// (inside the Boost.Python instance, at a fixed address for its lifetime).
template <typename V>
struct ViewSlot {
  InterpreterRef obj;
  V* view = nullptr;
};

bool OnlyFrameHolds(PyObject* obj, Py_ssize_t frame_refs);

// A borrowed reference to the slot's view for this call: the kept object,
// re-pointed at `value()`, when nothing but the frame holds it (its
// `frame_refs` references; counted in `reused`); else a new object from
// `make()` (a bp::object holding a V).
template <typename V, typename Value, typename Make>
PyObject* PointView(ViewSlot<V>& slot, Value&& value, Make&& make, std::size_t& reused, Py_ssize_t frame_refs = 1) {
  if (slot.obj && OnlyFrameHolds(slot.obj.get(), frame_refs)) {
    *slot.view = value();
    ++reused;
    return slot.obj.get();
  }
  slot.obj.Reset();
  bp::object obj = make();
  slot.view = &bp::extract<V&>(obj)();
  slot.obj = InterpreterRef::Borrow(obj.ptr());
  return slot.obj.get();
}

// The end of a call for one slot: a view only the frame holds is expired and
// kept; any other is the plugin's now (it stays expired, on what it kept) and
// leaves the frame.
template <typename V>
void ReleaseView(ViewSlot<V>& slot, Py_ssize_t frame_refs = 1) noexcept {
  if (!slot.obj) return;
  if (OnlyFrameHolds(slot.obj.get(), frame_refs)) {
    // Field by field (no temporary View): the buffer's owner is let go and the
    // view holds the always-expired lease until it is re-pointed.
    V& view = *slot.view;
    view.ptr = nullptr;
    view.keep.reset();
    view.lease = Lease::Expired();
    view.read_only = false;
  } else {
    slot.obj.Reset();
    slot.view = nullptr;
  }
}

// True when nothing but the frame can reach `obj`: the frame's `frame_refs`
// references only (its slot, and its Context's binding when that Context holds
// it unshared: FrameContext::HoldsOnly), no weak reference, no instance
// attribute set by a plugin. Only such a view may be re-pointed at another
// call's data; any other stays as it is (expired).
bool OnlyFrameHolds(PyObject* obj, Py_ssize_t frame_refs) {
  if (Py_REFCNT(obj) != frame_refs) return false;
  PyTypeObject* type = Py_TYPE(obj);
  if (PyType_HasFeature(type, Py_TPFLAGS_MANAGED_DICT) || type->tp_weaklistoffset < 0 || type->tp_dictoffset < 0) {
    return false;  // not the layout of a Boost.Python instance: never re-pointed
  }
  auto field = [obj](Py_ssize_t offset) { return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + offset); };
  if (type->tp_weaklistoffset > 0 && field(type->tp_weaklistoffset) != nullptr) return false;
  if (type->tp_dictoffset > 0) {
    PyObject* dict = field(type->tp_dictoffset);
    if (dict != nullptr && (!PyDict_Check(dict) || PyDict_GET_SIZE(dict) != 0)) return false;
  }
  return true;
}

// Same Python value: the attribute types whose Python value is immutable, with
// floats compared bit for bit (-0.0 is not 0.0, a NaN is its own payload).
bool SameImmutableAttr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  switch (TypeOf(a)) {
    case AttrType::VT_INT: return std::get<int64_t>(a) == std::get<int64_t>(b);
    case AttrType::VT_FLOAT: {
      const float x = std::get<float>(a), y = std::get<float>(b);
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    case AttrType::VT_BOOL: return std::get<bool>(a) == std::get<bool>(b);
    case AttrType::VT_STRING: return std::get<std::string>(a) == std::get<std::string>(b);
    case AttrType::VT_DATA_TYPE: return std::get<DataType>(a) == std::get<DataType>(b);
    default: return false;  // lists (mutable in Python) and tensors: built per call
  }
}

bool ImmutableAttrType(AttrType t) {
  return t == AttrType::VT_INT || t == AttrType::VT_FLOAT || t == AttrType::VT_BOOL || t == AttrType::VT_STRING ||
         t == AttrType::VT_DATA_TYPE;
}

}  // namespace

struct ExecuteFrame::State {
  bool busy = false;
  std::shared_ptr<const OpSchema> pinned;  // may be null
  LeasePtr lease;                          // the last call's, renewed when nothing shares it
  // The schema the names below were built for (compared, not trusted, per call).
  bool bound = false;
  std::vector<std::string> attr_names;
  std::vector<IrInputKind> input_kinds;
  InterpreterRef kwnames;  // tuple of the attribute names; null without attributes
  struct AttrSlot {
    bool has = false;
    AttrValue value;
    InterpreterRef obj;
  };
  std::vector<AttrSlot> attrs;
  std::vector<ViewSlot<TensorView>> tensors;  // per flattened input instance
  ViewSlot<ExecCtxView> ctx;
  // The Context execute runs in, binding the ContextVar to `ctx` (frame_context.h).
  FrameContext context;
  std::vector<PyObject*> stack;  // the vectorcall arguments: [free slot][inputs][attrs]
  std::vector<OwnedRef> temps;   // objects of this call only (lists, tensor attributes)
  std::size_t reused = 0;

  // (Re)builds the names when `schema` differs from the one they were built for.
  void Bind(const OpSchema& schema) {
    // The op's own schema (kept alive by the frame's owner): the names are its.
    if (bound && &schema == pinned.get()) return;
    bool same = bound && attr_names.size() == schema.attrs.size() && input_kinds.size() == schema.inputs.size();
    for (std::size_t i = 0; same && i < schema.attrs.size(); ++i) same = attr_names[i] == schema.attrs[i].name;
    for (std::size_t i = 0; same && i < schema.inputs.size(); ++i) same = input_kinds[i] == schema.inputs[i].kind;
    if (same) return;
    kwnames.Reset();
    for (auto& a : attrs) a.obj.Reset();
    attrs.clear();
    attr_names.clear();
    input_kinds.clear();
    bound = false;
    if (!schema.attrs.empty()) {
      OwnedRef names = OwnedRef::Steal(PyTuple_New(static_cast<Py_ssize_t>(schema.attrs.size())));
      if (!names) bp::throw_error_already_set();
      for (std::size_t i = 0; i < schema.attrs.size(); ++i) {
        PyObject* name = PyUnicode_FromStringAndSize(schema.attrs[i].name.data(),
                                                     static_cast<Py_ssize_t>(schema.attrs[i].name.size()));
        if (name == nullptr) bp::throw_error_already_set();
        PyUnicode_InternInPlace(&name);
        PyTuple_SET_ITEM(names.get(), static_cast<Py_ssize_t>(i), name);
      }
      kwnames = InterpreterRef::Steal(names.release());
    }
    for (const auto& a : schema.attrs) attr_names.push_back(a.name);
    for (const auto& in : schema.inputs) input_kinds.push_back(in.kind);
    attrs.resize(schema.attrs.size());
    bound = true;
  }

  // A borrowed reference to the value of attribute i for this call.
  PyObject* Attr(std::size_t i, const AttrValue& value, const LeasePtr& lease) {
    AttrSlot& slot = attrs[i];
    if (slot.has && SameImmutableAttr(slot.value, value)) return slot.obj.get();
    bp::object obj = AttrToPython(value, lease);
    if (!ImmutableAttrType(TypeOf(value))) {
      temps.push_back(OwnedRef::Borrow(obj.ptr()));
      return obj.ptr();
    }
    slot.obj.Reset();
    slot.obj = InterpreterRef::Borrow(obj.ptr());
    slot.value = value;
    slot.has = true;
    return slot.obj.get();
  }

  // A borrowed reference to the view of `t` (input instance i) for this call.
  PyObject* Tensor(std::size_t i, ge::Tensor* t, const LeasePtr& lease) {
    if (tensors.size() <= i) tensors.resize(i + 1);
    ViewSlot<TensorView>& slot = tensors[i];
    // What MakeTensor would make: keeps the buffer alive; read-only when the
    // engine marked the tensor so (an input the op does not mutate).
    return PointView(
        slot, [&] { return TensorView{t, t->Owner(), lease, t->IsReadOnly()}; },
        [&] { return MakeTensor(t, t->Owner(), lease, /*read_only=*/false); }, reused);
  }

  // References the frame has to the context view: its slot's, and its
  // Context's when that Context binds it and shares it with nobody.
  Py_ssize_t CtxRefs() const { return ctx.obj && context.HoldsOnly(ctx.obj.get()) ? 2 : 1; }

  PyObject* Ctx(EagerOpExecutionContext* c, const LeasePtr& lease) {
    return PointView(
        ctx, [&] { return ExecCtxView{c, nullptr, lease, false}; }, [&] { return MakeExecCtx(c, lease); }, reused,
        CtxRefs());
  }

  // The end of a call (its lease already expired): drops the objects of this
  // call only, lets go of the tensors' buffers, and keeps only the views
  // nobody else holds.
  void EndCall() noexcept {
    temps.clear();
    for (auto& slot : tensors) ReleaseView(slot);
    ReleaseView(ctx, CtxRefs());
  }

  // The lease of a new call: the last one when nothing else shares it.
  const LeasePtr& NewLease() {
    if (!Lease::Renew(lease)) lease = std::make_shared<Lease>(false);
    return lease;
  }

  void Reset() noexcept {
    temps.clear();
    for (auto& slot : tensors) slot.obj.Reset();
    tensors.clear();
    ctx.obj.Reset();
    context.Reset();
    for (auto& a : attrs) a.obj.Reset();
    attrs.clear();
    kwnames.Reset();
    attr_names.clear();
    input_kinds.clear();
    bound = false;
    lease.reset();
  }
};

ExecuteFrame::ExecuteFrame(std::shared_ptr<const OpSchema> schema) : s_(std::make_unique<State>()) {
  s_->pinned = std::move(schema);
}
ExecuteFrame::~ExecuteFrame() = default;
void ExecuteFrame::Reset() noexcept { s_->Reset(); }
std::size_t ExecuteFrame::ReusedViews() const noexcept { return s_->reused; }

std::optional<ExecuteCall> ParseExecuteCall(const std::string& name) {
  if (name == "schema") return ExecuteCall::kSchemaBound;
  if (name == "schema_any_result") return ExecuteCall::kSchemaBoundAnyResult;
  if (name == "context") return ExecuteCall::kContext;
  return std::nullopt;
}

Status InvokeExecute(PyObject* method, PyObject* ctx_var, EagerOpExecutionContext* ctx, const CallSite& site,
                     bool keep_python_error, ExecuteFrame* frame, ExecuteCall form) {
  std::optional<ExecuteFrame> scratch_frame;  // made only when needed
  ExecuteFrame::State* f = frame != nullptr ? frame->s_.get() : nullptr;
  if (f == nullptr || f->busy) f = scratch_frame.emplace().s_.get();
  // In this order at the end of the call, on every path: the lease expires
  // (every view handed out, every memoryview released), then the frame keeps
  // what nobody else holds (a temporary frame drops everything).
  struct EndOfCall {
    ExecuteFrame::State* f;
    bool scratch;
    ~EndOfCall() {
      f->lease->Expire();
      f->EndCall();
      f->busy = false;
      if (scratch) f->Reset();
    }
  };
  const LeasePtr& lease = f->NewLease();
  EndOfCall end{f, scratch_frame.has_value()};
  f->busy = true;
  f->reused = 0;
  try {
    const OpSchema& schema = ctx->GetSchema();
    f->Bind(schema);
    const bool with_context = form == ExecuteCall::kContext;
    const bool check_none = form == ExecuteCall::kSchemaBound;
    const InstanceLayout& layout = ctx->InputLayout();
    // The context form passes no input and no attribute: the plugin reads them from the context.
    const std::size_t n_in = with_context ? 0 : schema.inputs.size(), n_attr = with_context ? 0 : schema.attrs.size();
    // Every argument slot is written below on each call, so the vector is
    // only resized when the schema's size changes (args[-1] stays free).
    const std::size_t slots = 1 + std::max<std::size_t>(n_in + n_attr, with_context ? 1 : 0);
    if (f->stack.size() != slots) f->stack.assign(slots, nullptr);
    PyObject** args = f->stack.data() + 1;  // args[-1] is free (PY_VECTORCALL_ARGUMENTS_OFFSET)
    for (std::size_t k = 0; k < n_in; ++k) {
      const std::size_t start = layout.Start(k), count = layout.Count(k);
      if (schema.inputs[k].kind == IrInputKind::kDynamic) {
        OwnedRef list = OwnedRef::Steal(PyList_New(static_cast<Py_ssize_t>(count)));
        if (!list) bp::throw_error_already_set();
        for (std::size_t i = 0; i < count; ++i) {
          PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i),
                          Py_NewRef(f->Tensor(start + i, ctx->GetInputTensor(start + i), lease)));
        }
        args[k] = list.get();
        f->temps.push_back(std::move(list));
      } else if (count == 0) {
        args[k] = Py_None;
      } else {
        args[k] = f->Tensor(start, ctx->GetInputTensor(start), lease);
      }
    }
    const RuntimeAttrs& attrs = *ctx->GetAttrs();
    for (std::size_t i = 0; i < n_attr; ++i) args[n_in + i] = f->Attr(i, attrs.At(i), lease);
    PyObject* view = f->Ctx(ctx, lease);
    PyObject* kwnames = with_context ? nullptr : f->kwnames.get();
    if (with_context) args[0] = view;  // the stack has room: 1 + n_in + n_attr >= 2 slots are kept below
    const std::size_t n_args = with_context ? 1 : n_in;
    auto call = [&] { return PyObject_Vectorcall(method, args, n_args | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames); };
    // The op's own frame runs the callback in its Context, where the
    // ContextVar already binds the view: no token, no new mapping per call.
    // ContextVars the callback sets stay in that Context for the op's later
    // calls (share/docs/plugin-authors.md, get_execute_ctx). A temporary frame
    // (re-entrant call, another thread inside the frame) or a Context that
    // cannot be entered uses set/reset on the caller's context instead.
    if (!end.scratch) {
      bool set_failed = false;
      if (f->context.Enter(ctx_var, view, &set_failed)) {
        return CheckNone(
            site, keep_python_error,
            [&] {
              PyObject* result = call();
              f->context.Exit(ctx_var);
              return result;
            },
            check_none);
      }
      if (set_failed) return PythonErrorStatus(site, keep_python_error);
    }
    const std::pair<PyObject*, PyObject*> binding{ctx_var, view};
    return WithContextVars(&binding, 1, site, keep_python_error, call, check_none);
  } catch (const bp::error_already_set&) {
    return PythonErrorStatus(site, keep_python_error);
  } catch (const std::exception& e) {
    return CppErrorStatus(site, e);
  }
}

Status InvokeInferMeta(PyObject* call_infer_meta, PyObject* proto, InferMetaContext* ctx, const CallSite& site) {
  try {
    const OpSchema& schema = ctx->GetSchema();
    const InstanceLayout& layout = ctx->InputLayout();
    bp::list inputs;
    for (std::size_t k = 0; k < schema.inputs.size(); ++k) {
      const std::size_t start = layout.Start(k);
      const std::size_t count = layout.Count(k);
      if (schema.inputs[k].kind == IrInputKind::kDynamic) {
        bp::list l;
        for (std::size_t i = 0; i < count; ++i) l.append(MakeOwnedTensorDesc(*ctx->GetInputDesc(start + i)));
        inputs.append(l);
      } else if (count == 0) {
        inputs.append(bp::object());
      } else {
        inputs.append(MakeOwnedTensorDesc(*ctx->GetInputDesc(start)));
      }
    }
    auto lease = std::make_shared<Lease>(true);
    LeaseScope scope(lease);
    bp::dict attrs;
    for (std::size_t i = 0; i < schema.attrs.size(); ++i) {
      attrs[schema.attrs[i].name] = AttrToPython(ctx->GetAttrs()->At(i), lease);
    }
    bp::object fn(bp::handle<>(bp::borrowed(call_infer_meta)));
    bp::object result = fn(bp::object(bp::handle<>(bp::borrowed(proto))), inputs, attrs);
    // result: list of (output_ir_index, TensorDesc) in order.
    std::vector<std::size_t> counts(schema.outputs.size(), 0);
    std::vector<TensorDesc> outs;
    for (Py_ssize_t i = 0, n = bp::len(result); i < n; ++i) {
      bp::object pair = result[i];
      std::size_t ir_index = bp::extract<std::size_t>(pair[0]);
      if (ir_index >= counts.size()) {
        return Status::Error(TypeErrorInfo(site, "infer_meta returned output index " + std::to_string(ir_index) +
                                                     " beyond the IR's " + std::to_string(counts.size()) + " outputs"));
      }
      ++counts[ir_index];
      outs.push_back(ExtractTensorDesc(pair[1], "infer_meta output " + std::to_string(ir_index)));
    }
    ctx->SetOutputs(std::move(outs), InstanceLayout(counts));
    return Status::Ok();
  } catch (const bp::error_already_set&) {
    return PythonErrorStatus(site, false);
  } catch (const std::exception& e) {
    return CppErrorStatus(site, e);
  }
}

}  // namespace ge::py
