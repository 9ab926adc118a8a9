// resolve.cc: see ge/plugin/resolve.h.
#include "ge/plugin/resolve.h"

#include <map>
#include <set>
#include <utility>

namespace ge::plugin {

std::vector<PluginRecord> Resolve(std::vector<PluginRecord> ordered) {
  std::map<std::string, std::string> owner;  // op_type -> path
  std::set<std::string> libraries;            // paths of op libraries that own ops
  // Op libraries load before Python plugins (as in the engine's host), so
  // their C++ ops win over Python implementations; path order within each.
  std::vector<PluginRecord*> order;
  for (auto& r : ordered) {
    if (r.op_library) order.push_back(&r);
  }
  for (auto& r : ordered) {
    if (!r.op_library) order.push_back(&r);
  }
  for (PluginRecord* rp : order) {
    PluginRecord& r = *rp;
    // A record keeps its scan verdict; conflicts over op_types are decided
    // here, afresh (a conflict with a built-in op is the scan's verdict).
    if (r.status == PluginStatus::kConflict && r.error.rule != ConflictRule::kNone &&
        r.error.rule != ConflictRule::kBuiltin) {
      r.status = PluginStatus::kOk;
      r.error = {};
      r.conflicts_with.clear();
    }
    if (r.status != PluginStatus::kOk) continue;
    bool clash = false;
    // A legacy execute without a prototype takes its op_type too.
    for (const OpRecord* op : TakenOps(r)) {
      auto it = owner.find(op->op_type);
      if (it == owner.end()) continue;
      const ConflictRule rule = !libraries.count(it->second) ? ConflictRule::kPathOrder
                                : r.op_library             ? ConflictRule::kFirstLibrary
                                                           : ConflictRule::kLibraryOverPython;
      r.status = PluginStatus::kConflict;
      r.error = {};
      r.error.kind = ErrorKind::kConflict;
      r.error.rule = rule;
      r.error.op_type = op->op_type;
      r.error.message = ConflictMessage(op->op_type, r.path, it->second, rule);
      r.conflicts_with = it->second;
      clash = true;
      break;
    }
    if (clash) continue;
    for (const OpRecord* op : TakenOps(r)) owner[op->op_type] = r.path;
    if (r.op_library) libraries.insert(r.path);
  }
  // An op library's prototype of an op_type an earlier op library (path
  // order) prototypes is not used: decided afresh (a scanner sees one
  // library at a time and cannot tell).
  std::map<std::string, std::string> first_prototype;  // op_type -> library path
  for (auto& r : ordered) {
    if (!r.op_library) continue;
    auto& w = r.warnings;
    for (auto it = w.begin(); it != w.end();) {
      it = it->kind == DiagnosticKind::kLibraryPrototypeShadowed ? w.erase(it) : std::next(it);
    }
    if (!r.ok()) continue;
    for (const auto& t : r.prototypes) {
      auto [it, fresh] = first_prototype.emplace(t, r.path);
      if (!fresh && it->second != r.path) w.push_back(LibraryPrototypeShadowed(t, r.path, it->second));
    }
  }
  // A Python prototype of an op_type a library implements as a C++ custom op
  // is not used (a scanner, lending prototypes only, cannot tell).
  for (auto& r : ordered) {
    if (r.op_library) continue;
    for (auto& w : r.warnings) {
      if (w.kind != DiagnosticKind::kPrototypeReplaced) continue;
      auto it = owner.find(w.op_type);
      if (it == owner.end() || !libraries.count(it->second)) continue;
      w.kind = DiagnosticKind::kPrototypeUnused;
      w.library = it->second;
    }
  }
  // A prototype and its implementation split over two plugins: the
  // implementation's "canonical IR not found" names the plugin(s) with the
  // prototype. Decided afresh each time, like conflicts.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> prototyped_by;  // op_type -> (name, path)
  for (const auto& r : ordered) {
    for (const auto& t : OwnPrototypeOpTypes(r)) prototyped_by[t].emplace_back(r.name, r.path);
  }
  for (auto& r : ordered) {
    if (r.op_library || r.error.kind != ErrorKind::kPrototype) continue;
    auto& notes = r.error.notes;
    for (auto n = notes.begin(); n != notes.end();) {
      n = n->kind == DiagnosticKind::kSplitPrototype ? notes.erase(n) : std::next(n);
    }
    auto it = r.error.op_type.empty() ? prototyped_by.end() : prototyped_by.find(r.error.op_type);
    if (it != prototyped_by.end()) notes.push_back(SplitPrototype(r.error.op_type, it->second));
  }
  return ordered;
}

std::vector<Diagnostic> UnservedNotes(const std::vector<PluginRecord>& resolved,
                                      const std::set<std::string>& library_prototypes) {
  std::set<std::string> served = library_prototypes;  // op_types a node can run, or a library prototypes
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> prototyped_by;  // op_type -> (name, path)
  std::set<std::string> legacy;  // op_types a legacy op without a prototype takes
  for (const auto& r : resolved) {
    if (r.ok()) {
      for (const auto& op : r.ops) served.insert(op.op_type);
      if (r.op_library) served.insert(r.prototypes.begin(), r.prototypes.end());
    }
    for (const auto& t : OwnPrototypeOpTypes(r)) prototyped_by[t].emplace_back(r.name, r.path);
    if (r.ok() || r.status == PluginStatus::kConflict) {
      for (const auto& op : r.unprototyped) legacy.insert(op.op_type);
    }
  }
  std::vector<Diagnostic> out;
  for (const auto& r : resolved) {
    if (r.op_library) continue;
    if (r.ok() || r.status == PluginStatus::kConflict) {
      for (const auto& op : r.unprototyped) {
        std::vector<std::pair<std::string, std::string>> others;
        if (auto it = prototyped_by.find(op.op_type); it != prototyped_by.end()) {
          for (const auto& who : it->second) {
            if (who.second != r.path) others.push_back(who);
          }
        }
        out.push_back(others.empty() ? Unprototyped(op.op_type, r.name, r.path)
                                     : UnprototypedSplit(op.op_type, r.name, r.path, std::move(others)));
      }
    }
    if (!r.ok()) continue;
    for (const auto& t : r.prototypes) {
      if (served.count(t) || legacy.count(t)) continue;
      out.push_back(PrototypeOnly(t, r.name, r.path));
    }
  }
  return out;
}

}  // namespace ge::plugin
