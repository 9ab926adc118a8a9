// op_library.cc: see ge/plugin/op_library.h.
#include "ge/plugin/op_library.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <map>
#include <mutex>
#include <utility>

namespace ge::plugin {
namespace {

// Puts registrations back in the pending list, in their order.
void Requeue(LibraryRegistrations regs) {
  for (auto& p : regs.prototypes) AddRegisteredPrototype(std::move(p));
  for (auto& f : regs.infer_funcs) AddRegisteredInferFuncs(std::move(f));
  for (auto& o : regs.custom_ops) AddRegisteredCustomOp(std::move(o));
}

}  // namespace

OpLibraryLoad LoadOpLibrary(const std::string& path) {
  // Function-local: a library may be loaded from another library's static
  // initialization, before this file's own statics would exist.
  static std::mutex mu;
  static std::map<std::pair<dev_t, ino_t>, LibraryRegistrations> loaded;
  OpLibraryLoad out;
  std::lock_guard<std::mutex> lock(mu);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    out.error = "cannot load op library " + path + ": it does not exist or cannot be read";
    return out;
  }
  const auto id = std::make_pair(st.st_dev, st.st_ino);
  if (auto it = loaded.find(id); it != loaded.end()) {
    out.registrations = it->second;
    return out;
  }
  // Whatever was registered before (by the executable or a library linked
  // to it) is not this library's.
  LibraryRegistrations before = TakeRegistrations();
  ::dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    LibraryRegistrations partial = TakeRegistrations();  // a failed load may have run some initializers
    (void)partial;
    Requeue(std::move(before));
    out.error = "cannot load op library " + path + ": " + (why != nullptr ? why : "dlopen failed");
    return out;
  }
  out.registrations = TakeRegistrations();
  Requeue(std::move(before));
  loaded.emplace(id, out.registrations);
  return out;
}

}  // namespace ge::plugin
