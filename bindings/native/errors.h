// errors.h: raising Python exceptions from C++ through Boost.Python, and the
// one place where a pending Python exception becomes a C++ ErrorInfo.
#pragma once

#include <Python.h>

#include <string>

#include "ge/op/status.h"

namespace ge::py {

// Set the Python error and throw boost::python::error_already_set. Each is only
// valid with the GIL held, inside code called from Boost.Python or wrapped by
// the caller in a try block.
[[noreturn]] void RaiseTypeError(const std::string& msg);
[[noreturn]] void RaiseValueError(const std::string& msg);
[[noreturn]] void RaiseRuntimeError(const std::string& msg);
[[noreturn]] void RaiseIndexError(const std::string& msg);
[[noreturn]] void RaiseKeyError(const std::string& msg);

// An integer argument taken as Python's builtins take one (operator.index):
// an int or any object with __index__ (numpy integers, np.prod(...) results);
// never a bool (Python's or numpy's) and never a float. Returns true and the
// value (overflow: -1 below, +1 above the int64 range, as
// PyLong_AsLongLongAndOverflow) or false with no Python error pending.
// Precondition: the GIL is held.
bool IndexValue(PyObject* obj, long long* value, int* overflow);
// The same, for values above int64: the exact value as an owned int, or null.
PyObject* IndexObject(PyObject* obj);

// Converts the pending Python exception (and clears it) into ErrorInfo: type
// name, message, formatted traceback, innermost frame location, plus the
// plugin, file and call site given. Survives exceptions whose str() raises and
// text that cannot be encoded as UTF-8 (backslash-escaped). SystemExit and
// KeyboardInterrupt are converted like any other exception: the process never
// exits because of plugin code. With no pending exception it describes a
// failure with `fallback_message`. Precondition: the GIL is held.
ErrorInfo FetchPythonError(const std::string& plugin, const std::string& file, const std::string& call_site,
                           const std::string& fallback_message = "unknown Python error");

// A path (str) as the bytes it names: os.fsencode (UTF-8 with
// surrogateescape), so a non-UTF-8 file name comes back byte for byte. Not a
// str: SafeStr. GIL held.
std::string FsPath(PyObject* obj);
// The str Python uses for the path `path` (os.fsdecode): a new reference, or
// null with a Python error set. GIL held.
PyObject* FsPathObject(const std::string& path);

// str(obj) as UTF-8 that never throws (backslash-escapes what cannot be
// encoded; "<unprintable T object>" when str() itself raises). GIL held.
std::string SafeStr(PyObject* obj);

}  // namespace ge::py
