"""ge._entry: the one module the C++ host calls (bindings/host).

Every call the host makes into Python goes through a function of this module,
in the interpreter of the plugin concerned, with the interpreter lock held:

* ``read_metadata(path, is_package)`` -> dict (main interpreter);
* ``check_name(name, path)`` -> None, or ValueError when the name would shadow
  a standard or installed module (main interpreter);
* ``import_plugin(name, path, is_package, subinterpreter)`` -> dict with the
  module's ``version``/``description`` and the registry ``before`` snapshot;
* ``collect(name, before, subinterpreter, library_irs)`` ->
  ``_ge_native.CollectedPlugin``: one ``CollectedImpl`` per implementation
  (what the C++ op adapter binds) and the op_types of the plugin's own
  prototypes;
* ``abandon(name, before, subinterpreter)`` -> None: undo a loaded plugin that
  the host does not register (an op_type conflict);
* ``adapter_objects()`` -> ``_ge_native.AdapterObjects``: the context
  variables and helpers the adapters call.

What these take and return is versioned (``LOAD_CONTRACT_VERSION``, checked
by the host before every call; share/docs/host-design.md, "The load
contract"); the returned objects are native, their fields typed.
* ``forget(name, keys)`` -> None: unload a main-interpreter plugin;
* ``run_atexit_handlers(timeout)`` / ``join_threads(timeout, daemon)``: the
  bounded end of an interpreter; ``flush_streams()``: its plugins' last
  partial lines.

A plugin error is raised as the plugin's own exception (its traceback
intact), after everything the plugin registered has been removed; its
``__ge_kind__`` attribute says which step failed when that is not the step
called ("extension": a compiled extension refused in a sub-interpreter).
Internal: plugins must not import it. Paths arrive as ``str`` decoded with
the file-system encoding and ``surrogateescape`` (POSIX paths are bytes).
"""
from _functools import partial  # functools.partial itself, without loading functools (and collections)

from _ge_native import AdapterObjects, CollectedImpl, CollectedPlugin

from . import _loader
from ._loader import check_name, flush_streams, join_threads, read_metadata, run_atexit_handlers  # noqa: F401  (host entry points)
import ge.custom_op as _custom_op
from .custom_op import _host, _impl, _proto, proto as _proto_api
from .custom_op._validate import validate_impl

# The version of what these functions take and return, which the host checks
# before its first call (share/docs/host-design.md, "The load contract"):
# raised by one with every change to either side.
LOAD_CONTRACT_VERSION = 2

_INTERFACE_NAMES = ("eager_execute", "compilable", "annotated_args")


def _reword(exc, text):
    """Replace ``exc``'s message in place (its type and traceback stay)."""
    exc.args = (text,) + tuple(exc.args[1:])
    if isinstance(exc, ImportError):
        exc.msg = text


def import_plugin(name, path, is_package, subinterpreter):
    """Prepare this interpreter for the plugin and import it from source.

    Returns ``{"version": str, "description": str, "before": snapshot}``.
    Raises the plugin's exception after undoing what it registered; when the
    import failed because a compiled extension was refused in a
    sub-interpreter, the message says how to fix that and ``__ge_kind__`` is
    "extension"."""
    _loader.prepare(name, subinterpreter, is_package, path)
    before = _host.snapshot()
    try:
        module = _loader.import_plugin(name, name, path, is_package)
    except BaseException as exc:
        refused = _loader.refused_extensions()
        _note_op_types(exc, before)
        abandon(name, before, subinterpreter)
        if refused:
            # The refusal is the cause: its fix once, and the type of what the
            # import raised. Its text is a consequence of the refusal (numpy
            # wraps it in a banner whose first line is no reason); it stays
            # whole in the traceback.
            _reword(exc, f"import failed because extension module(s) {', '.join(refused)} cannot be loaded in a "
                         f"sub-interpreter; {_loader.extension_fix(name, is_package)} "
                         f"(the import raised {type(exc).__name__}; its message is in the traceback)")
            exc.__ge_kind__ = "extension"
        raise
    meta = _loader.module_metadata(module)
    return {"version": meta["version"], "description": meta["description"], "before": before}


def _op_types_of(impls):
    """The sorted op_types of implementation descriptors."""
    return sorted({d.op_type for d in impls if isinstance(d.op_type, str)})


def _note_op_types(exc, before, attempted=None):
    """Tell the host which op_types the failing plugin had implemented so far
    (``__ge_op_types__``, sorted; ``attempted`` when taken earlier): a node of
    one of them is then told that this plugin, which implements it, was not
    loaded."""
    try:
        if attempted is None:
            attempted = _op_types_of(_host._new_since(before)[1])
        exc.__ge_op_types__ = list(attempted)
    except Exception:  # an exception that takes no attributes: nothing to tell
        pass


def abandon(name, before, subinterpreter):
    """Remove what the plugin registered since ``before`` (and, in the main
    interpreter, its modules): a failed import or validation, or a plugin the
    host does not register."""
    _host.discard(before)
    if not subinterpreter:
        _loader.forget_plugin(name)


def _library_proto(ir):
    """The host's canonical IR record (``OpProto``) of a C++ prototype given as
    a dict (the host's SchemaToDict: op_type, inputs, outputs, attrs, mutates).
    It has no Python infer_meta (``func`` is None)."""
    inputs = tuple(_proto.IrInput(i["name"], i["kind"]) for i in ir["inputs"])
    outputs = tuple(_proto.IrOutput(o["name"], o["kind"]) for o in ir["outputs"])
    attrs = tuple(_proto.IrAttr(a["name"], a["type"], a["required"], a["default"]) for a in ir["attrs"])
    return _proto.OpProto(ir["op_type"], None, "<op library>", ir["op_type"], inputs, outputs, attrs,
                          tuple((name, index) for name, index in ir["mutates"]), _proto.return_form(outputs))


def _failed_library_note(failed_libraries, op_type):
    """"; op library L, which prototypes it, failed to load: E" when a failed
    op library prototyped ``op_type``, else ""."""
    failed = (failed_libraries or {}).get(op_type)
    return "" if failed is None else f"; op library {failed[0]}, which prototypes it, failed to load: {failed[1]}"


def _close_op_type_note(op_type, known):
    """" (did you mean 'X'?)" when a prototype's op_type in ``known`` is close
    to ``op_type`` (a typo in register_op_impl), else ""."""
    if not op_type or not known:
        return ""
    import difflib  # only on this error path: a plugin's interpreter never pays for it
    close = difflib.get_close_matches(op_type, sorted(set(known) - {op_type}), n=1, cutoff=0.75)
    return f" (did you mean '{close[0]}', whose prototype is registered?)" if close else ""


def collect(name, before, subinterpreter, library_irs=None, failed_libraries=None):
    """Validate what the plugin registered and describe each implementation.

    ``library_irs``: optional dict op_type -> IR dict of the C++ prototypes the
    host loaded from op libraries; an implementation without a Python
    prototype of its op_type binds to the one there, with the same signature
    validation (share/docs/op-packages.md). ``failed_libraries``: optional dict
    op_type -> (library path, its one-line error) of the prototypes of op
    libraries that failed to load; a "canonical IR not found" for such an
    op_type says so.

    Returns a ``CollectedPlugin(impls=[...], protos=[op_type, ...])``: the
    implementations, sorted by op_type, as ``CollectedImpl`` objects with the
    fields ``op_type, descriptor_key, cls, ir`` (the
    canonical IR as a dict; None for a legacy execute registered without
    one), "proto" (the OpProto object, None when bound to a C++ prototype),
    "library" (True when bound to a C++ prototype), "interfaces" (names among
    eager_execute, compilable, annotated_args), "revalidate" (callable
    checking compile again before each call), "rules" ("9.2.0-beta.1",
    "9.2.0-beta.2" or "newest": the release whose rules applied), "call"
    ("schema", "schema_any_result" or "context": how execute is called),
    "warnings" (list of str), "newest_refusal" (what the newest GE's rules
    refuse, "" when nothing)`` (bindings/native/load_contract.h); and the
    op_types of the prototypes this plugin registered itself.
    Raises the validation error (TypeError, RuntimeError, ValueError) after
    undoing the plugin's registrations; RuntimeError "canonical IR not found
    ..." (``__ge_kind__`` "prototype") when an implementation has a prototype
    neither in this plugin nor in an op library."""
    attempted = None
    try:
        library = {op_type: _library_proto(ir) for op_type, ir in (library_irs or {}).items()}
        # Taken before a failed collect undoes the plugin's registrations: the
        # prototypes an implementation's op_type could have meant (its own and
        # the op libraries', never another plugin's: the main interpreter holds
        # those of every main-isolation plugin; they do not serve this one),
        # and what the plugin implements.
        new_protos, new_impls = _host._new_since(before)
        known = [p.op_type for p in new_protos] + list(library)
        attempted = _op_types_of(new_impls)
        try:
            collected = _host.collect(before, library)
        except RuntimeError as exc:
            if getattr(exc, "__ge_kind__", None) == "prototype":  # a missing prototype (_validate), told by data
                op_type = getattr(exc, "__ge_op_type__", None)
                note = _failed_library_note(failed_libraries, op_type) or _close_op_type_note(op_type, known)
                if note:
                    _reword(exc, f"{exc}{note}")
            raise
        irs = {ir["op_type"]: ir for ir in collected["protos"]}
        out = []
        for impl in collected["impls"]:
            op_type = impl["op_type"]
            key = impl["descriptor_key"]
            descriptor = impl["cls"].__ge_op_impl_descriptor__
            decided = impl["rules"]
            if op_type in irs:
                ir, proto, bound = irs[op_type], _proto_api.get_registered_op_proto_by_op_type(op_type), False
            elif op_type in library:
                ir, proto, bound = library_irs[op_type], None, True
            elif not decided.needs_ir:
                # A legacy execute registers without a prototype; a node of
                # the op_type is refused naming the missing one (the host's note).
                ir, proto, bound = None, None, False
            else:
                exc = RuntimeError(f"op_type '{op_type}' ({key}): canonical IR not found"
                                   f"{_failed_library_note(failed_libraries, op_type) or _close_op_type_note(op_type, known)}")
                exc.__ge_kind__ = "prototype"
                exc.__ge_op_type__ = op_type
                raise exc
            out.append(CollectedImpl(
                op_type=op_type,
                descriptor_key=key,
                cls=impl["cls"],
                ir=ir,
                proto=proto,
                library=bound,
                interfaces=[i for i in impl["interfaces"] if i in _INTERFACE_NAMES],
                # compile is validated again before every call (share/docs/plugin-authors.md, "The implementation").
                revalidate=partial(validate_impl, descriptor, "compile", library[op_type] if bound else proto),
                # Which release's rules applied (share/docs/plugin-authors.md,
                # "Plugins from earlier GE releases") and what follows from them.
                rules=decided.rules,
                call=decided.call,
                warnings=list(decided.warnings),
                newest_refusal=decided.newest_refusal,
            ))
    except BaseException as exc:
        _note_op_types(exc, before, attempted)
        abandon(name, before, subinterpreter)
        raise
    return CollectedPlugin(impls=out, protos=sorted(irs))


def adapter_objects():
    """The objects every adapter of this interpreter calls, as the host's
    ``_ge_native.AdapterObjects`` (fields by name)."""
    return AdapterObjects(call_infer_meta=_proto.call_infer_meta, execute_ctx=_custom_op._EXECUTE_CTX,
                          compile_vars=(_custom_op._COMPILE_CTX, _custom_op._COMPILE_PLATFORM),
                          launch_ctx=_custom_op._LAUNCH_CTX)


def forget(name, keys):
    """Unload main-interpreter plugin ``name``: unregister its
    (op_type, descriptor_key) pairs and drop its modules."""
    for op_type, key in keys:
        _impl._unregister_op_impl(key)
        _proto._unregister_op_proto(op_type)
    _loader.forget_plugin(name)
