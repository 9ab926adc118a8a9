// The single Python-error converter of the project (see errors.h).
#include "errors.h"

#include <boost/python.hpp>

#include <cstring>

#include "ge/text.h"
#include "lease.h"
#include "py_ref.h"

namespace bp = boost::python;

namespace ge::py {

namespace {
[[noreturn]] void Raise(PyObject* type, const std::string& msg) {
  PyErr_SetString(type, msg.c_str());
  bp::throw_error_already_set();
  __builtin_unreachable();
}

std::string Utf8(PyObject* unicode) {
  OwnedRef bytes = OwnedRef::Steal(PyUnicode_AsEncodedString(unicode, "utf-8", "backslashreplace"));
  if (!bytes) {
    PyErr_Clear();
    return "<undecodable text>";
  }
  return std::string(PyBytes_AS_STRING(bytes.get()), static_cast<std::size_t>(PyBytes_GET_SIZE(bytes.get())));
}
}  // namespace

PyObject* IndexObject(PyObject* obj) {
  // numpy.bool_ has a (deprecated) __index__: a bool is refused whatever its type.
  if (PyBool_Check(obj) || std::strcmp(Py_TYPE(obj)->tp_name, "numpy.bool_") == 0) return nullptr;
  if (PyLong_Check(obj)) {
    Py_INCREF(obj);
    return obj;
  }
  if (PyFloat_Check(obj) || !PyIndex_Check(obj)) return nullptr;
  PyObject* i = PyNumber_Index(obj);
  if (i == nullptr) PyErr_Clear();
  return i;
}

bool IndexValue(PyObject* obj, long long* value, int* overflow) {
  PyObject* i = IndexObject(obj);
  if (i == nullptr) return false;
  *value = PyLong_AsLongLongAndOverflow(i, overflow);
  Py_DECREF(i);
  if (PyErr_Occurred()) PyErr_Clear();
  return true;
}

void RaiseTypeError(const std::string& msg) { Raise(PyExc_TypeError, msg); }
void RaiseValueError(const std::string& msg) { Raise(PyExc_ValueError, msg); }
void RaiseRuntimeError(const std::string& msg) { Raise(PyExc_RuntimeError, msg); }
void RaiseIndexError(const std::string& msg) { Raise(PyExc_IndexError, msg); }
void RaiseKeyError(const std::string& msg) { Raise(PyExc_KeyError, msg); }

std::string FsPath(PyObject* obj) {
  if (obj == nullptr || !PyUnicode_Check(obj)) return SafeStr(obj);
  OwnedRef bytes = OwnedRef::Steal(PyUnicode_EncodeFSDefault(obj));
  if (!bytes) {
    PyErr_Clear();
    return SafeStr(obj);
  }
  return std::string(PyBytes_AS_STRING(bytes.get()), static_cast<std::size_t>(PyBytes_GET_SIZE(bytes.get())));
}

PyObject* FsPathObject(const std::string& path) {
  return PyUnicode_DecodeFSDefaultAndSize(path.data(), static_cast<Py_ssize_t>(path.size()));
}

std::string SafeStr(PyObject* obj) {
  if (obj == nullptr) return "<null>";
  OwnedRef s = OwnedRef::Steal(PyObject_Str(obj));
  if (!s) {
    PyErr_Clear();
    return std::string("<unprintable ") + Py_TYPE(obj)->tp_name + " object>";
  }
  return Utf8(s.get());
}

namespace {

// "<dir of the ge package>/" as the current interpreter imported it, or "" when
// ge is not imported. Precondition: the GIL is held.
std::string GePackageDir() {
  OwnedRef name = OwnedRef::Steal(PyUnicode_FromString("ge"));
  OwnedRef mod = OwnedRef::Steal(name ? PyImport_GetModule(name.get()) : nullptr);
  OwnedRef path = OwnedRef::Steal(mod ? PyObject_GetAttrString(mod.get(), "__file__") : nullptr);
  PyErr_Clear();
  if (!path || !PyUnicode_Check(path.get())) return "";
  const std::string file = SafeStr(path.get());
  const std::size_t slash = file.rfind('/');
  return slash == std::string::npos ? "" : file.substr(0, slash + 1);
}

}  // namespace

ErrorInfo FetchPythonError(const std::string& plugin, const std::string& file, const std::string& call_site,
                           const std::string& fallback_message) {
  ErrorInfo info;
  info.plugin = plugin;
  info.file = file;
  info.call_site = call_site;
  if (!PyErr_Occurred()) {
    info.message = fallback_message;
    return info;
  }
  PyObject* raw_type = nullptr;
  PyObject* raw_value = nullptr;
  PyObject* raw_tb = nullptr;
  PyErr_Fetch(&raw_type, &raw_value, &raw_tb);
  PyErr_NormalizeException(&raw_type, &raw_value, &raw_tb);
  OwnedRef type = OwnedRef::Steal(raw_type), value = OwnedRef::Steal(raw_value), tb = OwnedRef::Steal(raw_tb);
  if (tb && value) PyException_SetTraceback(value.get(), tb.get());

  info.exception_type = type ? reinterpret_cast<PyTypeObject*>(type.get())->tp_name : "Exception";
  std::string text = value ? SafeStr(value.get()) : std::string();
  // Plugin text is cut (a 10 MB message would otherwise be repeated in every
  // report that quotes it; ge/text.h).
  info.message = info.exception_type + (text.empty() ? "" : ": " + Abbreviate(text, kMaxMessageChars));

  // SyntaxError carries its own location (the failing line is not a frame).
  if (value && type && PyErr_GivenExceptionMatches(type.get(), PyExc_SyntaxError)) {
    OwnedRef fname = OwnedRef::Steal(PyObject_GetAttrString(value.get(), "filename"));
    OwnedRef lineno = OwnedRef::Steal(PyObject_GetAttrString(value.get(), "lineno"));
    PyErr_Clear();
    if (fname && fname.get() != Py_None && lineno && PyLong_Check(lineno.get())) {
      info.location_file = FsPath(fname.get());
      info.location_line = static_cast<int>(PyLong_AsLong(lineno.get()));
      info.location = SafeStr(fname.get()) + ":" + std::to_string(info.location_line);
    }
  }
  // The innermost frame of the plugin (a frame in `file`, or under it for a
  // package directory), so an error raised inside numpy or ge names the plugin
  // line that called it. When no frame is the plugin's (signature validation
  // run by the host), the innermost frame outside the host's own `ge` package:
  // a line of ge itself tells a plugin author nothing (such messages name the
  // plugin's method themselves). No such frame: no location.
  if (info.location.empty() && tb) {
    const std::string ge_dir = GePackageDir();
    std::string innermost, in_plugin;
    std::string innermost_file, in_plugin_file;
    int innermost_line = 0, in_plugin_line = 0;
    for (auto* t = reinterpret_cast<PyTracebackObject*>(tb.get()); t != nullptr; t = t->tb_next) {
      PyCodeObject* code = PyFrame_GetCode(t->tb_frame);
      if (code == nullptr) continue;
      OwnedRef filename = OwnedRef::Steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_filename"));
      Py_DECREF(code);
      PyErr_Clear();
      if (!filename) continue;
      const std::string name = SafeStr(filename.get());
      const std::string here = name + ":" + std::to_string(t->tb_lineno);
      const bool ours = !file.empty() && name.compare(0, file.size(), file) == 0 &&
                        (name.size() == file.size() || name[file.size()] == '/');
      if (ours) in_plugin = here, in_plugin_file = FsPath(filename.get()), in_plugin_line = t->tb_lineno;
      if (ge_dir.empty() || name.compare(0, ge_dir.size(), ge_dir) != 0) {
        innermost = here, innermost_file = FsPath(filename.get()), innermost_line = t->tb_lineno;
      }
    }
    const bool plugin_frame = !in_plugin.empty();
    info.location = plugin_frame ? in_plugin : innermost;
    info.location_file = plugin_frame ? in_plugin_file : innermost_file;
    info.location_line = plugin_frame ? in_plugin_line : innermost_line;
  }
  if (value) {
    OwnedRef kind = OwnedRef::Steal(PyObject_GetAttrString(value.get(), "__ge_kind__"));
    if (kind && PyUnicode_Check(kind.get())) info.kind = SafeStr(kind.get());
    PyErr_Clear();
    OwnedRef op_type = OwnedRef::Steal(PyObject_GetAttrString(value.get(), "__ge_op_type__"));
    if (op_type && PyUnicode_Check(op_type.get())) info.op_type = SafeStr(op_type.get());
    PyErr_Clear();
  }
  // Formatted traceback through the interpreter's own traceback module; if that
  // fails (a broken interpreter), keep what we have.
  OwnedRef tbmod = OwnedRef::Steal(PyImport_ImportModule("traceback"));
  if (tbmod) {
    OwnedRef lines = OwnedRef::Steal(PyObject_CallMethod(tbmod.get(), "format_exception", "OOO",
                                                         type ? type.get() : Py_None, value ? value.get() : Py_None,
                                                         tb ? tb.get() : Py_None));
    if (lines) {
      OwnedRef empty = OwnedRef::Steal(PyUnicode_FromString(""));
      OwnedRef joined = OwnedRef::Steal(empty ? PyUnicode_Join(empty.get(), lines.get()) : nullptr);
      if (joined) info.traceback = Utf8(joined.get());
    }
  }
  PyErr_Clear();
  while (!info.traceback.empty() && info.traceback.back() == '\n') info.traceback.pop_back();
  if (info.traceback.size() > kMaxDetailsChars) {
    // Keep the end: the innermost frames and the exception line.
    const std::size_t total = info.traceback.size();
    std::size_t cut = total - kMaxDetailsChars;
    while (cut < total && (static_cast<unsigned char>(info.traceback[cut]) & 0xC0) == 0x80) ++cut;
    info.traceback = "... (" + std::to_string(cut) + " bytes of traceback left out)\n" + info.traceback.substr(cut);
  }
  return info;
}

// ---- Lease -----------------------------------------------------------------

Lease::~Lease() {
  // Views are dropped at Expire(); a lease destroyed without Expire() (owned
  // values) never adopted any.
}

void Lease::AdoptMemoryView(PyObject* memoryview) {
  Py_INCREF(memoryview);
  views_.push_back(memoryview);
}

void Lease::Expire() noexcept {
  alive_ = false;
  if (views_.empty()) return;
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);  // keep a pending error (the callback's) intact
  for (PyObject* mv : views_) {
    PyObject* r = PyObject_CallMethod(mv, "release", nullptr);
    if (r == nullptr) PyErr_Clear();  // exported further (BufferError): memory is kept alive by its owner
    Py_XDECREF(r);
    Py_DECREF(mv);
  }
  views_.clear();
  PyErr_Restore(t, v, tb);
}

const std::shared_ptr<Lease>& Lease::Owned() {
  static const std::shared_ptr<Lease> kOwned = std::make_shared<Lease>(false);
  return kOwned;
}

const std::shared_ptr<Lease>& Lease::Expired() {
  static const std::shared_ptr<Lease> kExpired = [] {
    auto lease = std::make_shared<Lease>(false);
    lease->alive_ = false;
    return lease;
  }();
  return kExpired;
}

bool Lease::Renew(const std::shared_ptr<Lease>& lease) noexcept {
  if (!lease || lease.use_count() != 1 || lease->alive_ || lease->owner_ != nullptr || !lease->views_.empty()) {
    return false;
  }
  lease->alive_ = true;
  return true;
}

std::shared_ptr<Lease> Lease::ForOwner(const char* owner) {
  auto lease = std::make_shared<Lease>(false);
  lease->owner_ = owner;
  return lease;
}

void CheckAlive(const Lease& lease) {
  if (lease.alive()) return;
  if (lease.owner() != nullptr) {
    RaiseRuntimeError(std::string("Borrowed native object has expired: its owning ") + lease.owner() +
                      " handle has expired (a view cannot outlive the object it was taken from)");
  }
  RaiseRuntimeError("Borrowed native object has expired");
}

void CheckWritable(const Lease& lease) {
  CheckAlive(lease);
  if (lease.read_only()) RaiseRuntimeError("borrowed object is read-only");
}

}  // namespace ge::py
