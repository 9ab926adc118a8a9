// ge/registry/verdicts.h: the plugin registry's verdicts, for engines.
//
// ge-plugin-registryd and ge-plugin-ls scan plugins out of process and record,
// per plugin, whether loading it crashed, hung or exited the scanner. An
// engine can consult that record before importing a plugin in-process
// (ge::host::HostOptions::skip_plugin). Thread-safe; no Python.
#pragma once

#include <functional>
#include <string>

#include "ge/plugin/discovery.h"

namespace ge::registry {

// The system daemon's cache (its unit's CacheDirectory=, share/systemd/).
inline constexpr char kSystemCachePath[] = "/var/cache/ge-plugin-registry/registry.json";

// The cache a daemon reads and writes when --cache is not given:
// $GE_PLUGIN_REGISTRY_CACHE, else $CACHE_DIRECTORY/registry.json (systemd),
// else kSystemCachePath for root, else the user's own (UserCachePath(), never
// the system cache, which another user cannot write).
std::string DaemonCachePath();
// The cache the tools read by default: DaemonCachePath(), except that a user
// without a cache of their own (and no $GE_PLUGIN_REGISTRY_CACHE) reads the
// system daemon's when it exists.
std::string DefaultCachePath();
// The user's own cache (XDG Base Directory): $XDG_CACHE_HOME/ge-plugin/registry.json,
// else ~/.cache/ge-plugin/registry.json, else (no HOME)
// /tmp/ge-plugin-registry-UID/registry.json. Nothing is created here.
std::string UserCachePath();

// Returns a function giving the reason to skip a plugin that the cache at
// `cache_path` (empty: DefaultCachePath()) marks crashed, hung or exited while
// its files are unchanged since (ge::plugin::StillFresh: same stamp, or the
// same content hash after a touch); "" otherwise. A missing or unreadable
// cache gives an empty function (skip nothing) and, when `why` is given, the
// reason (no cache, not a regular file, malformed record ...), so that a
// caller can say crash protection is off. The cache is read once, here; the
// function may be called from any thread.
std::function<std::string(const plugin::Candidate&)> CrashVerdicts(const std::string& cache_path,
                                                                   std::string* why = nullptr);

}  // namespace ge::registry
