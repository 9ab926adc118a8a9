// The pending registrations of loaded C++ op code (ge/op/library_registrations.h),
// each with the address that made it (ge/registration_owner.h).
#include "ge/op/library_registrations.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <utility>

#include "ge/registration_owner.h"

namespace ge {
namespace {

// Function-local statics: registrars run during other libraries' static
// initialization, in an order nobody controls, so nothing here may depend on
// this file's own static initialization having run first.
std::mutex& Mutex() {
  static std::mutex mu;
  return mu;
}
PendingRegistrations& Pending() {
  static PendingRegistrations pending;
  return pending;
}

template <typename T>
void Prepend(std::vector<T>& front, std::vector<T>& v) {
  front.insert(front.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
  v = std::move(front);
}

}  // namespace

std::optional<ObjectFile> ObjectOf(const void* address) {
  if (address == nullptr) return std::nullopt;
  Dl_info info{};
  struct link_map* map = nullptr;
  if (::dladdr1(address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 || map == nullptr) {
    return std::nullopt;
  }
  // The executable's link map has no name.
  std::string path = map->l_name != nullptr && map->l_name[0] != '\0' ? map->l_name : "/proc/self/exe";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  if (path == "/proc/self/exe") {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) path.assign(buf, static_cast<std::size_t>(n));
  }
  return ObjectFile{st.st_dev, st.st_ino, std::move(path)};
}

void AddRegisteredPrototypeFrom(RegisteredPrototype prototype, const void* origin) {
  std::lock_guard<std::mutex> lock(Mutex());
  Pending().regs.prototypes.push_back(std::move(prototype));
  Pending().prototype_origins.push_back(origin);
}

void AddRegisteredCustomOpFrom(RegisteredCustomOp op, const void* origin) {
  std::lock_guard<std::mutex> lock(Mutex());
  Pending().regs.custom_ops.push_back(std::move(op));
  Pending().custom_op_origins.push_back(origin);
}

// Callers outside the macros: the code that called is the owner.
void AddRegisteredPrototype(RegisteredPrototype prototype) {
  AddRegisteredPrototypeFrom(std::move(prototype), __builtin_return_address(0));
}

void AddRegisteredCustomOp(RegisteredCustomOp op) {
  AddRegisteredCustomOpFrom(std::move(op), __builtin_return_address(0));
}

void AddRegisteredInferFuncs(RegisteredInferFuncs funcs) {
  // IMPL_OP's registration code is an inline function of a public header,
  // which the dynamic linker may bind to another library's copy: the infer
  // function itself is the owner's own code.
  const void* origin = funcs.infer_shape != nullptr ? reinterpret_cast<const void*>(funcs.infer_shape)
                       : funcs.infer_datatype != nullptr ? reinterpret_cast<const void*>(funcs.infer_datatype)
                                                         : __builtin_return_address(0);
  std::lock_guard<std::mutex> lock(Mutex());
  Pending().regs.infer_funcs.push_back(std::move(funcs));
  Pending().infer_origins.push_back(origin);
}

PendingRegistrations TakePending() {
  std::lock_guard<std::mutex> lock(Mutex());
  PendingRegistrations out = std::move(Pending());
  Pending() = PendingRegistrations{};
  return out;
}

void Requeue(PendingRegistrations p) {
  std::lock_guard<std::mutex> lock(Mutex());
  PendingRegistrations& now = Pending();
  Prepend(p.regs.prototypes, now.regs.prototypes);
  Prepend(p.regs.infer_funcs, now.regs.infer_funcs);
  Prepend(p.regs.custom_ops, now.regs.custom_ops);
  Prepend(p.prototype_origins, now.prototype_origins);
  Prepend(p.infer_origins, now.infer_origins);
  Prepend(p.custom_op_origins, now.custom_op_origins);
}

LibraryRegistrations TakeRegistrations() { return TakePending().regs; }

std::vector<OwnedRegistrations> GroupByOwner(PendingRegistrations p) {
  std::vector<OwnedRegistrations> out;
  std::map<const void*, std::optional<ObjectFile>> seen;  // origin -> owner (dladdr once per address)
  auto group = [&](const void* origin) -> LibraryRegistrations& {
    auto it = seen.find(origin);
    if (it == seen.end()) it = seen.emplace(origin, ObjectOf(origin)).first;
    for (auto& g : out) {
      if (g.owner.has_value() == it->second.has_value() && (!g.owner || *g.owner == *it->second)) return g.regs;
    }
    out.push_back(OwnedRegistrations{it->second, {}});
    return out.back().regs;
  };
  for (std::size_t i = 0; i < p.regs.prototypes.size(); ++i) {
    group(i < p.prototype_origins.size() ? p.prototype_origins[i] : nullptr).prototypes.push_back(std::move(p.regs.prototypes[i]));
  }
  for (std::size_t i = 0; i < p.regs.infer_funcs.size(); ++i) {
    group(i < p.infer_origins.size() ? p.infer_origins[i] : nullptr).infer_funcs.push_back(std::move(p.regs.infer_funcs[i]));
  }
  for (std::size_t i = 0; i < p.regs.custom_ops.size(); ++i) {
    group(i < p.custom_op_origins.size() ? p.custom_op_origins[i] : nullptr).custom_ops.push_back(std::move(p.regs.custom_ops[i]));
  }
  return out;
}

}  // namespace ge
