// ge/op/status.h: the result of an operator callback, with the Python error
// details when the op is a Python plugin.
//
// Value type. A failed Status names the plugin, its file, the call site and, for
// a Python exception, its type, message and formatted traceback.
#pragma once

#include <string>

namespace ge {

struct ErrorInfo {
  std::string message;          // one line, UTF-8
  std::string plugin;           // plugin name, "" for C++ ops
  std::string file;             // plugin file or package directory
  std::string call_site;        // "execute", "infer_meta", "import", ...
  std::string exception_type;   // Python exception type ("ValueError"), "" if none
  std::string location;         // "file.py:12" of the innermost plugin frame
  std::string location_file;    // the same as data: the file ("" when unknown) ...
  int location_line = 0;        // ... and its line (1-based; 0 when unknown)
  std::string kind;             // the exception's __ge_kind__ ("extension", ...), "" when unset
  std::string op_type;          // the exception's __ge_op_type__ (the op_type a "prototype" error is about), "" when unset
  std::string traceback;        // formatted Python traceback, may be empty
};

class Status {
 public:
  Status() = default;  // success
  static Status Ok() { return {}; }
  static Status Error(std::string message) {
    Status s;
    s.ok_ = false;
    s.info_.message = std::move(message);
    return s;
  }
  static Status Error(ErrorInfo info) {
    Status s;
    s.ok_ = false;
    s.info_ = std::move(info);
    return s;
  }
  bool ok() const noexcept { return ok_; }
  const std::string& message() const noexcept { return info_.message; }
  const ErrorInfo& info() const noexcept { return info_; }
  // "message (plugin 'p', file f.py:12, in execute)" and the traceback below.
  std::string Describe() const;

 private:
  bool ok_ = true;
  ErrorInfo info_;
};

}  // namespace ge
