// refresh.cc: see refresh.h.
#include "refresh.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "ge/plugin/discovery.h"

namespace ge::registry {

using plugin::PluginRecord;
using plugin::PluginStatus;

std::vector<PluginRecord> Refresh(const std::vector<std::string>& entries, std::map<std::string, PluginRecord>& records,
                                  const RefreshOptions& opts, RefreshStats* stats, bool force,
                                  const std::vector<std::string>& force_paths) {
  plugin::DiscoverOptions dopts;
  dopts.uid = ::geteuid();
  dopts.check_safety = !opts.allow_insecure;
  const plugin::Discovery found = plugin::Discover(entries, dopts);
  std::vector<std::string> to_scan;
  std::map<std::string, plugin::Stamp> stamps;
  std::set<std::string> live;
  RefreshStats st;
  st.discovered = found.plugins.size();
  const std::set<std::string> forced(force_paths.begin(), force_paths.end());
  for (const auto& c : found.plugins) {
    live.insert(c.path);
    plugin::Stamp now;
    auto it = records.find(c.path);
    bool fresh = false;
    if (it != records.end() && it->second.stamp && !force && !forced.count(c.path)) {
      fresh = plugin::StillFresh(c, *it->second.stamp, &now);
      if (fresh) it->second.stamp = now;  // touched, not changed: the verdict stays, with the new stamp
    }
    if (now.hash.empty()) now = plugin::ComputeStamp(c, true);
    // The safety verdict is taken every time (permissions change without content).
    if (!c.insecure.empty()) {
      PluginRecord r = plugin::ProblemRecord(c.name, c.path, PluginStatus::kInsecure, "insecure",
                                             plugin::InsecureMessage(c.insecure));
      r.stamp = now;
      records[c.path] = std::move(r);
      continue;
    }
    // A failure of the scan itself (the scanner could not start, sent a
    // malformed record, ...) is no verdict on the plugin: it is never reused,
    // so the next refresh tries again once the scanner is fixed.
    const bool scan_failure = it != records.end() && it->second.status == PluginStatus::kError &&
                              it->second.error.kind == "scan";
    if (fresh && it->second.status != PluginStatus::kInsecure && !scan_failure) {
      ++st.reused;
      continue;
    }
    stamps[c.path] = now;
    to_scan.push_back(c.path);
  }
  // Op packages (share/docs/op-packages.md): what a Python plugin binds to, and
  // which prototypes a library's custom ops find, depend on the op libraries.
  // When one of them is new, changed or gone, the records that depend on
  // them are taken again: bound to a library prototype, missing a prototype,
  // or warned about one.
  bool libraries_changed = false;
  for (const auto& c : found.plugins) {
    if (c.is_op_library && std::find(to_scan.begin(), to_scan.end(), c.path) != to_scan.end()) libraries_changed = true;
  }
  for (const auto& [path, r] : records) {
    if (r.op_library && !live.count(path)) libraries_changed = true;
  }
  if (libraries_changed) {
    for (const auto& c : found.plugins) {
      auto it = records.find(c.path);
      if (it == records.end() || !c.insecure.empty() ||
          std::find(to_scan.begin(), to_scan.end(), c.path) != to_scan.end()) {
        continue;
      }
      const PluginRecord& r = it->second;
      bool depends = r.error.kind == "prototype" || !r.warnings.empty();
      for (const auto& op : r.ops) depends = depends || !op.prototype_library.empty();
      if (!depends) continue;
      stamps[c.path] = *r.stamp;
      to_scan.push_back(c.path);
      --st.reused;
    }
  }
  if (opts.no_scan) {
    st.scanned = to_scan.size();
    to_scan.clear();
  }
  // Progress for those who serve the registry while it is scanned
  // (share/docs/registry.md, "Scan progress"): what is known so far.
  std::map<std::string, PluginRecord> so_far;  // this refresh's new records
  std::set<std::string> pending;
  bool dirty = false;
  auto last_emit = std::chrono::steady_clock::now();
  auto emit = [&]() {
    std::vector<PluginRecord> ordered;
    std::vector<std::string> still;
    for (const auto& c : found.plugins) {
      if (pending.count(c.path)) still.push_back(c.path);
      auto n = so_far.find(c.path);
      auto o = records.find(c.path);
      if (n != so_far.end()) {
        ordered.push_back(n->second);
      } else if (o != records.end()) {
        ordered.push_back(o->second);
      } else {
        continue;
      }
      ordered.back().name = c.name;
    }
    for (const auto& p : found.problems) ordered.push_back(p);
    opts.partial(ResolveConflicts(std::move(ordered)), still);
    dirty = false;
    last_emit = std::chrono::steady_clock::now();
  };
  if (!to_scan.empty() && opts.partial) {
    pending.insert(to_scan.begin(), to_scan.end());
    emit();
  }
  if (!to_scan.empty()) {
    ScanOptions scan = opts.scan;
    scan.allow_insecure = opts.allow_insecure;  // the child's host decides with the same rule
    std::map<std::string, const plugin::Candidate*> candidate;
    for (const auto& c : found.plugins) candidate[c.path] = &c;
    std::vector<std::string> paths = to_scan;
    // A plugin whose files change while it is scanned (one that writes into
    // its own folder at import, or an edit during the scan) is scanned once
    // more and stamped after that scan: its record is never older than its
    // stamp, and a plugin that writes a log at import does not make the
    // daemon rescan it for ever.
    for (int round = 0; round < 2 && !paths.empty(); ++round) {
      std::vector<bool> is_library;
      std::set<std::string> scanning(paths.begin(), paths.end());
      for (const auto& p : paths) is_library.push_back(candidate.at(p)->is_op_library);
      std::vector<PluginRecord> other_libraries;  // their records stand: they may serve prototypes
      for (const auto& c : found.plugins) {
        auto it = records.find(c.path);
        if (c.is_op_library && !scanning.count(c.path) && it != records.end()) other_libraries.push_back(it->second);
      }
      if (opts.partial) {
        scan.on_record = [&](std::size_t i, const PluginRecord& r) {
          PluginRecord& x = so_far[paths[i]] = r;
          x.path = paths[i];
          x.stamp = stamps[paths[i]];
          pending.erase(paths[i]);
          dirty = true;
        };
        scan.tick = [&]() {
          if (dirty && std::chrono::steady_clock::now() - last_emit >= std::chrono::milliseconds(kScanTickMs)) emit();
        };
      }
      std::vector<PluginRecord> scanned = ScanOppPath(paths, is_library, other_libraries, scan);
      std::vector<std::string> changed;
      for (std::size_t i = 0; i < paths.size(); ++i) {
        const plugin::Candidate& c = *candidate.at(paths[i]);
        plugin::Stamp after = plugin::ComputeStamp(c, false);
        if (!after.SameMeta(stamps[paths[i]])) {
          after = plugin::ComputeStamp(c, true);
          if (round == 0 && after.hash != stamps[paths[i]].hash) changed.push_back(paths[i]);
          stamps[paths[i]] = after;
        }
        PluginRecord& r = scanned[i];
        r.path = paths[i];
        r.stamp = stamps[paths[i]];
        records[paths[i]] = std::move(r);
      }
      paths = std::move(changed);
    }
  }
  if (!opts.no_scan) st.scanned = to_scan.size();
  for (auto it = records.begin(); it != records.end();) {
    if (!live.count(it->first)) {
      it = records.erase(it);
      ++st.removed;
    } else {
      ++it;
    }
  }
  // Discovery names come from the file system: they always win over what a
  // plugin says (a plugin cannot claim another's name or path).
  std::vector<PluginRecord> ordered;
  for (const auto& c : found.plugins) {
    PluginRecord& r = records[c.path];
    r.name = c.name;
    ordered.push_back(r);
  }
  for (const auto& p : found.problems) ordered.push_back(p);
  if (stats) *stats = st;
  return ResolveConflicts(std::move(ordered));
}

std::vector<PluginRecord> ResolveConflicts(std::vector<PluginRecord> ordered) {
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
    // A record keeps its scan verdict; conflicts are decided here, afresh
    // (a conflict with a built-in op is the scan's verdict).
    if (r.status == PluginStatus::kConflict && r.error.kind == "conflict" && (!r.ops.empty() || !r.unprototyped.empty()) &&
        r.conflicts_with != "builtin") {
      r.status = PluginStatus::kOk;
      r.error = {};
      r.conflicts_with.clear();
    }
    if (r.status != PluginStatus::kOk) continue;
    bool clash = false;
    // A legacy execute without a prototype takes its op_type too (as in the engine's host).
    const std::vector<const plugin::OpRecord*> mine = plugin::TakenOps(r);
    for (const plugin::OpRecord* op_p : mine) {
      const plugin::OpRecord& op = *op_p;
      auto it = owner.find(op.op_type);
      if (it != owner.end()) {
        const bool by_library = libraries.count(it->second) > 0;
        r.status = PluginStatus::kConflict;
        r.error = {};
        r.error.kind = "conflict";
        r.error.message = "op_type '" + op.op_type + "' from " + r.path + " conflicts with the one from " + it->second +
                          (!by_library     ? " (first in path order wins)"
                           : r.op_library ? " (the first op library in path order wins)"
                                          : " (op libraries load before Python plugins: the library's op wins)");
        r.conflicts_with = it->second;
        clash = true;
        break;
      }
    }
    if (clash) continue;
    for (const plugin::OpRecord* op : mine) owner[op->op_type] = r.path;
    if (r.op_library) libraries.insert(r.path);
  }
  // A Python prototype of an op_type a library implements as a C++ custom op
  // is not used (the scanner, lending prototypes only, cannot tell).
  static const std::string kReplaces = ") replaces the C++ prototype from op library ";
  static const std::string kOpType = "the Python prototype of op_type '";
  for (auto& r : ordered) {
    if (r.op_library) continue;
    for (auto& w : r.warnings) {
      const auto at = w.find(kReplaces);
      if (w.rfind(kOpType, 0) != 0 || at == std::string::npos) continue;
      const auto end = w.find("' in plugin '", kOpType.size());
      if (end == std::string::npos) continue;
      const std::string op_type = w.substr(kOpType.size(), end - kOpType.size());
      auto it = owner.find(op_type);
      if (it == owner.end() || !libraries.count(it->second)) continue;
      w = w.substr(0, at) + ") is not used: op library " + it->second + " implements op_type '" + op_type +
          "' as a C++ custom op with its own C++ prototype";
    }
  }
  // A prototype and its implementation split over two plugins: the
  // implementation's "canonical IR not found" names the plugin(s) with the
  // prototype, in the engine's words (plugin::SplitPrototypeNote). Decided
  // afresh each time, like conflicts: an earlier note is taken off first.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> prototyped_by;  // op_type -> (name, path)
  for (const auto& r : ordered) {
    for (const auto& t : plugin::OwnPrototypeOpTypes(r)) prototyped_by[t].emplace_back(r.name, r.path);
  }
  for (auto& r : ordered) {
    if (r.op_library || r.error.kind != "prototype") continue;
    std::string& m = r.error.message;
    m = plugin::WithoutSplitPrototypeNote(m);
    auto it = r.error.op_type.empty() ? prototyped_by.end() : prototyped_by.find(r.error.op_type);
    if (it != prototyped_by.end()) m += std::string("; ") + plugin::SplitPrototypeNote(r.error.op_type, it->second);
  }
  return ordered;
}

}  // namespace ge::registry
