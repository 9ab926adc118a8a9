// ge/registration_owner.h (internal, not installed): which loaded object made
// each pending registration of ge/op/library_registrations.h.
//
// A registration remembers one address of the code or data that made it
// (a prototype: its REG_OP factory function; infer functions: the infer
// function itself; a custom op: its create function, else the return address
// of the registering call; anything else: the return address of the Add*
// call). When a library is loaded, its dependencies' static initializers run
// in the same dlopen (DT_NEEDED), so "registered during the load of X" is not
// "registered by X": ge::plugin::LoadOpLibrary groups what it takes by the
// object holding each address (share/docs/op-packages.md, "Dependencies
// between op libraries").
//
// Thread-safety: every function is; TakePending and GroupByOwner never run
// the registrations' code. Throws only std::bad_alloc.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ge/op/library_registrations.h"

namespace ge {

// A loaded object's file, as the dynamic loader opened it.
struct ObjectFile {
  dev_t dev = 0;
  ino_t ino = 0;
  std::string path;  // as the loader names it (the executable: /proc/self/exe resolved)
  bool operator<(const ObjectFile& o) const { return std::tie(dev, ino) < std::tie(o.dev, o.ino); }
  bool operator==(const ObjectFile& o) const { return dev == o.dev && ino == o.ino; }
};

// The object (shared library or the executable) whose mapping holds
// `address`, or nullopt: no loaded object holds it (unloaded since), or its
// file cannot be stat'ed. Uses dladdr1(RTLD_DL_LINKMAP): valid only while the
// object stays loaded, which is why GroupByOwner runs right after dlopen.
std::optional<ObjectFile> ObjectOf(const void* address);

// The pending registrations with, index for index, the address that made each.
struct PendingRegistrations {
  LibraryRegistrations regs;
  std::vector<const void*> prototype_origins;
  std::vector<const void*> infer_origins;
  std::vector<const void*> custom_op_origins;
};

// Moves out everything pending (as TakeRegistrations), with origins.
PendingRegistrations TakePending();
// Puts `p` back in front of whatever was registered since, origins kept.
void Requeue(PendingRegistrations p);

// Registrations of one object, in registration order; `owner` nullopt for
// those whose origin no loaded object holds.
struct OwnedRegistrations {
  std::optional<ObjectFile> owner;
  LibraryRegistrations regs;
};
// `p` grouped by owner (an owner first seen first; within a group, registration order).
std::vector<OwnedRegistrations> GroupByOwner(PendingRegistrations p);

// The Add* functions with the origin given (the registration macros' own path).
void AddRegisteredPrototypeFrom(RegisteredPrototype prototype, const void* origin);
void AddRegisteredCustomOpFrom(RegisteredCustomOp op, const void* origin);

}  // namespace ge
