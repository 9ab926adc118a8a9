// The pending registrations of loaded C++ op code (ge/op/library_registrations.h).
#include "ge/op/library_registrations.h"

#include <mutex>
#include <utility>

namespace ge {
namespace {

// Function-local statics: registrars run during other libraries' static
// initialization, in an order nobody controls, so nothing here may depend on
// this file's own static initialization having run first.
std::mutex& Mutex() {
  static std::mutex mu;
  return mu;
}
LibraryRegistrations& Pending() {
  static LibraryRegistrations pending;
  return pending;
}

}  // namespace

void AddRegisteredPrototype(RegisteredPrototype prototype) {
  std::lock_guard<std::mutex> lock(Mutex());
  Pending().prototypes.push_back(std::move(prototype));
}

void AddRegisteredInferFuncs(RegisteredInferFuncs funcs) {
  std::lock_guard<std::mutex> lock(Mutex());
  Pending().infer_funcs.push_back(std::move(funcs));
}

void AddRegisteredCustomOp(RegisteredCustomOp op) {
  std::lock_guard<std::mutex> lock(Mutex());
  Pending().custom_ops.push_back(std::move(op));
}

LibraryRegistrations TakeRegistrations() {
  std::lock_guard<std::mutex> lock(Mutex());
  LibraryRegistrations out = std::move(Pending());
  Pending() = LibraryRegistrations{};
  return out;
}

}  // namespace ge
