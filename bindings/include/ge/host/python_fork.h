// ge/host/python_fork.h: CPython ready in a zygote (ge/host/zygote.h) and the hooks that fork it safely.
#pragma once

#include <string>

#include "ge/host/zygote.h"

namespace ge::host {

// Initializes the embedded CPython runtime as a PluginHost would (the `ge`
// package from `python_dir`, empty: HostOptions::python_dir's rules; `ge`,
// ge.custom_op and the loader imported in the main interpreter; no
// sub-interpreter, nothing of any plugin) and returns the hooks a zygote
// calls around fork(): before it, the calling thread takes the main
// interpreter's GIL and CPython's fork locks (PyOS_BeforeFork); after it,
// PyOS_AfterFork_Parent or PyOS_AfterFork_Child, then the GIL is released.
// Call once, from the zygote's only thread, before ServeZygote. Throws
// std::runtime_error when Python cannot start (the `ge` package is missing).
ZygoteForkHooks PreparePythonForFork(const std::string& python_dir = "");

}  // namespace ge::host
