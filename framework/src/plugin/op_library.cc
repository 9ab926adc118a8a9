// op_library.cc: see ge/plugin/op_library.h.
#include "ge/plugin/op_library.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <map>
#include <mutex>
#include <utility>

#include "ge/registration_owner.h"

namespace ge::plugin {
namespace {

void Append(LibraryRegistrations& to, LibraryRegistrations from) {
  for (auto& p : from.prototypes) to.prototypes.push_back(std::move(p));
  for (auto& f : from.infer_funcs) to.infer_funcs.push_back(std::move(f));
  for (auto& o : from.custom_ops) to.custom_ops.push_back(std::move(o));
}

}  // namespace

// Function-local: a library may be loaded from another library's static
// initialization, before this file's own statics would exist.
struct Loads {
  std::mutex mu;
  // What each object's static initializers registered, by its file: filled
  // by the load that ran them (the object's own, or a dependant's, which maps
  // it through DT_NEEDED first), read by the object's own load.
  std::map<ObjectFile, LibraryRegistrations> registered_by;
  // The objects whose own load returned (their registrations are final).
  std::map<ObjectFile, bool> opened;
};
Loads& TheLoads() {
  static Loads loads;
  return loads;
}

std::string DependencyPrototypeOwner(const std::string& op_type) {
  Loads& l = TheLoads();
  std::lock_guard<std::mutex> lock(l.mu);
  for (const auto& [object, regs] : l.registered_by) {
    if (l.opened.count(object)) continue;
    for (const auto& p : regs.prototypes) {
      if (p.op_type == op_type && p.schema) return object.path;
    }
  }
  return {};
}

OpLibraryLoad LoadOpLibrary(const std::string& path) {
  Loads& loads = TheLoads();
  auto& registered_by = loads.registered_by;
  auto& opened = loads.opened;
  OpLibraryLoad out;
  std::lock_guard<std::mutex> lock(loads.mu);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    out.error = "cannot load op library " + path + ": it does not exist or cannot be read";
    return out;
  }
  const ObjectFile self{st.st_dev, st.st_ino, path};
  if (opened.count(self)) {
    out.registrations = registered_by[self];
    return out;
  }
  // Whatever was registered before (by the executable or a library linked
  // to it) is not this library's.
  PendingRegistrations before = TakePending();
  ::dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    (void)TakePending();  // a failed load may have run some initializers: its objects are gone
    Requeue(std::move(before));
    out.error = "cannot load op library " + path + ": " + (why != nullptr ? why : "dlopen failed");
    return out;
  }
  // Each registration goes to the object whose code made it: this library's
  // are its own; a dependency's wait for the dependency's own load (or stay
  // unused when it is not an op library of the opp path). One whose origin
  // no object holds is this library's (a registration made by hand).
  for (OwnedRegistrations& g : GroupByOwner(TakePending())) {
    Append(g.owner && !(*g.owner == self) ? registered_by[*g.owner] : registered_by[self], std::move(g.regs));
  }
  Requeue(std::move(before));
  opened[self] = true;
  out.registrations = registered_by[self];
  return out;
}

}  // namespace ge::plugin
