// worker_access.h: the PluginHost switches only a plugin worker uses (isolation "process" loads as "main" there).
#pragma once

#include "ge/host/plugin_host.h"

namespace ge::host {

struct WorkerAccess {
  // Marks `host` as the host inside a plugin worker: a plugin declaring
  // isolation "process" is loaded in the worker's main interpreter instead
  // of in yet another worker. Call before loading.
  static void MarkWorker(PluginHost& host);
  // Logs what the plugin printed without a final newline; the worker calls
  // it before it _exits (nothing of Python is finalized there). Takes the
  // main interpreter's GIL: call it without holding one.
  static void FlushPluginOutput(PluginHost& host);
};

}  // namespace ge::host
