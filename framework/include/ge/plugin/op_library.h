// ge/plugin/op_library.h: loads one C++ op library (a `lib*.so` of an opp
// root) and hands back exactly what it registered (REG_OP prototypes, IMPL_OP
// infer functions, REG_AUTO_MAPPING_OP custom ops; ge/op/library_registrations.h).
//
// Used by the plugin host and the registry's scanner, in that order of
// events: dlopen, then the registrations taken right after, under one
// process-wide mutex, and each attributed to the object whose code made it
// (its file's device and inode): a dependency the library links (DT_NEEDED)
// runs its static initializers inside this dlopen, and what it registers is
// the dependency's, returned by the dependency's own load, whichever of the
// two loads first. Rules: share/docs/op-packages.md, "Dependencies between op
// libraries".
// No Python here.
#pragma once

#include <string>

#include "ge/op/library_registrations.h"

namespace ge::plugin {

struct OpLibraryLoad {
  // "" when loaded; else one line naming the library and dlopen's own reason
  // ("cannot load op library /opp/.../libx.so: <dlerror()>").
  std::string error;
  // What the library registered (empty when `error` is set). The schemas are
  // shared and immutable; the creators and infer functions point into the
  // library, which stays loaded for the rest of the process.
  LibraryRegistrations registrations;
};

// Loads `path` (absolute) with dlopen(RTLD_NOW | RTLD_LOCAL): an undefined
// symbol, a file that is no ELF shared object of this machine, or a missing
// dependency is an error, never an abort. A crash in the library's static
// initializers ends the process (the registry's scanner marks the library
// "crashed"; engines may skip such libraries with HostOptions::skip_plugin).
//
// Process-wide and thread-safe: one load at a time. A library is never
// dlclose'd (ops created from it may outlive every host); loading the same
// file again (same device and inode) returns a copy of what its first load
// registered, since its static initializers do not run twice; a library
// first mapped as another's dependency returns what its initializers
// registered then. Registrations
// that were pending before the call (the executable's own) are left pending.
// Throws only std::bad_alloc.
OpLibraryLoad LoadOpLibrary(const std::string& path);

// The file of a loaded object that registered a usable prototype of
// `op_type` in its static initializers but was never loaded itself with
// LoadOpLibrary (a dependency of an op library that is no op library of the
// opp path), or "" when there is none. For the error of a custom op whose
// prototype is only there. Thread-safe.
std::string DependencyPrototypeOwner(const std::string& op_type);

}  // namespace ge::plugin
