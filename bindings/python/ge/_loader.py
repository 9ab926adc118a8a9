"""ge._loader: what the C++ host runs inside a plugin's interpreter.

Reading a plugin's pyproject.toml, preparing the interpreter (sys.path, output
capture, the extension guard of sub-interpreters), importing the plugin module,
and the bounded wait for threads a plugin left running. Internal: plugin code
should not import it.
"""
import os
import sys

# The frozen importlib modules are already loaded in every interpreter;
# importing importlib.util / sysconfig / tomllib here would cost every
# sub-interpreter a few hundred KiB and milliseconds (share/docs/host-design.md, "Targets").
import _frozen_importlib as _bootstrap
import _frozen_importlib_external as _bootstrap_external

import _ge_native

VALID_ISOLATIONS = ("subinterpreter", "main", "process")
_MAX_PYPROJECT_BYTES = 1 << 20

_refused = []          # extension modules the guard refused in this interpreter
_plugin_modules = {}   # top-level module name -> plugin name (for output capture)
_thread_starters = {}  # thread ident -> plugin whose import started it (for exit warnings)
_forgotten_modules = {}  # like _plugin_modules, for unloaded plugins whose threads may outlive them


def read_metadata(path, is_package):
    """Return {name, version, description, isolation} for a plugin.

    Reads ``pyproject.toml`` inside a package plugin's directory ([project]
    name/version/description, [tool.ge-plugin] isolation). Raises ValueError
    naming the file and field for an unreadable file or a bad value.
    """
    name = os.path.splitext(os.path.basename(path.rstrip("/")))[0]
    meta = {"name": name, "version": "", "description": "", "isolation": "subinterpreter", "pyproject": "",
            "isolation_set": False}
    if not is_package:
        return meta
    pp = os.path.join(path, "pyproject.toml")
    if not os.path.lexists(pp):
        return meta
    meta["pyproject"] = pp
    import stat
    import tomllib  # only the main interpreter reads metadata
    try:
        st = os.stat(pp)
        # A FIFO would block and /dev/zero never end: only a regular file of sane size is read.
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{pp}: cannot read pyproject.toml: not a regular file")
        if st.st_size > _MAX_PYPROJECT_BYTES:
            raise ValueError(f"{pp}: cannot read pyproject.toml: {st.st_size} bytes, more than "
                             f"{_MAX_PYPROJECT_BYTES}")
        with open(pp, "rb") as f:
            raw = f.read(_MAX_PYPROJECT_BYTES + 1)
        # A UTF-8 byte-order mark (some Windows editors write one) is skipped, as pip does.
        text = raw.decode("utf-8-sig")
        data = tomllib.loads(text)
    except UnicodeDecodeError as e:
        raise ValueError(f"{pp}: cannot read pyproject.toml: not UTF-8 ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(_toml_error_text(pp, str(e), text)) from None
    except OSError as e:
        raise ValueError(f"{pp}: cannot read pyproject.toml: {e}") from None
    project = data.get("project", {})
    if not isinstance(project, dict):
        raise ValueError(f"{pp}: [project] must be a table")
    for key in ("name", "version", "description"):
        if key in project:
            if not isinstance(project[key], str):
                raise ValueError(f"{pp}: project.{key} must be a string")
            meta[key] = project[key]
    tools = data.get("tool", {})
    if not isinstance(tools, dict):
        raise ValueError(f"{pp}: [tool] must be a table")
    for key in tools:
        if key.lower().startswith("ge") and key != "ge-plugin":
            raise ValueError(f"{pp}: unknown table [tool.{key}]: did you mean [tool.ge-plugin]?")
    tool = tools.get("ge-plugin", {})
    if not isinstance(tool, dict):
        raise ValueError(f"{pp}: [tool.ge-plugin] must be a table")
    for key in tool:
        if key not in ("isolation",):
            raise ValueError(f"{pp}: tool.ge-plugin.{key}: unknown setting (known: isolation)")
    iso = tool.get("isolation", "subinterpreter")
    if not isinstance(iso, str):
        raise ValueError(f"{pp}: tool.ge-plugin.isolation must be a string ({', '.join(VALID_ISOLATIONS)}), "
                         f"got {type(iso).__name__} {iso!r}")
    if iso not in VALID_ISOLATIONS:
        import difflib  # only on this error path: a plugin's interpreter never pays for it
        close = difflib.get_close_matches(iso, VALID_ISOLATIONS, n=1)
        raise ValueError(f"{pp}: tool.ge-plugin.isolation: got {iso!r}, supported: "
                         f"{', '.join(VALID_ISOLATIONS)}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    meta["isolation"] = iso
    meta["isolation_set"] = "isolation" in tool
    return meta


def _toml_error_text(pp, message, text):
    """``<file>:<line>:<column>: invalid TOML: <what>`` from tomllib's message
    ("... (at line 3, column 7)", or "(at end of document)": the last line of
    ``text``; Python 3.11's TOMLDecodeError has no line attributes), so that
    editors and the registry point at the line."""
    head, sep, tail = message.rpartition(" (at line ")
    if sep and tail.endswith(")"):
        where = tail[:-1].replace(", column ", ":")
        if where.replace(":", "").isdigit():
            return f"{pp}:{where}: invalid TOML: {head}"
    head, sep, tail = message.rpartition(" (at end of document)")
    if sep and not tail:
        last = max(1, len(text.splitlines()))
        return f"{pp}:{last}: invalid TOML: {head} (at the end of the file)"
    return f"{pp}: invalid TOML: {message}"


class _HostOwnedWriter:
    """The write-only stream surface shared by a plugin's sys.stdout/stderr and
    their ``buffer``: ``close()`` only flushes (the host owns the stream, so it
    stays usable and ``closed`` stays False) and ``fileno()`` raises
    io.UnsupportedOperation (no file descriptor behind it). Subclasses define
    ``write``, ``flush`` and ``name``."""

    @property
    def closed(self):
        return False

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def close(self):
        self.flush()

    def fileno(self):
        import io  # always loaded: the interpreter's own streams use it
        raise io.UnsupportedOperation(f"{self.name} has no file descriptor")

    def isatty(self):
        return False

    def writable(self):
        return True

    def readable(self):
        return False

    def seekable(self):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _PluginBuffer(_HostOwnedWriter):
    """``sys.stdout.buffer`` of a plugin interpreter: bytes written here are
    decoded as UTF-8 (invalid bytes backslash-escaped) and go to the same log as
    the text stream."""

    def __init__(self, stream):
        self._stream = stream

    @property
    def name(self):
        return self._stream.name

    @property
    def mode(self):
        return "wb"

    @property
    def raw(self):
        return self

    def write(self, data):
        if isinstance(data, str):
            raise TypeError(f"a bytes-like object is required, not '{type(data).__name__}'")
        try:
            view = memoryview(data)
        except TypeError:
            raise TypeError(f"a bytes-like object is required, not '{type(data).__name__}'") from None
        with view:
            raw = view.tobytes()
        self._stream.write(raw.decode("utf-8", "backslashreplace"))
        return len(raw)

    def flush(self):
        self._stream.flush()


class _PluginStream(_HostOwnedWriter):
    """sys.stdout / sys.stderr replacement: each line goes to the host's log,
    tagged with the plugin whose module wrote it.

    Offers the text-stream surface plugin code may rely on (``write``,
    ``writelines``, ``flush``, ``buffer``, ``close``, ``closed``, ``name``,
    ``mode``, ``encoding``, ``errors``, ``fileno``, ``isatty``, ``seekable``...).
    ``close()`` only flushes: the stream stays usable and ``closed`` stays
    False, since the host owns it. ``fileno()`` raises io.UnsupportedOperation
    (there is no file descriptor behind it).
    """

    def __init__(self, default_plugin, is_stderr):
        self._default = default_plugin
        self._is_stderr = is_stderr
        self._pending = {}
        self.encoding = "utf-8"
        self.errors = "backslashreplace"
        self.name = "<ge-plugin stderr>" if is_stderr else "<ge-plugin stdout>"
        self.mode = "w"
        self.newlines = None
        self.line_buffering = True
        self.buffer = _PluginBuffer(self)

    def _plugin(self):
        return _calling_plugin(self._default, depth=3)

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        plugin = self._plugin()
        buf = self._pending.get(plugin, "") + text
        *lines, rest = buf.split("\n")
        for line in lines:
            _ge_native._log_line(plugin, self._is_stderr, line)
        self._pending[plugin] = rest
        return len(text)

    def flush(self):
        for plugin, rest in list(self._pending.items()):
            if rest:
                _ge_native._log_line(plugin, self._is_stderr, rest)
        self._pending.clear()


def _calling_plugin(default, depth=2):
    """The plugin whose module is the innermost on the caller's stack (main
    isolation runs several plugins in one interpreter), else ``default``."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return default
    while frame is not None:
        top = frame.f_globals.get("__name__", "").split(".", 1)[0]
        if top in _plugin_modules:
            return _plugin_modules[top]
        frame = frame.f_back
    return default


# What a plugin may not change in the engine's process: signal dispositions,
# the signal mask, interval timers and signal-consuming waits
# (share/docs/plugin-authors.md, "The process belongs to the engine").
_SIGNAL_CALLS = ("signal", "siginterrupt", "set_wakeup_fd", "pthread_sigmask", "setitimer", "alarm", "sigwait",
                 "sigwaitinfo", "sigtimedwait")
_FAULTHANDLER_CALLS = ("register", "unregister", "dump_traceback_later")


def _refusing(module_name, name, default_plugin):
    def refused(*args, **kwargs):
        plugin = _calling_plugin(default_plugin)
        raise ValueError(
            f"plugin '{plugin}': {module_name}.{name}() is not available to plugins: the engine owns the process's "
            f"signal handlers, signal mask and timers (share/docs/plugin-authors.md, "
            f"\"The process belongs to the engine\")")
    refused.__name__ = name
    refused.__qualname__ = name
    refused._ge_refused = True
    return refused


class _GuardedModules:
    """A meta path finder that hands out the guarded ``_signal`` and
    ``faulthandler`` modules again when a plugin drops them from sys.modules
    and imports them afresh (a new module object would carry the original
    functions). A guard, not a sandbox: code that removes this finder or
    calls libc through ctypes is out of its reach."""

    def __init__(self):
        self.modules = {}

    def find_spec(self, name, path=None, target=None):
        module = self.modules.get(name)
        if module is None:
            return None
        return _bootstrap.ModuleSpec(name, self, origin="built-in")

    def create_module(self, spec):
        return self.modules[spec.name]

    def exec_module(self, module):
        pass


_guarded_modules = _GuardedModules()


def guard_process_signals(default_plugin):
    """Replace the calls of ``signal`` (and ``_signal``) and ``faulthandler``
    that install signal handlers, change the signal mask or arm timers with
    ones raising ValueError naming the calling plugin, in this interpreter
    (idempotent). ``signal.signal`` already raises ValueError in a
    sub-interpreter; ``alarm``, ``setitimer`` and ``pthread_sigmask`` would
    otherwise act on the whole process from any interpreter."""
    import _signal
    targets = [("signal", _signal, _SIGNAL_CALLS)]
    if "signal" in sys.modules:
        targets.append(("signal", sys.modules["signal"], _SIGNAL_CALLS))
    import faulthandler
    targets.append(("faulthandler", faulthandler, _FAULTHANDLER_CALLS))
    for module_name, module, names in targets:
        for name in names:
            current = getattr(module, name, None)
            if current is not None and not getattr(current, "_ge_refused", False):
                setattr(module, name, _refusing(module_name, name, default_plugin))
    _guarded_modules.modules.update({"_signal": _signal, "faulthandler": faulthandler})
    if _guarded_modules not in sys.meta_path:
        sys.meta_path.insert(0, _guarded_modules)


def _thread_idents():
    threading = sys.modules.get("threading")
    return set(threading._active) if threading is not None else set()


def _thread_owner(thread):
    """The plugin that started a thread while being imported, else the plugin
    whose code the thread runs (its target's or its class's module), or None."""
    if thread.ident in _thread_starters:
        return _thread_starters[thread.ident]
    target = getattr(thread, "_target", None)
    module = getattr(target, "__module__", None) if target is not None else type(thread).__module__
    top = (module or "").split(".", 1)[0]
    return _plugin_modules.get(top) or _forgotten_modules.get(top)


def _stdlib_dirs():
    # The directory of os.py is the standard library; lib-dynload is inside it.
    return (os.path.realpath(os.path.dirname(os.__file__)) + os.sep,)


def extension_fix(plugin_name, is_package):
    """How to fix a compiled extension refused in a sub-interpreter: the one
    text of the guard's ImportError and of the import's reworded error
    (share/docs/plugin-authors.md, "Isolation")."""
    if is_package:
        return ("set isolation = \"main\" (the main interpreter, shared with the other main plugins) or "
                "\"process\" (a worker process of its own) under [tool.ge-plugin] in the plugin's pyproject.toml")
    return (f"a single-file plugin has no pyproject.toml to say so: turn it into a package (a folder "
            f"'{plugin_name}/' with the code in __init__.py) whose pyproject.toml sets isolation = \"main\" or "
            f"\"process\" under [tool.ge-plugin], or run every plugin in that isolation (ge-run --isolation)")


def _install_extension_guard(plugin_name, is_package=True):
    """Refuse compiled extensions from outside the standard library in this
    (sub-)interpreter: on Python 3.11, numpy, Cython and PyO3 modules load in
    only one interpreter per process, and loading one here would break it in the
    main interpreter too (share/docs/host-design.md, "Interpreters")."""
    loader = _bootstrap_external.ExtensionFileLoader
    if getattr(loader.create_module, "_ge_guard", False):
        return
    original = loader.create_module
    stdlib = _stdlib_dirs()
    fix = extension_fix(plugin_name, is_package)

    def create_module(self, spec):
        origin = os.path.realpath(spec.origin or "")
        if not origin.startswith(stdlib):
            _refused.append(spec.name)
            raise ImportError(
                f"plugin '{plugin_name}': extension module '{spec.name}' ({spec.origin}) cannot be loaded in a "
                f"sub-interpreter: compiled extensions such as numpy load in only one interpreter per process. "
                f"To fix: {fix}.",
                name=spec.name)
        return original(self, spec)

    create_module._ge_guard = True
    loader.create_module = create_module


class _SourceOnlyLoader(_bootstrap_external.SourceFileLoader):
    """Loads plugin code from its source, always: no bytecode is read from or
    written to an opp folder (a stale ``__pycache__`` whose stamp matches an
    edited file would otherwise run the old code; share/docs/plugin-authors.md,
    "Opp folders")."""

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


_SOURCE_SUFFIXES = tuple(_bootstrap_external.SOURCE_SUFFIXES)
_source_roots = set()  # real paths of plugin and helper folders in this interpreter


def _under_source_root(path):
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root + os.sep) for root in _source_roots)


def _plugin_path_hook(path):
    """sys.path_hooks entry: the finder of a folder inside a plugin package (or
    a helper package) loads sources only; other folders are not ours."""
    if isinstance(path, str) and path and _under_source_root(path):
        return _bootstrap_external.FileFinder(
            path, (_SourceOnlyLoader, list(_SOURCE_SUFFIXES)),
            (_bootstrap_external.ExtensionFileLoader, list(_bootstrap_external.EXTENSION_SUFFIXES)))
    raise ImportError("not a plugin folder")


class _HelperFinder:
    """Finds the helper modules of the single-file plugin of this interpreter:
    top-level ``_name.py`` files and ``_name/`` packages in its opp folder. It
    sits at the end of sys.meta_path, after the standard library and installed
    packages, so a helper never shadows them; plugin files (names without a
    leading underscore) are never importable as modules of another plugin."""

    def __init__(self, folder):
        self.folder = folder

    def find_spec(self, name, path=None, target=None):
        if path is not None or not name.startswith("_") or "." in name:
            return None
        package = os.path.join(self.folder, name)
        init = os.path.join(package, "__init__.py")
        if os.path.isfile(init):
            _source_roots.add(os.path.realpath(package))
            return _bootstrap_external.spec_from_file_location(
                name, init, loader=_SourceOnlyLoader(name, init), submodule_search_locations=[package])
        file = package + ".py"
        if os.path.isfile(file):
            return _bootstrap_external.spec_from_file_location(name, file, loader=_SourceOnlyLoader(name, file))
        return None


def _installed_module_origin(name):
    """Where ``name`` would be imported from without any plugin: "the standard
    library" or the file/folder of an installed module, else None."""
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return "the standard library"
    spec = _bootstrap_external.PathFinder.find_spec(name)
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("built-in", "frozen"):
        return spec.origin
    locations = list(spec.submodule_search_locations or [])
    return locations[0] if locations else name


def check_name(module_name, path):
    """Raise ValueError (``__ge_kind__`` "name") when ``module_name`` is the
    name of a standard-library or installed module: a plugin never replaces
    one, for itself or for others (share/docs/plugin-authors.md, "Opp
    folders")."""
    origin = _installed_module_origin(module_name)
    if origin is None:
        return
    error = ValueError(
        f"plugin name '{module_name}' ({path}) is the name of a module of {origin}"
        if origin == "the standard library" else
        f"plugin name '{module_name}' ({path}) is the name of an installed module ({origin})")
    error.__ge_kind__ = "name"  # ge-plugin-ls --check: "rename the plugin"
    raise error


def prepare(plugin_name, subinterpreter, is_package=True, plugin_path=""):
    """Prepare the current interpreter for a plugin: stdout/stderr into the
    host log, the signal guard, source-only loading of its package, and in a
    sub-interpreter the extension guard and, for a single-file plugin, the
    finder of its helper modules. No opp folder is put on sys.path: a plugin
    never shadows a standard or installed module, for itself or for others.

    ``is_package`` is False for a single-file plugin: the guard's message then
    says to turn it into a package (only a package has a pyproject.toml)."""
    if not isinstance(sys.stdout, _PluginStream):
        default = plugin_name if subinterpreter else "main-interpreter"
        sys.stdout = _PluginStream(default, False)
        sys.stderr = _PluginStream(default, True)
    guard_process_signals(plugin_name if subinterpreter else "main-interpreter")
    if _plugin_path_hook not in sys.path_hooks:
        sys.path_hooks.insert(0, _plugin_path_hook)
    if plugin_path:
        if is_package:
            _source_roots.add(os.path.realpath(plugin_path))
        elif subinterpreter and not any(isinstance(f, _HelperFinder) for f in sys.meta_path):
            sys.meta_path.append(_HelperFinder(os.path.dirname(plugin_path)))
    if subinterpreter:
        _install_extension_guard(plugin_name, is_package)


def import_plugin(plugin_name, module_name, path, is_package):
    """Import a plugin file or package under ``module_name``, from source;
    returns the module.

    Raises whatever the plugin's code raises; ValueError when another module
    of that name is already imported in this interpreter (main isolation).
    The host has checked the name with check_name before (in the main
    interpreter, whose import caches serve every plugin).
    """
    existing = sys.modules.get(module_name)
    if existing is not None:
        origin = getattr(existing, "__file__", None) or "<built-in>"
        target = os.path.join(path, "__init__.py") if is_package else path
        if os.path.realpath(origin) == os.path.realpath(target):
            return existing
        raise ValueError(f"module name '{module_name}' is already used by {origin} in this interpreter")
    if is_package:
        init = os.path.join(path, "__init__.py")
        spec = _bootstrap_external.spec_from_file_location(
            module_name, init, loader=_SourceOnlyLoader(module_name, init), submodule_search_locations=[path])
    else:
        spec = _bootstrap_external.spec_from_file_location(
            module_name, path, loader=_SourceOnlyLoader(module_name, path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot create an import spec for {path}")
    module = _bootstrap.module_from_spec(spec)
    _plugin_modules[module_name] = plugin_name
    sys.modules[module_name] = module
    threads_before = _thread_idents()
    try:
        spec.loader.exec_module(module)
        for ident in _thread_idents() - threads_before:
            _thread_starters[ident] = plugin_name
    except BaseException:
        sys.modules.pop(module_name, None)
        for name in [m for m in sys.modules if m.startswith(module_name + ".")]:
            sys.modules.pop(name, None)
        raise
    return module


def module_metadata(module):
    """{"version", "description"} of an imported plugin module: its
    ``__version__`` (a str) and the first line of its docstring, else ""."""
    version = getattr(module, "__version__", "")
    doc = getattr(module, "__doc__", None) or ""
    first = doc.strip().splitlines()[0].strip() if isinstance(doc, str) and doc.strip() else ""
    return {"version": version if isinstance(version, str) else "", "description": first}


def forget_plugin(module_name):
    """Drop a plugin's modules from this interpreter (failed load in main)."""
    for name in [m for m in sys.modules if m == module_name or m.startswith(module_name + ".")]:
        sys.modules.pop(name, None)
    if module_name in _plugin_modules:
        _forgotten_modules[module_name] = _plugin_modules.pop(module_name)


def refused_extensions():
    """Names of extension modules the guard refused (then clears the list)."""
    names = list(_refused)
    _refused.clear()
    return names


def join_threads(timeout, daemon=True):
    """Join the threads plugins started in this interpreter (non-daemon or
    daemon), for at most ``timeout`` seconds in total; returns a description of
    each one still alive: its name, and the plugin it runs code of when known
    ("'worker' (plugin 'p')"). ``daemon=False`` leaves daemon threads alone
    (they never delay the interpreter's finalization)."""
    threading = sys.modules.get("threading")
    if threading is None:
        return []
    import time
    deadline = time.monotonic() + timeout
    main = threading.main_thread()
    def others():
        return [t for t in threading.enumerate()
                if t is not main and t is not threading.current_thread() and (daemon or not t.daemon)]
    for t in others():
        t.join(max(0.0, deadline - time.monotonic()))
    alive = [t for t in others() if t.is_alive()]
    return [f"'{t.name}'" + (f" (plugin '{_thread_owner(t)}')" if _thread_owner(t) else "") for t in alive]



def flush_streams():
    """Log what the plugins of this interpreter printed without a final
    newline (``print(..., end="")``): called when the interpreter or its
    process ends, so that a last partial line is not lost."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, _PluginStream):
            stream.flush()


def run_atexit_handlers(timeout):
    """Run this interpreter's atexit handlers now, on a thread of their own,
    waiting at most ``timeout`` seconds; True when they finished (or there were
    none). Interpreter::End and the exit of the main interpreter call it so
    that a handler that blocks (``atexit.register(time.sleep, 60)``) is treated
    like a thread left running, bounded, instead of blocking the end: if it has
    not finished, the interpreter is kept and a warning names 'ge-atexit'."""
    atexit = sys.modules.get("atexit")
    if atexit is None or atexit._ncallbacks() == 0:
        return True
    import threading
    runner = threading.Thread(target=atexit._run_exitfuncs, name="ge-atexit", daemon=True)
    runner.start()
    runner.join(timeout)
    if runner.is_alive():
        return False
    atexit._clear()  # run once: Py_EndInterpreter / Py_FinalizeEx must not run them again
    return True
