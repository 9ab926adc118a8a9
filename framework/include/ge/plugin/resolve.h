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

#include <set>
#include <string>
#include <vector>

#include "ge/plugin/record.h"

namespace ge::plugin {

// Applies the rules over records in opp-path order (discovery problems may
// follow): a record whose op_type an earlier ok one takes becomes status
// "conflict" (error kind kConflict, op_type, conflicts_with, its
// ConflictRule and ConflictMessage); an earlier conflict verdict of the resolver is taken afresh (one
// with a built-in op stays). Warnings kPrototypeReplaced become
// kPrototypeUnused where an op library owns the op_type as a C++ custom op;
// an ok op library's prototype of an op_type an earlier one prototypes gets
// kLibraryPrototypeShadowed (afresh); every
// "prototype" error gets its kSplitPrototype note afresh from the plugins
// that prototype its op_type themselves (OwnPrototypeOpTypes). Returns the
// records in the same order.
std::vector<PluginRecord> Resolve(std::vector<PluginRecord> ordered);

// What a node of an op_type no record serves is told (the engine's "unknown
// op_type" and ge-plugin-ls --check), decided over records Resolve has
// decided, in their order: for each legacy op without a prototype
// (`unprototyped`) of an ok or conflicting record, kUnprototypedSplit when ok
// Python plugins prototype its op_type themselves (OwnPrototypeOpTypes),
// else kUnprototyped; for each ok Python plugin's prototype that it does
// not implement, that no ok record takes, that no legacy op's split already
// names and that no op library prototypes (an ok library's `prototypes`, or
// `library_prototypes`: libraries the records do not show, e.g.
// HostOptions::prototype_libraries), kPrototypeOnly. Each note's `path` is
// the record it is about.
std::vector<Diagnostic> UnservedNotes(const std::vector<PluginRecord>& resolved,
                                      const std::set<std::string>& library_prototypes = {});

}  // namespace ge::plugin
