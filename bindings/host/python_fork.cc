// python_fork.cc: CPython prepared for a zygote's forks (ge/host/python_fork.h).
#include "ge/host/python_fork.h"

#include <memory>
#include <stdexcept>

#include "ge/host/plugin_host.h"
#include "interpreter.h"

namespace ge::host {

ZygoteForkHooks PreparePythonForFork(const std::string& python_dir) {
  {
    // A host initializes the runtime exactly as for a load (PythonRuntime::Get
    // imports ge, ge.custom_op, ge._entry in the main interpreter); it
    // creates no sub-interpreter and loads nothing, and the runtime outlives it.
    OpRegistry registry;
    HostOptions opts;
    opts.use_env_opp_path = false;
    opts.python_dir = python_dir;
    PluginHost host(opts, registry);
  }
  std::shared_ptr<PythonRuntime> runtime = PythonRuntime::Current();
  if (!runtime) throw std::runtime_error("the Python runtime did not start");
  {
    // What every plugin load uses, imported once here (the loader and the
    // pyproject.toml reader).
    InterpreterGuard g(*runtime->Main());
    for (const char* mod : {"ge._loader", "tomllib"}) {
      PyObject* m = PyImport_ImportModule(mod);
      if (m == nullptr) PyErr_Clear();
      Py_XDECREF(m);
    }
  }
  // The guard spans fork(): taken in `before`, dropped in either `after`.
  auto held = std::make_shared<std::unique_ptr<InterpreterGuard>>();
  ZygoteForkHooks h;
  h.before = [runtime, held]() {
    *held = std::make_unique<InterpreterGuard>(*runtime->Main());
    PyOS_BeforeFork();
  };
  h.after_parent = [held]() {
    PyOS_AfterFork_Parent();
    held->reset();
  };
  h.after_child = [held]() {
    PyOS_AfterFork_Child();
    held->reset();
  };
  return h;
}

}  // namespace ge::host
