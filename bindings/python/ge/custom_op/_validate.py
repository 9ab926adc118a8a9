"""Signature validation of implementation callbacks against the canonical IR.

GE's rules (share/docs/plugin-authors.md, "The implementation"). The schema-bound
callbacks must look like::

    execute(self, <inputs...>, *, <attrs...>) -> None
    compile(self, <inputs...>, <outputs...>, *, <attrs...>) -> None
    declare_launch_args(self, <inputs...>, <outputs...>, *, <attrs...>) -> None

Validation reads the method from the class (never instantiating it) and checks,
in GE's order: no ``*args``/``**kwargs``; the parameter count ("expected N
positional input[/output] parameters followed by M keyword-only attrs, actual K
parameters"); each input/output positional with an annotation, when present,
of ``Tensor`` / ``Optional[Tensor]`` / ``List[Tensor]`` as the IR says (any
spelling of List and Optional); each attr keyword-only with the IR's name in
the IR's order ("expected attr name X at index I, actual attr name Y") and a
matching annotation, when present; a ``None`` return annotation (which GE
release's rules apply is decided by the class: :func:`execute_rules`,
share/docs/plugin-authors.md, "Plugins from earlier GE releases"). Every failure
is a ``TypeError`` in GE's wording "invalid <method> signature for op type <T>,
descriptor key <K>, method <method>: expected ..., actual ..."; a missing IR is
a ``RuntimeError`` "canonical IR not found for schema-bound <method>".

Receivers (ours; GE says inherited, staticmethod and classmethod methods count
but not how they bind):

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
from ._record import FrozenRecord
from .base import CONTEXT_PARAMETER, INPUTS_PARAMETER, EagerExecuteOp, EagerOpExecutionContext
from ._proto import (ATTR_ANNOTATION_TEXT, AnnotationError, annotation_repr, attr_type_of,
                     canonical_ir, function_globals, resolve_annotation, tensor_kind)

__all__ = ["validate_impl", "validate_descriptor", "execute_rules", "ImplRules", "SCHEMA_METHODS",
           "RULES_BETA1", "RULES_BETA2", "RULES_NEWEST", "RULES_ORDER"]

#: The public GE releases whose rules a class may follow (share/docs/plugin-authors.md,
#: "Plugins from earlier GE releases"): what the class is decides, never a setting.
RULES_BETA1 = "9.2.0-beta.1"
RULES_BETA2 = "9.2.0-beta.2"  # also develop until its schema-bound API
RULES_NEWEST = "newest"
RULES_ORDER: Tuple[str, ...] = (RULES_BETA1, RULES_BETA2, RULES_NEWEST)

# How the host calls execute (bindings/native/dispatch.h, ExecuteCall).
CALL_SCHEMA = "schema"                        # schema-bound, must return None
CALL_SCHEMA_ANY_RESULT = "schema_any_result"  # schema-bound, result ignored
CALL_CONTEXT = "context"                      # execute(ctx), result ignored

#: The schema-bound callback names, in the fixed order of share/docs/plugin-authors.md, "The implementation".
SCHEMA_METHODS: Tuple[str, ...] = tuple(m for m, _ in METHOD_INTERFACES)

_POSITIONAL = _sig.POSITIONAL
_EXPECTED_TENSOR_TEXT = {
    "required": "Tensor",
    "optional": "Optional[Tensor]",
    "dynamic": "List[Tensor]",
}


def _schema_callable(cls: type, method: str, fail: Any) -> Tuple[Any, int, str]:
    """(callable to inspect, number of leading receiver parameters to skip, receiver name)."""
    raw = lookup_class_attr(cls, method)
    if is_missing(raw):
        raise fail(f"a callable '{method}' on class {cls.__qualname__}", "none")
    if isinstance(raw, staticmethod):
        func, skip, receiver = raw.__func__, 0, ""
    elif isinstance(raw, classmethod):
        func, skip, receiver = raw.__func__, 1, "cls"
    elif isinstance(raw, types.FunctionType):
        func, skip, receiver = raw, 1, "self"
    else:
        func, skip, receiver = raw, 0, ""
    if not callable(func):
        raise fail(f"a callable {method}", type(raw).__name__)
    return func, skip, receiver


def _signature_error(op_type: str, key: str, method: str, expected: str, actual: str) -> TypeError:
    """GE's wording: "invalid <method> signature for op type <T>, descriptor key <K>, method <m>: ..."."""
    return TypeError(f"invalid {method} signature for op type {op_type}, descriptor key {key}, "
                     f"method {method}: expected {expected}, actual {actual}")


_KIND_NAMES = {_sig.POSITIONAL_ONLY: "POSITIONAL_ONLY", _sig.POSITIONAL_OR_KEYWORD: "POSITIONAL_OR_KEYWORD",
               _sig.VAR_POSITIONAL: "VAR_POSITIONAL", _sig.KEYWORD_ONLY: "KEYWORD_ONLY",
               _sig.VAR_KEYWORD: "VAR_KEYWORD"}


class ImplRules(FrozenRecord):
    """What validation decided about one implementation (plain data).

    Fields: ``rules`` (one of :data:`RULES_ORDER`: the release whose rules its
    ``execute`` follows; ``newest`` for a class without execute), ``call``
    ("schema", "schema_any_result" or "context": how the host calls
    ``execute``), ``needs_ir`` (False when the class registers without a
    canonical IR: a legacy execute and nothing else), ``warnings`` (texts:
    what loads here but deserves a look, e.g. an execute parameter that looks
    like a legacy form's and is bound to the IR's input),
    ``newest_refusal`` (the error the newest GE's rules give the class, e.g.
    a missing ``-> None``, or "" when they accept it).
    """
    _fields = ("rules", "call", "needs_ir", "warnings", "newest_refusal")
    rules: str
    call: str
    needs_ir: bool
    warnings: Tuple[str, ...]
    newest_refusal: str

    def __init__(self, rules: str, call: str, needs_ir: bool, warnings: Sequence[str], newest_refusal: str) -> None:
        set_ = object.__setattr__
        set_(self, "rules", rules)
        set_(self, "call", call)
        set_(self, "needs_ir", needs_ir)
        set_(self, "warnings", tuple(warnings))
        set_(self, "newest_refusal", newest_refusal)


def _ir_input_names(proto: Any) -> List[str]:
    """The input names of the canonical IR ``proto`` (None: no IR, no names)."""
    ir = canonical_ir(proto)
    return [i.name for i in ir.inputs] if ir is not None else []


def _is_context_annotation(annotation: Any, globalns: Mapping[str, Any]) -> bool:
    """An annotation naming the execute context (resolved, or its text when it cannot be)."""
    if annotation is _sig.EMPTY:
        return False
    try:
        resolved = resolve_annotation(annotation, globalns)
    except AnnotationError:
        return isinstance(annotation, str) and annotation.rsplit(".", 1)[-1] == "EagerOpExecutionContext"
    return resolved is EagerOpExecutionContext


def _legacy_context_parameter(cls: Any, ir_inputs: Sequence[str], newest: bool = False) -> bool:
    """Whether ``cls.execute``, called on an instance, takes exactly one
    positional parameter that names the execute context: ``ctx`` (every GE
    release's legacy form, whatever the class and the IR: a plain function, a
    staticmethod, a classmethod or a callable object) or, ours, one annotated
    ``EagerOpExecutionContext`` when the IR has no input of that name (not
    with ``newest``)."""
    raw = lookup_class_attr(cls, "execute")
    if isinstance(raw, staticmethod):
        func, skip = raw.__func__, 0
    elif isinstance(raw, classmethod):
        func, skip = raw.__func__, 1
    elif isinstance(raw, types.FunctionType):
        func, skip = raw, 1
    elif callable(raw) and not is_missing(raw):
        func, skip = raw, 0  # a callable object stored on the class: its own signature
    else:
        return False
    if getattr(func, "__ge_inputs_adapter__", False):
        return False
    try:
        params, _ = _sig.signature(func)
    except (TypeError, ValueError):
        return False
    if len(params) != skip + 1 or any(p.kind not in _POSITIONAL for p in params):
        return False
    param = params[skip]
    if param.name == CONTEXT_PARAMETER:
        return True  # GE's rule: the name alone decides, whatever the IR's input names
    if param.name in ir_inputs:
        return False
    return not newest and _is_context_annotation(param.annotation, function_globals(func))


#: GE 9.2.0-beta.1's words for an execute whose one parameter is neither form's.
LEGACY_NAMES_HINT = "Use 'ctx' for EagerOpExecutionContext or 'inputs' for the input tensor list."


def _single_parameter(cls: Any) -> Optional[str]:
    """The name of ``cls.execute``'s one positional parameter after its
    receiver (a plain function, decorated ones followed), or None."""
    raw = lookup_class_attr(cls, "execute")
    func = getattr(raw, "__wrapped__", raw) if getattr(raw, "__ge_inputs_adapter__", False) else raw
    if not isinstance(func, types.FunctionType):
        return None
    try:
        params, _ = _sig.signature(func)
    except (TypeError, ValueError):
        return None
    if len(params) != 2 or any(p.kind not in _POSITIONAL for p in params):
        return None
    return params[1].name


def _single_parameter_hint(cls: Any, ir_inputs: Sequence[str]) -> str:
    """What to write when execute's one parameter looks like a legacy form's
    but is not one (a porting mistake), else "". For the error of an
    execute that does not match the IR, or the warning of one that binds."""
    name = _single_parameter(cls)
    if name is None or name in ir_inputs:
        return ""
    release = isinstance(cls, type) and issubclass(cls, EagerExecuteOp)
    if name == INPUTS_PARAMETER and not release:
        return ("GE 9.2.0-beta.1's execute(self, inputs), called with the input list, needs a subclass of "
                "ge.custom_op.EagerExecuteOp")
    if release and name not in (CONTEXT_PARAMETER, INPUTS_PARAMETER):
        return (f"execute's one parameter '{name}' is no GE 9.2.0-beta.x legacy form: {LEGACY_NAMES_HINT} "
                "(or name it as the IR's input to take that tensor)")
    return ""


def execute_rules(cls: Any, proto: Any) -> Tuple[str, str]:
    """``(rules, call)`` of a class's ``execute`` against the IR ``proto`` (or None).

    What the class is decides (share/docs/plugin-authors.md, "Plugins from
    earlier GE releases"):

    * ``execute(self, ctx)`` (also a staticmethod ``(ctx)``, a classmethod
      ``(cls, ctx)`` or a callable object taking ``(ctx)``; or, ours, one
      parameter annotated ``EagerOpExecutionContext`` when the IR has no input
      of that name): the legacy form, called with the context
      (``"context"``), in every release and for any class; its rules are
      ``9.2.0-beta.2`` on an ``EagerExecuteOp`` subclass, else ``newest``;
    * on a subclass of :class:`~ge.custom_op.base.EagerExecuteOp`:
      ``execute(self, inputs)`` (adapted by the base class) when there is no IR
      or the IR has not exactly one input, named ``inputs``: 9.2.0-beta.1's
      input list (``"9.2.0-beta.1", "context"``); any other ``execute``:
      schema-bound with its result not checked (``"9.2.0-beta.2",
      "schema_any_result"``);
    * any other class: the newest rules, schema-bound (``"newest", "schema"``).
    """
    ir_inputs = _ir_input_names(proto)
    release = isinstance(cls, type) and issubclass(cls, EagerExecuteOp)
    if isinstance(cls, type) and _legacy_context_parameter(cls, ir_inputs):
        return (RULES_BETA2 if release else RULES_NEWEST), CALL_CONTEXT
    if not release:
        return RULES_NEWEST, CALL_SCHEMA
    raw = lookup_class_attr(cls, "execute")
    if getattr(raw, "__ge_inputs_adapter__", False) and ir_inputs != [INPUTS_PARAMETER]:
        return RULES_BETA1, CALL_CONTEXT
    return RULES_BETA2, CALL_SCHEMA_ANY_RESULT


def validate_impl(descriptor: Any, method_name: str, proto: Any, newest: bool = False) -> None:
    """Validate one schema-bound callback of an implementation class against its IR.

    The rules are GE's (share/docs/plugin-authors.md, "The implementation"):
    ``execute(self, <inputs...>, *, <attrs...>) -> None`` and
    ``compile`` / ``declare_launch_args(self, <inputs...>, <outputs...>, *,
    <attrs...>) -> None``, checked in this order: no ``*args``/``**kwargs``;
    the parameter count; each input/output positional, its annotation (if any)
    ``Tensor`` / ``Optional[Tensor]`` / ``List[Tensor]`` as the IR says; each
    attr keyword-only, with the IR's name in the IR's order and a matching
    annotation (if any); a return annotation, ``None``.

    Args:
        descriptor: the class's :class:`~ge.custom_op._impl.OpImplDescriptor`
            (its ``cls``, ``op_type`` and ``descriptor_key`` are used).
        method_name: ``"execute"``, ``"compile"`` or ``"declare_launch_args"``.
        proto: the canonical IR of the op_type (an
            :class:`~ge.custom_op._proto.OpProtoDescriptor` or the host's
            :class:`~ge.custom_op._proto.OpProto`), or None when none is registered.

    Which release's rules apply is decided by the class (:func:`execute_rules`):
    ``compile`` and ``declare_launch_args`` always follow the newest; a
    legacy ``execute`` (``(self, ctx)``, 9.2.0-beta.1's ``(self, inputs)``)
    is not checked at all and needs no IR; a schema-bound ``execute`` of an
    ``EagerExecuteOp`` subclass is checked without its return annotation; a
    plain class's ``execute`` without a return annotation is accepted (the
    newest GE refuses it: :func:`validate_descriptor` says so in
    ``newest_refusal``; an explicit other annotation is an error).
    ``newest``: apply the newest rules whatever the class (what the newest
    GE would say: ``--check``'s warning).

    The class is not instantiated. Returns None when the callback matches.

    Raises:
        RuntimeError: ``proto`` is None ("canonical IR not found for schema-bound
            <method>: <op_type> ...").
        TypeError: a mismatch: "invalid <method> signature for op type <T>,
            descriptor key <K>, method <method>: expected ..., actual ...".
        ValueError: ``method_name`` is not one of the three callbacks, or ``proto``
            describes another op_type.
    """
    if method_name not in SCHEMA_METHODS:
        raise ValueError(f"unknown schema-bound method {method_name!r}: expected one of "
                         f"{', '.join(SCHEMA_METHODS)}")
    op_type, key = descriptor.op_type, descriptor.descriptor_key
    rules, call = RULES_NEWEST, CALL_SCHEMA
    if method_name == "execute":
        if newest:
            if _legacy_context_parameter(descriptor.cls, _ir_input_names(proto), newest=True):
                return  # every release, the newest too, calls execute(self, ctx) with the context
        else:
            rules, call = execute_rules(descriptor.cls, proto)
            if call == CALL_CONTEXT:
                return  # called with the context: nothing of the IR to match, none needed
    if proto is None:
        hint = _single_parameter_hint(descriptor.cls, ()) if method_name == "execute" else ""
        missing = RuntimeError(f"canonical IR not found for schema-bound {method_name}: {op_type} "
                               f"(descriptor key {key}): expected a prototype registered with "
                               f"register_op(op_type='{op_type}') or by an op library (REG_OP), actual none"
                               + (f"; {hint}" if hint else ""))
        # What the error is, as data: the host files it as a "prototype"
        # error of this op_type (ge._entry.collect) and names, after it, a
        # failed op library or the plugin with the prototype.
        missing.__ge_kind__ = "prototype"
        missing.__ge_op_type__ = op_type
        raise missing
    proto = canonical_ir(proto)
    if proto.op_type != op_type:
        raise ValueError(f"op_type '{op_type}' (descriptor key {key}) method {method_name}: "
                         f"expected the canonical IR of '{op_type}', actual the IR of "
                         f"'{proto.op_type}'")

    def fail(expected: str, actual: str) -> TypeError:
        return _signature_error(op_type, key, method_name, expected, actual)

    func, skip, receiver = _schema_callable(descriptor.cls, method_name, fail)
    try:
        params, ret = _sig.signature(func)
    except (TypeError, ValueError) as exc:
        raise fail("an inspectable signature", f"{type(func).__name__} ({exc})") from None
    globalns = function_globals(func)

    for param in params:
        if param.kind in (_sig.VAR_POSITIONAL, _sig.VAR_KEYWORD):
            raise fail("no variadic parameters", f"variadic parameter {param.name}")

    if skip:
        if not params or params[0].kind not in _POSITIONAL:
            raise fail(f"a leading positional '{receiver}' parameter",
                       "no parameters" if not params else f"parameter {params[0].name}")
        params = params[skip:]

    with_outputs = method_name != "execute"
    tensors: List[Tuple[str, int, str]] = [("input", n, i.kind) for n, i in enumerate(proto.inputs)]
    if with_outputs:
        tensors += [("output", n, o.kind) for n, o in enumerate(proto.outputs)]
    n_pos, n_attr = len(tensors), len(proto.attrs)
    if len(params) != n_pos + n_attr:
        n_kw = sum(1 for p in params if p.kind == _sig.KEYWORD_ONLY)
        hint = ""
        if method_name == "execute" and not newest:
            hint = _single_parameter_hint(descriptor.cls, [i.name for i in proto.inputs])
        raise fail(f"{n_pos} positional {'input/output' if with_outputs else 'input'} parameters "
                   f"followed by {n_attr} keyword-only attrs",
                   f"{len(params)} parameters ({len(params) - n_kw} positional, {n_kw} keyword-only)"
                   + (f"; {hint}" if hint else ""))

    def resolved(annotation: Any, what: str) -> Any:
        try:
            return resolve_annotation(annotation, globalns)
        except AnnotationError as exc:
            raise fail("resolvable type annotations",
                       f"type hint resolution failed for {what}: {exc}") from None

    for param, (role, index, kind) in zip(params, tensors):
        if param.kind not in _POSITIONAL:
            raise fail(f"positional {role} parameter at index {index}",
                       f"parameter {param.name} kind {_KIND_NAMES[param.kind]}")
        if param.annotation is _sig.EMPTY:
            continue
        annotation = resolved(param.annotation, f"parameter {param.name}")
        if tensor_kind(annotation, Tensor) != kind:
            raise fail(f"{role} parameter at index {index} annotation {_EXPECTED_TENSOR_TEXT[kind]}",
                       annotation_repr(annotation))

    for index, (param, ir_attr) in enumerate(zip(params[n_pos:], proto.attrs)):
        if param.kind != _sig.KEYWORD_ONLY:
            raise fail(f"keyword-only attr parameter {ir_attr.name}",
                       f"parameter {param.name} kind {_KIND_NAMES[param.kind]}")
        if param.name != ir_attr.name:
            raise fail(f"attr name {ir_attr.name} at index {index} (IR attrs in order: "
                       f"{', '.join(a.name for a in proto.attrs)})", f"attr name {param.name}")
        if param.annotation is _sig.EMPTY:
            continue
        annotation = resolved(param.annotation, f"attr {param.name}")
        if attr_type_of(annotation) != ir_attr.type:
            raise fail(f"attr parameter {ir_attr.name} annotation {ATTR_ANNOTATION_TEXT[ir_attr.type]} "
                       f"({ir_attr.type})", annotation_repr(annotation))

    if rules == RULES_BETA2:
        return  # GE 9.2.0-beta.x checks neither the return annotation nor the value
    if ret is _sig.EMPTY:
        if method_name == "execute" and not newest:
            # The newest GE refuses this; upstream's own example plugin of the
            # earlier releases has no annotations, so it loads, and what the
            # newest GE says of it is its ImplRules.newest_refusal.
            return
        raise fail("None return annotation", "missing return annotation")
    ret = resolved(ret, "the return annotation")
    if ret is not type(None):
        raise fail("None return annotation", annotation_repr(ret))


def validate_descriptor(descriptor: Any, proto: Any) -> ImplRules:
    """Validate every declared capability of an implementation against its IR.

    Args:
        descriptor: an :class:`~ge.custom_op._impl.OpImplDescriptor`.
        proto: the canonical IR of its op_type (``OpProtoDescriptor`` or the
            host's ``OpProto``), or None.

    Checks, in the fixed order execute, compile, declare_launch_args, each method
    whose capability is in ``descriptor.interfaces`` with :func:`validate_impl`
    (each release's rules as the class decides); the first failure propagates
    (RuntimeError / TypeError / ValueError as there).

    Returns:
        :class:`ImplRules`: the rules applied, how ``execute`` is called,
        whether an IR is needed, the warnings, and what the newest GE's rules
        would refuse ("" when nothing). Pure: the class is not instantiated.
    """
    warnings: List[str] = []
    for interface in descriptor.interfaces:
        validate_impl(descriptor, INTERFACE_METHODS[interface], proto)
    rules, call = RULES_NEWEST, CALL_SCHEMA
    if "eager_execute" in descriptor.interfaces:
        rules, call = execute_rules(descriptor.cls, proto)
        ir_inputs = _ir_input_names(proto)
        hint = _single_parameter_hint(descriptor.cls, ir_inputs)
        if hint and call != CALL_CONTEXT and len(ir_inputs) == 1:
            warnings.append(f"op_type '{descriptor.op_type}' ({descriptor.descriptor_key}): {hint}; it is bound to "
                            f"the IR's input '{ir_inputs[0]}' (schema-bound)")
    refusal = ""
    if "eager_execute" in descriptor.interfaces:
        try:
            validate_impl(descriptor, "execute", proto, newest=True)
        except (RuntimeError, TypeError, ValueError) as exc:
            refusal = str(exc)
            if call == CALL_CONTEXT and rules == RULES_BETA1:
                refusal += (" (the newest GE binds execute(self, inputs) to the canonical IR: it does not "
                            "pass the input list)")
    needs_ir = not (call == CALL_CONTEXT and list(descriptor.interfaces) == ["eager_execute"])
    return ImplRules(rules, call, needs_ir, warnings, refusal)
