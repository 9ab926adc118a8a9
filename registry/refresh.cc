// refresh.cc: see refresh.h.
#include "refresh.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "ge/plugin/discovery.h"
#include "ge/plugin/resolve.h"

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
      PluginRecord r = plugin::ProblemRecord(c.name, c.path, PluginStatus::kInsecure, plugin::ErrorKind::kInsecure,
                                             plugin::InsecureMessage(c.insecure));
      r.stamp = now;
      records[c.path] = std::move(r);
      continue;
    }
    // A failure of the scan itself (the scanner could not start, sent a
    // malformed record, ...) is no verdict on the plugin: it is never reused,
    // so the next refresh tries again once the scanner is fixed.
    const bool scan_failure = it != records.end() && it->second.status == PluginStatus::kError &&
                              it->second.error.kind == plugin::ErrorKind::kScan;
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
      bool depends = r.error.kind == plugin::ErrorKind::kPrototype || !r.warnings.empty();
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
  return plugin::Resolve(std::move(ordered));
}

}  // namespace ge::registry
