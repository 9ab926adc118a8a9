"""Signature validation of implementation callbacks against the canonical IR.

Implements section 5 of the plugin-author contract (API.md, "Signature validation
against the canonical IR") with the attribute annotations of section 6.  The
schema-bound callbacks must look like (section 4)::

    execute(self, <inputs...>, *, <attrs...>) -> None
    compile(self, <inputs...>, <outputs...>, *, <attrs...>) -> None
    declare_launch_args(self, <inputs...>, <outputs...>, *, <attrs...>) -> None

Validation reads the method from the class (never instantiating it) and checks,
in this order: no ``*args``/``**kwargs`` ("variadic"); the parameter count and
split ("expected N positional input[/output] parameters followed by M
keyword-only attrs, actual K parameters"); the input/output annotations, when
present (``Tensor`` / ``Optional[Tensor]`` / ``List[Tensor]`` as the IR says,
any spelling of List and Optional); the attr names and order ("expected attr name
X ... actual attr name Y") and their annotations, when present (section 6); the
return annotation, required and ``None`` ("expected None").  Every failure is a
``TypeError`` whose message names the op_type, the descriptor key and the method
and says "expected" and "actual".  A missing IR is a ``RuntimeError``
"canonical IR not found for schema-bound <method>".

Receivers (decided here; API.md says "inherited, staticmethod and classmethod
methods count" but not how they bind):

* a plain function defined in the class: the first parameter is the instance
  (``self``) and is not part of the schema;
* a ``classmethod``: the first parameter is the class (``cls``) and is skipped;
* a ``staticmethod``: there is no receiver; every parameter is part of the schema;
* any other callable stored on the class (e.g. an instance with ``__call__``) is
  called as it is, so its own signature (as :func:`inspect.signature` reports it)
  is the schema.

Decorated methods are inspected through ``__wrapped__`` (as
:func:`inspect.signature` does).  Plain functions are read from their code
object by :mod:`ge.custom_op._sig` without importing :mod:`inspect`; other
callables (``__wrapped__``, partials, instances, builtins) go through
:func:`inspect.signature`, imported lazily in that case only.  String annotations (``from __future__ import
annotations``) are resolved with :func:`typing.get_type_hints` against the
globals of the (unwrapped) function; an annotation that cannot be resolved is a
``TypeError`` that quotes it.
"""

from __future__ import annotations  # annotations are text: no typing import (see _proto)

import types

from ge.runtime import Tensor

from . import _sig
from ._impl import INTERFACE_METHODS, METHOD_INTERFACES, is_missing, lookup_class_attr
from ._proto import (ATTR_ANNOTATION_TEXT, AnnotationError, OpProto, annotation_repr,
                     attr_type_of, function_globals, resolve_annotation, tensor_kind)

__all__ = ["validate_impl", "validate_descriptor", "SCHEMA_METHODS"]

#: The schema-bound callback names, in the fixed order of API.md section 3.
SCHEMA_METHODS: Tuple[str, ...] = tuple(m for m, _ in METHOD_INTERFACES)

_POSITIONAL = _sig.POSITIONAL
_EXPECTED_TENSOR_TEXT = {
    "required": "Tensor",
    "optional": "Optional[Tensor]",
    "dynamic": "List[Tensor]",
}


def _schema_callable(cls: type, method: str, where: str) -> Tuple[Any, int, str]:
    """(callable to inspect, number of leading receiver parameters to skip, receiver name)."""
    raw = lookup_class_attr(cls, method)
    if is_missing(raw):
        raise TypeError(f"{where}: expected a callable '{method}' on class "
                        f"{cls.__qualname__}, actual none")
    if isinstance(raw, staticmethod):
        func, skip, receiver = raw.__func__, 0, ""
    elif isinstance(raw, classmethod):
        func, skip, receiver = raw.__func__, 1, "cls"
    elif isinstance(raw, types.FunctionType):
        func, skip, receiver = raw, 1, "self"
    else:
        func, skip, receiver = raw, 0, ""
    if not callable(func):
        raise TypeError(f"{where}: {method} must be callable, expected a function, "
                        f"actual {type(raw).__name__}")
    return func, skip, receiver


def validate_impl(descriptor: Any, method_name: str, proto: Optional[OpProto]) -> None:
    """Validate one schema-bound callback of an implementation class (API.md section 5).

    Args:
        descriptor: the class's :class:`~ge.custom_op._impl.OpImplDescriptor`
            (its ``cls``, ``op_type`` and ``descriptor_key`` are used).
        method_name: ``"execute"``, ``"compile"`` or ``"declare_launch_args"``.
        proto: the canonical IR (:class:`~ge.custom_op._proto.OpProto`) of the
            op_type, or None when no prototype is registered.

    The class is not instantiated.  Returns None when the callback matches.

    Raises:
        RuntimeError: ``proto`` is None ("canonical IR not found for schema-bound
            <method>").
        TypeError: the callback does not match the IR (variadic parameters, wrong
            count, a positional/keyword-only mismatch, a wrong input/output or attr
            annotation, a wrong attr name or order, a missing or non-None return
            annotation, an unresolvable string annotation, not callable).  The
            message names op_type, descriptor key and method and says "expected"
            and "actual".
        ValueError: ``method_name`` is not one of the three callbacks, or ``proto``
            describes another op_type.
    """
    if method_name not in SCHEMA_METHODS:
        raise ValueError(f"unknown schema-bound method {method_name!r}: expected one of "
                         f"{', '.join(SCHEMA_METHODS)}")
    op_type, key = descriptor.op_type, descriptor.descriptor_key
    where = f"op_type '{op_type}' (descriptor '{key}') method '{method_name}'"
    if proto is None:
        raise RuntimeError(f"canonical IR not found for schema-bound {method_name}: {where}: "
                           f"expected a prototype registered with "
                           f"register_op(op_type='{op_type}'), actual none")
    if proto.op_type != op_type:
        raise ValueError(f"{where}: expected the canonical IR of '{op_type}', "
                         f"actual the IR of '{proto.op_type}'")

    func, skip, receiver = _schema_callable(descriptor.cls, method_name, where)
    try:
        params, ret = _sig.signature(func)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}: expected an inspectable signature, actual "
                        f"{type(func).__name__} ({exc})") from None
    globalns = function_globals(func)

    # Variadic parameters (checked before the receiver so `def execute(*args)` reads well).
    for param in params:
        if param.kind == _sig.VAR_POSITIONAL:
            raise TypeError(f"{where}: variadic parameters are not supported: expected "
                            f"explicit parameters, actual '*{param.name}'")
        if param.kind == _sig.VAR_KEYWORD:
            raise TypeError(f"{where}: variadic parameters are not supported: expected "
                            f"explicit parameters, actual '**{param.name}'")

    if skip:
        if not params or params[0].kind not in _POSITIONAL:
            raise TypeError(f"{where}: expected a leading positional '{receiver}' parameter, "
                            f"actual {'no parameters' if not params else repr(params[0].name)}")
        params = params[skip:]

    with_outputs = method_name != "execute"
    tensors: List[Tuple[str, str, str]] = [("input", i.name, i.kind) for i in proto.inputs]
    if with_outputs:
        tensors += [("output", o.name, o.kind) for o in proto.outputs]
    n_pos, n_attr = len(tensors), len(proto.attrs)
    positional = [p for p in params if p.kind in _POSITIONAL]
    keyword_only = [p for p in params if p.kind == _sig.KEYWORD_ONLY]
    if len(positional) != n_pos or len(keyword_only) != n_attr:
        what = "input/output" if with_outputs else "input"
        raise TypeError(f"{where}: expected {n_pos} positional {what} parameters followed by "
                        f"{n_attr} keyword-only attrs, actual {len(params)} parameters "
                        f"({len(positional)} positional, {len(keyword_only)} keyword-only)")

    def resolved(annotation: Any, what: str) -> Any:
        try:
            return resolve_annotation(annotation, globalns)
        except AnnotationError as exc:
            raise TypeError(f"{where}: annotation of {what}: expected a resolvable "
                            f"annotation, actual {annotation!r} ({exc})") from None

    for param, (role, ir_name, kind) in zip(positional, tensors):
        if param.annotation is _sig.EMPTY:
            continue
        what = f"parameter '{param.name}' ({role} '{ir_name}', {kind})"
        annotation = resolved(param.annotation, what)
        if tensor_kind(annotation, Tensor) != kind:
            raise TypeError(f"{where}: {what}: expected annotation "
                            f"{_EXPECTED_TENSOR_TEXT[kind]}, actual "
                            f"{annotation_repr(annotation)}")

    for index, (param, ir_attr) in enumerate(zip(keyword_only, proto.attrs)):
        if param.name != ir_attr.name:
            raise TypeError(f"{where}: keyword-only attr {index}: expected attr name "
                            f"{ir_attr.name} (IR attrs in order: "
                            f"{', '.join(a.name for a in proto.attrs)}), actual attr name "
                            f"{param.name}")
        if param.annotation is _sig.EMPTY:
            continue
        what = f"attr '{param.name}' ({ir_attr.type})"
        annotation = resolved(param.annotation, what)
        if attr_type_of(annotation) != ir_attr.type:
            raise TypeError(f"{where}: {what}: expected annotation "
                            f"{ATTR_ANNOTATION_TEXT[ir_attr.type]}, actual "
                            f"{annotation_repr(annotation)}")

    if ret is _sig.EMPTY:
        raise TypeError(f"{where}: return annotation: expected None (-> None), actual no "
                        "return annotation")
    ret = resolved(ret, "the return value")
    if ret is not type(None):
        raise TypeError(f"{where}: return annotation: expected None, actual "
                        f"{annotation_repr(ret)}")


def validate_descriptor(descriptor: Any, proto: Optional[OpProto]) -> None:
    """Validate every declared capability of an implementation (API.md section 5).

    Args:
        descriptor: an :class:`~ge.custom_op._impl.OpImplDescriptor`.
        proto: the canonical IR of its op_type, or None.

    Checks, in the fixed order execute, compile, declare_launch_args, each method
    whose capability is in ``descriptor.interfaces`` with :func:`validate_impl`;
    the first failure propagates (RuntimeError / TypeError / ValueError as there).
    """
    for interface in descriptor.interfaces:
        validate_impl(descriptor, INTERFACE_METHODS[interface], proto)
