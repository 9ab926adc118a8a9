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

// The cache the tools use by default: $GE_PLUGIN_REGISTRY_CACHE, else the
// system daemon's (/var/cache/ge-plugin-registry/registry.json) for root or
// when only it exists, else the user's ($XDG_CACHE_HOME or ~/.cache/ge-plugin/).
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
