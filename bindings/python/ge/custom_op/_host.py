"""Entry points the C++ plugin host calls around the import of a plugin module.

The host, inside the plugin's interpreter, does::

    before = _host.snapshot()
    import_the_plugin_module()          # runs register_op / register_op_impl
    result = _host.collect(before)      # or _host.discard(before) if the import failed

``collect`` validates every implementation registered by the import against the
canonical IR of its op_type (share/docs/plugin-authors.md, "The implementation") and, on any error, removes
everything the import registered before re-raising: "a plugin whose
implementation fails validation registers nothing (all or nothing)".

Formats (the host reads them):

* ``snapshot()`` -> ``(frozenset of proto op_types, frozenset of impl descriptor keys)``.
* ``collect(before)`` -> ``{"protos": [...], "impls": [...]}`` where each proto entry
  is the canonical IR's ``OpProto.to_dict()`` plus ``"func"`` (the prototype / infer_meta function),
  sorted by op_type, and each impl entry is ``OpImplDescriptor.to_bridge_dict()`` plus
  ``"cls"`` (the implementation class) and ``"rules"`` (what validation decided:
  :class:`~ge.custom_op._validate.ImplRules`), sorted by op_type.
"""
from __future__ import annotations  # annotations are text: no typing import (see _proto)

from . import _impl, _proto
from ._validate import validate_descriptor, validate_impl

__all__ = ["snapshot", "collect", "discard"]

Snapshot = tuple[frozenset[str], frozenset[str]]


def snapshot() -> Snapshot:
    """The current registry contents: ``(frozenset(op_types), frozenset(descriptor_keys))``."""
    return (frozenset(p.op_type for p in _proto.get_registered_op_protos()),
            frozenset(d.descriptor_key for d in _impl.get_registered_op_impls()))


def _check_before(before: Any) -> Snapshot:
    if (not isinstance(before, tuple) or len(before) != 2
            or not all(isinstance(part, (frozenset, set)) for part in before)):
        raise TypeError("before must be the (frozenset, frozenset) returned by snapshot(), "
                        f"actual {type(before).__name__}")
    return before


def _new_since(before: Snapshot):
    proto_types, impl_keys = before
    protos = [p for p in _proto.get_registered_op_protos() if p.op_type not in proto_types]
    impls = [d for d in _impl.get_registered_op_impls() if d.descriptor_key not in impl_keys]
    return protos, impls


def discard(before: Snapshot) -> None:
    """Remove every prototype and implementation registered since ``before``.

    Args:
        before: a value returned by :func:`snapshot`.

    Raises:
        TypeError: ``before`` is not a snapshot.
    """
    before = _check_before(before)
    protos, impls = _new_since(before)
    for descriptor in impls:
        _impl._unregister_op_impl(descriptor.descriptor_key)
    for proto in protos:
        _proto._unregister_op_proto(proto.op_type)


def _definition_site(func: Any) -> str:
    """``"file:line"`` of the code behind a callable stored on a class, or ``""``.

    Decorated functions are followed through ``__wrapped__`` (the plugin's own
    ``def``); a callable instance is located by its class's ``__call__``.
    """
    try:
        func = _impl.unwrap_method(func)
        for _ in range(100):  # a __wrapped__ chain, bounded against cycles
            inner = getattr(func, "__wrapped__", None)
            if inner is None:
                break
            func = inner
        code = getattr(func, "__code__", None)
        if code is None:
            code = getattr(getattr(func, "func", None), "__code__", None)  # functools.partial
        if code is None:
            code = getattr(getattr(type(func), "__call__", None), "__code__", None)
        if code is None:
            return ""
        return f"{code.co_filename}:{code.co_firstlineno}"
    except Exception:  # a hostile __getattr__ must not hide the validation error
        return ""


def _add_definition_site(exc: BaseException, descriptor: Any, proto: Any) -> None:
    """Append `` (at file:line)`` of the offending method to ``exc``'s message, in place.

    The offending method is the first schema-bound method (in the order
    validate_descriptor checks them) that fails validation on its own. The
    exception object, its type and traceback are kept.
    """
    for interface in descriptor.interfaces:
        method = _impl.INTERFACE_METHODS[interface]
        try:
            validate_impl(descriptor, method, proto)
        except Exception:
            site = _definition_site(_impl.lookup_class_attr(descriptor.cls, method))
            break
    else:
        return
    if not site:
        return
    suffix = f" (at {site})"
    if exc.args and isinstance(exc.args[0], str):
        if not exc.args[0].endswith(suffix):
            exc.args = (exc.args[0] + suffix,) + exc.args[1:]
    else:
        exc.args = (str(exc) + suffix,)


def collect(before: Snapshot, library_protos: Any = None) -> Dict[str, Any]:
    """Validate and return everything registered since ``before`` (all or nothing).

    Args:
        before: a value returned by :func:`snapshot` before the plugin was imported.
        library_protos: optional mapping op_type -> :class:`~ge.custom_op._proto.OpProto`
            of the C++ prototypes (op libraries' REG_OP) the host knows; an
            implementation whose op_type has no Python prototype in this
            interpreter is validated against the one found here
            (share/docs/op-packages.md). A Python prototype always wins.

    Returns:
        ``{"protos": [OpProto.to_dict() + {"func": function}, ...],
        "impls": [OpImplDescriptor.to_bridge_dict() + {"cls": class, "rules": ImplRules}, ...]}``,
        each list sorted by op_type.

    Raises:
        Whatever :func:`ge.custom_op._validate.validate_descriptor` raises for the
        first new implementation that does not match its IR (RuntimeError when no
        prototype is registered for its op_type, TypeError for a signature
        mismatch).  The message ends with `` (at FILE:LINE)``, where the
        offending method is defined (``co_filename`` / ``co_firstlineno`` of the
        function, staticmethod/classmethod and ``__wrapped__`` unwrapped); the
        exception object itself is re-raised.  Before re-raising, everything
        registered since ``before`` is removed (share/docs/plugin-authors.md, "Errors and what they mean": all or nothing).
        TypeError: ``before`` is not a snapshot (nothing is removed then).
    """
    before = _check_before(before)
    try:
        protos, impls = _new_since(before)
        decided = []
        for descriptor in impls:
            proto = _proto.get_registered_op_proto_by_op_type(descriptor.op_type)
            if proto is None and library_protos:
                proto = library_protos.get(descriptor.op_type)
            try:
                decided.append(validate_descriptor(descriptor, proto))
            except Exception as exc:
                _add_definition_site(exc, descriptor, proto)
                raise
        result = {
            "protos": [dict(ir.to_dict(), func=ir.func) for ir in map(_proto.canonical_ir, protos)],
            "impls": [dict(d.to_bridge_dict(), cls=d.cls, rules=r) for d, r in zip(impls, decided)],
        }
    except BaseException:
        discard(before)
        raise
    return result
