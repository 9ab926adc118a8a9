// ge/plugin/resolve.h: who wins an op_type, decided once over plugin records.
//
// The one resolver of the rules of share/docs/registry.md ("Conflicts") and
// share/docs/op-packages.md: op libraries before Python plugins, first in
// opp-path order within each; a legacy execute without a prototype takes its
// op_type too; a Python prototype of an op_type an op library implements as
// a C++ custom op is not used; a prototype and its implementation split over
// two plugins are named on the implementation's error. The registry's
// refresh, `ge-plugin-ls --check` and the engine's host (its conflict text)
// use it; its verdicts are typed (PluginError fields, Diagnostic), and text
// only where they are shown.
//
// Thread-safety: pure functions over values.
#pragma once

#include <string>
#include <vector>

#include "ge/plugin/record.h"

namespace ge::plugin {

// Why the op_type's first owner wins.
enum class ConflictRule {
  kPathOrder,          // two Python plugins: the first in path order
  kBuiltin,            // a built-in op cannot be replaced
  kFirstLibrary,       // two op libraries: the first in path order
  kLibraryOverPython,  // op libraries load before Python plugins
};

// "op_type 'X' from PATH conflicts with the one from OTHER (<rule>)": the one
// wording of a conflict, for the host, the registry and the engine's registry.
std::string ConflictMessage(const std::string& op_type, const std::string& path, const std::string& other,
                            ConflictRule rule);

// Applies the rules over records in opp-path order (discovery problems may
// follow): a record whose op_type an earlier ok one takes becomes status
// "conflict" (error kind "conflict", op_type, conflicts_with, the message
// above); an earlier conflict verdict of the resolver is taken afresh (one
// with a built-in op stays). Warnings kPrototypeReplaced become
// kPrototypeUnused where an op library owns the op_type as a C++ custom op;
// an ok op library's prototype of an op_type an earlier one prototypes gets
// kLibraryPrototypeShadowed (afresh); every
// "prototype" error gets its kSplitPrototype note afresh from the plugins
// that prototype its op_type themselves (OwnPrototypeOpTypes). Returns the
// records in the same order.
std::vector<PluginRecord> Resolve(std::vector<PluginRecord> ordered);

}  // namespace ge::plugin
