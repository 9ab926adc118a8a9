// process_worker.h: the plugin worker process (isolation "process"): its entry point and how the engine starts one.
//
// A worker hosts one plugin in its own main interpreter: it runs this
// project's own OpRegistry and PluginHost (isolation "main"), so every check,
// adapter and error message is the code of the other isolations; the engine
// talks to it through a call page (call_page.h) and one unix socket
// (worker_wire.h) and shares tensor memory with it (shared_arena.h). share/docs/host-design.md, "Process isolation".
#pragma once

#include <string>
#include <vector>
#include <sys/types.h>

namespace ge::host {

// The worker's whole life: waits for the engine's "init" message on
// `channel_fd` (the plugin, the Python folder, the prototype libraries, and
// the two arena memfds and the call page's as SCM_RIGHTS), loads the plugin,
// answers "loaded" (with its own pidfd), then serves one request at a time
// as the page's doorbell rings, until the engine says bye or closes the socket.
// Returns the process exit code (0 after a clean end, 2 for a protocol
// error). `args` are the worker's own command-line words after the channel
// (none are defined yet; unknown ones are an error). A library function: the
// ge-plugin-worker executable and the zygote's "worker" role
// (`ge-plugin-scan --zygote`, worker_launcher.h) run the same entry.
// Owns `channel_fd`. Call on the process's main thread, once.
int RunWorker(int channel_fd, const std::vector<std::string>& args);

// The exit code of a worker whose channel to the engine broke while the
// engine was still there (a plugin closed or replaced its descriptor): the
// engine names that instead of a bare exit code.
inline constexpr int kWorkerExitChannelLost = 121;

// The folder libge_plugin_host.so was loaded from (installed: <libdir>;
// build tree: build/lib); "" when it cannot be told.
std::string HostLibraryDir();

// An internal program of the installation: <libdir>/GE_LIB_TO_LIBEXEC/`name`
// when installed, else `name` beside the tools of a build tree
// (<libdir>/../bin); <libdir> is where libge_plugin_host.so was loaded from.
std::string LibexecProgram(const std::string& name);

// The worker executable: $GE_PLUGIN_WORKER, else the installed
// <libdir>/GE_LIB_TO_LIBEXEC/ge-plugin-worker, else ge-plugin-worker beside
// the tools of a build tree (<libdir>/../bin).
std::string WorkerExecutable();

// Starts one worker process running `exe` with one end of a new socketpair as
// its channel; returns its pid and stores the engine's end (close-on-exec) in
// *channel. The engine is never forked (it has threads): posix_spawn of a
// small executable. Called by WorkerLauncher (worker_launcher.h) when a
// worker is not forked from its zygote. Throws std::runtime_error naming the
// failed call.
pid_t SpawnWorker(const std::string& exe, int* channel);

}  // namespace ge::host
