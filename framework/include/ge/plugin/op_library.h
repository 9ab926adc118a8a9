// ge/plugin/op_library.h: loads one C++ op library (a `lib*.so` of an opp
// root) and hands back exactly what it registered (REG_OP prototypes, IMPL_OP
// infer functions, REG_AUTO_MAPPING_OP custom ops; ge/op/library_registrations.h).
//
// Used by the plugin host and the registry's scanner, in that order of
// events: dlopen, then ge::TakeRegistrations right after, under one
// process-wide mutex, so that every registration is attributed to the library
// whose static initializers made it. Rules: share/docs/op-packages.md.
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
// registered, since its static initializers do not run twice. Registrations
// that were pending before the call (the executable's own) are left pending.
// Throws only std::bad_alloc.
OpLibraryLoad LoadOpLibrary(const std::string& path);

}  // namespace ge::plugin
