// py_ref.cc: the out-of-line destructor of InterpreterRef (keeps logging out of py_ref.h).
#include "py_ref.h"

#include "ge/log_spdlog.h"

namespace ge::py {

InterpreterRef::~InterpreterRef() {
  if (p_ != nullptr) {
    Logger("host")->error("a Python reference was leaked at shutdown (not released in its interpreter)");
  }
}

}  // namespace ge::py
