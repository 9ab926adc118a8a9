"""Operator prototypes: ``register_op`` and the per-interpreter prototype registry.

This module implements section 2 of the plugin-author contract (API.md, "Prototype:
``register_op(*, op_type, mutates_args=())``") and the attribute-type table of
section 6.  A prototype is a plain Python function that is at the same time the
operator's ``infer_meta``; its signature *is* the canonical IR of the operator:

* positional parameters are the inputs (``TensorDesc`` = required,
  ``Optional[TensorDesc]`` = optional, ``List[TensorDesc]`` = dynamic);
* keyword-only parameters are the attributes, typed by annotation (section 6);
* the return annotation gives the outputs (``None``, ``TensorDesc``,
  ``List[TensorDesc]`` or a ``Tuple`` of the latter two).

The registry is a module-level dict: every interpreter (the host runs each plugin
in its own sub-interpreter) has its own copy of the ``ge`` package and therefore
its own registry.

Decisions where API.md is silent (also recorded in the project docs):

* ``mutates_args`` shape errors (not a list/tuple, an element that is neither a
  name nor a ``(name, index)`` pair, mixing both forms) are raised by
  ``register_op(...)`` itself, before the function is seen; ``None`` is accepted
  as "no aliasing".  Name and index errors need the signature and are raised when
  the decorator is applied.
* An output may only alias an input of the same kind (required output <->
  required input, dynamic output <-> dynamic input); an optional input cannot be
  aliased; an input can be aliased by at most one output.
* Unnamed outputs are called ``output<i>`` where ``i`` is the output's position
  among all outputs; on a clash with an input, attribute or another output name,
  ``_1``, ``_2``, ... is appended.
* A positional ``Optional[TensorDesc]`` input may have the default ``None``; any
  other default on an input is rejected.
* "Same content" for a re-registration means the same canonical IR and the same
  function body (byte code, constants and names; line numbers are ignored).  The
  first record is kept; the decorator returns the function it was given.
* List defaults are stored in :class:`IrAttr` as tuples (the record is frozen);
  :meth:`OpProto.to_dict` turns them back into lists.
* Annotations written as strings (``from __future__ import annotations``) are
  resolved with :func:`typing.get_type_hints` against the function's globals.

This module does not import :mod:`typing` (about 1.4 MiB per sub-interpreter,
with ``re``; DESIGN.md's per-plugin budget).  A ``typing`` construct
(``Optional[X]``, ``List[X]``, ``ForwardRef``, ...) can only exist once some code
has imported ``typing``, so the annotation helpers look it up in ``sys.modules``
and use its ``get_origin`` / ``get_args`` / ``Union`` when it is there; builtin
generics (``list[X]``, ``tuple[...]``, a ``types.GenericAlias``) and PEP 604
unions (``X | None``, a ``types.UnionType``) are recognised with :mod:`types`
alone.  ``typing`` is imported lazily only to evaluate string annotations
(:func:`typing.get_type_hints`).
"""

from __future__ import annotations  # annotations below are text: no typing import

import collections.abc
import sys
import types

from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc

from . import _sig
from ._record import FrozenRecord

__all__ = [
    "IrInput",
    "IrOutput",
    "IrAttr",
    "OpProto",
    "register_op",
    "call_infer_meta",
    "get_registered_op_protos",
    "get_registered_op_proto_by_op_type",
    "get_registered_op_proto_dicts",
    "get_registered_op_proto_dict_by_op_type",
    "clear_registered_op_protos",
]

# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------

INPUT_KINDS = ("required", "optional", "dynamic")
OUTPUT_KINDS = ("required", "dynamic")
RETURN_FORMS = ("none", "single", "list", "tuple")
ATTR_TYPES = (
    "VT_INT", "VT_FLOAT", "VT_BOOL", "VT_STRING", "VT_DATA_TYPE", "VT_TENSOR",
    "VT_LIST_INT", "VT_LIST_FLOAT", "VT_LIST_BOOL", "VT_LIST_STRING",
    "VT_LIST_DATA_TYPE", "VT_LIST_LIST_INT",
)

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


# The records are frozen value classes (``_record.FrozenRecord``: the behaviour of
# ``@dataclasses.dataclass(frozen=True)`` without importing dataclasses/inspect).

class IrInput(FrozenRecord):
    """One input of the canonical IR: ``name`` and ``kind`` (required/optional/dynamic)."""
    _fields = ("name", "kind")
    name: str
    kind: str

    def __init__(self, name: str, kind: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)

    def to_dict(self) -> Dict[str, str]:
        return {"name": self.name, "kind": self.kind}


class IrOutput(FrozenRecord):
    """One output of the canonical IR: ``name`` and ``kind`` (required/dynamic)."""
    _fields = ("name", "kind")
    name: str
    kind: str

    def __init__(self, name: str, kind: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)

    def to_dict(self) -> Dict[str, str]:
        return {"name": self.name, "kind": self.kind}


class IrAttr(FrozenRecord):
    """One attribute of the canonical IR.

    ``type`` is one of the ``VT_*`` strings of API.md section 6; ``required`` is
    True when the prototype gives no default, in which case ``default`` is None.
    List defaults are kept as tuples (nested tuples for VT_LIST_LIST_INT);
    DataType defaults stay :class:`ge.graph.DataType`.
    """
    _fields = ("name", "type", "required", "default")
    name: str
    type: str
    required: bool
    default: Any = None

    def __init__(self, name: str, type: str, required: bool, default: Any = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "required", required)
        object.__setattr__(self, "default", default)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "required": self.required,
            "default": _thaw(self.default),
        }


class OpProto(FrozenRecord):
    """The record of one registered prototype (the canonical IR of an op_type).

    Fields: ``op_type``, ``func`` (the prototype / infer_meta function),
    ``module_name`` and ``qualname`` of ``func``, ``inputs`` (tuple of
    :class:`IrInput`), ``outputs`` (tuple of :class:`IrOutput`), ``attrs``
    (tuple of :class:`IrAttr`), ``mutates`` (tuple of ``(input_name,
    output_index)`` sorted by output index) and ``return_form`` (``"none"``,
    ``"single"``, ``"list"`` or ``"tuple"``: the shape of the return annotation).
    """
    _fields = ("op_type", "func", "module_name", "qualname", "inputs", "outputs", "attrs",
               "mutates", "return_form")
    op_type: str
    func: Any
    module_name: str
    qualname: str
    inputs: Tuple[IrInput, ...]
    outputs: Tuple[IrOutput, ...]
    attrs: Tuple[IrAttr, ...]
    mutates: Tuple[Tuple[str, int], ...]
    return_form: str

    def __init__(self, op_type: str, func: Any, module_name: str, qualname: str,
                 inputs: Tuple[IrInput, ...], outputs: Tuple[IrOutput, ...],
                 attrs: Tuple[IrAttr, ...], mutates: Tuple[Tuple[str, int], ...],
                 return_form: str) -> None:
        set_ = object.__setattr__
        set_(self, "op_type", op_type)
        set_(self, "func", func)
        set_(self, "module_name", module_name)
        set_(self, "qualname", qualname)
        set_(self, "inputs", inputs)
        set_(self, "outputs", outputs)
        set_(self, "attrs", attrs)
        set_(self, "mutates", mutates)
        set_(self, "return_form", return_form)

    @property
    def proto_key(self) -> str:
        """``"module:qualname:op_type"``, the identity used for re-registration."""
        return f"{self.module_name}:{self.qualname}:{self.op_type}"

    def to_dict(self) -> Dict[str, Any]:
        """Plain-data view (dicts, lists, str, bool, int, float, DataType) read by the C++ host.

        Keys: ``op_type``, ``module_name``, ``qualname``, ``inputs`` (list of
        ``{"name", "kind"}``), ``outputs`` (list of ``{"name", "kind"}``),
        ``attrs`` (list of ``{"name", "type", "required", "default"}``),
        ``mutates`` (list of ``[input_name, output_index]``), ``return_form``.
        The function itself is not included.
        """
        return {
            "op_type": self.op_type,
            "module_name": self.module_name,
            "qualname": self.qualname,
            "inputs": [i.to_dict() for i in self.inputs],
            "outputs": [o.to_dict() for o in self.outputs],
            "attrs": [a.to_dict() for a in self.attrs],
            "mutates": [[name, index] for name, index in self.mutates],
            "return_form": self.return_form,
        }


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


# ---------------------------------------------------------------------------
# Annotation helpers (shared with _validate)
# ---------------------------------------------------------------------------

_NONE_TYPE = type(None)


class AnnotationError(Exception):
    """Internal: an annotation string could not be resolved (carries the reason)."""


def _loaded_typing() -> Any:
    """The :mod:`typing` module if some code has imported it, else None (never imports it).

    Every ``typing`` construct (``Optional[X]``, ``List[X]``, ``ForwardRef``,
    ``TypeVar``, ...) is an instance of a class defined in ``typing``, so when
    ``typing`` is not in ``sys.modules`` no annotation can be one.
    """
    return sys.modules.get("typing")


def get_origin(annotation: Any) -> Any:
    """:func:`typing.get_origin`, without importing :mod:`typing`.

    Delegates to ``typing.get_origin`` when ``typing`` is loaded; otherwise only
    a builtin generic alias (``list[X]``: its origin) or a PEP 604 union
    (``types.UnionType``) can have an origin.
    """
    typing = _loaded_typing()
    if typing is not None:
        return typing.get_origin(annotation)
    if isinstance(annotation, types.GenericAlias):
        return annotation.__origin__
    if isinstance(annotation, types.UnionType):
        return types.UnionType
    return None


def get_args(annotation: Any) -> tuple:
    """:func:`typing.get_args`, without importing :mod:`typing` (see :func:`get_origin`)."""
    typing = _loaded_typing()
    if typing is not None:
        return typing.get_args(annotation)
    if isinstance(annotation, types.GenericAlias):
        args = annotation.__args__
        # typing._should_unflatten_callable_args, for typing-free arguments.
        if (annotation.__origin__ is collections.abc.Callable
                and not (len(args) == 2
                         and (args[0] is Ellipsis or isinstance(args[0], (tuple, list))))):
            args = (list(args[:-1]), args[-1])
        return args
    if isinstance(annotation, types.UnionType):
        return annotation.__args__
    return ()


def _has_forward_refs(annotation: Any) -> bool:
    """For a typing-free annotation: does :func:`typing.get_type_hints` have work to do?

    It evaluates strings nested in builtin generic aliases / PEP 604 unions
    (``list["TensorDesc"]``) and turns ``*tuple[...]`` into ``Unpack[...]``; any
    other such annotation comes back unchanged (rebuilt equal).
    """
    if isinstance(annotation, types.GenericAlias):
        if annotation.__unpacked__:
            return True
    elif not isinstance(annotation, types.UnionType):
        return False
    return any(isinstance(arg, str) or _has_forward_refs(arg) for arg in annotation.__args__)


def resolve_annotation(annotation: Any, globalns: Mapping[str, Any]) -> Any:
    """Resolve one annotation, evaluating strings / forward references.

    Uses :func:`typing.get_type_hints` on a throw-away holder with the given
    globals, so nested forward references (``List["TensorDesc"]``) and PEP 604
    unions written as strings are handled exactly as for a real function.
    ``None`` becomes ``type(None)``.  Raises :class:`AnnotationError` when the
    annotation cannot be evaluated.

    :mod:`typing` is imported (lazily) only when there is something to evaluate:
    a string, or a string nested in a builtin generic alias.  An annotation
    built from classes, ``list[...]`` / ``tuple[...]`` and ``X | None`` alone is
    returned as it is (``get_type_hints`` would return an equal rebuild of it).
    """
    if annotation is None:
        return _NONE_TYPE
    typing = _loaded_typing()
    if typing is None:
        if not isinstance(annotation, str) and not _has_forward_refs(annotation):
            return annotation
        import typing  # lazily: string annotations only
    elif (not isinstance(annotation, (str, typing.ForwardRef))
            and not typing.get_args(annotation)):
        return annotation

    def holder():  # pragma: no cover - never called
        pass

    holder.__annotations__ = {"annotation": annotation}
    try:
        ns = globalns if isinstance(globalns, dict) else dict(globalns)
        return typing.get_type_hints(holder, globalns=ns)["annotation"]
    except Exception as exc:  # NameError, SyntaxError, TypeError, AttributeError, ...
        raise AnnotationError(f"{type(exc).__name__}: {exc}") from exc


def function_globals(func: Any) -> Mapping[str, Any]:
    """The module globals against which a function's string annotations resolve."""
    inner = _sig.unwrap(func) if callable(func) else func
    g = getattr(inner, "__globals__", None)
    if g is None:
        g = getattr(func, "__globals__", None)
    return g if g is not None else {}


def annotation_repr(annotation: Any) -> str:
    """A short, readable rendering of an annotation for error messages."""
    if annotation is _sig.EMPTY:
        return "no annotation"
    if annotation is None or annotation is _NONE_TYPE:
        return "None"
    if isinstance(annotation, str):
        return repr(annotation)
    if isinstance(annotation, type) and not get_args(annotation):
        return annotation.__qualname__
    return repr(annotation).replace("typing.", "")


def _is_union_with_none(annotation: Any) -> Optional[Any]:
    """If ``annotation`` is ``Optional[X]`` / ``Union[X, None]`` / ``X | None``, return X."""
    origin = get_origin(annotation)
    if origin is types.UnionType or (origin is not None and origin is _typing_union()):
        args = get_args(annotation)
        if len(args) == 2 and _NONE_TYPE in args:
            return args[0] if args[1] is _NONE_TYPE else args[1]
    return None


def _typing_union() -> Any:
    """``typing.Union`` if :mod:`typing` is loaded (only then can an origin be it), else None."""
    typing = _loaded_typing()
    return None if typing is None else typing.Union


def _list_item(annotation: Any) -> Optional[Any]:
    """If ``annotation`` is ``List[X]`` / ``list[X]``, return X (None otherwise)."""
    if get_origin(annotation) is list:
        args = get_args(annotation)
        if len(args) == 1:
            return args[0]
    return None


def tensor_kind(annotation: Any, tensor_cls: type) -> Optional[str]:
    """Classify an annotation built on ``tensor_cls`` (TensorDesc or Tensor).

    Returns ``"required"`` for ``tensor_cls``, ``"optional"`` for
    ``Optional[tensor_cls]`` (any spelling), ``"dynamic"`` for
    ``List[tensor_cls]`` / ``list[tensor_cls]``, None for anything else.
    """
    if annotation is tensor_cls:
        return "required"
    if _is_union_with_none(annotation) is tensor_cls:
        return "optional"
    if _list_item(annotation) is tensor_cls:
        return "dynamic"
    return None


_SCALAR_ATTR_TYPES = (
    (bool, "VT_BOOL"),
    (int, "VT_INT"),
    (float, "VT_FLOAT"),
    (str, "VT_STRING"),
)


def attr_type_of(annotation: Any) -> Optional[str]:
    """Map an attribute annotation to its ``VT_*`` type (API.md section 6), or None."""
    for py_type, vt in _SCALAR_ATTR_TYPES:
        if annotation is py_type:
            return vt
    if annotation is DataType:
        return "VT_DATA_TYPE"
    if annotation is Tensor:
        return "VT_TENSOR"
    item = _list_item(annotation)
    if item is None:
        return None
    for py_type, vt in _SCALAR_ATTR_TYPES:
        if item is py_type:
            return "VT_LIST_" + vt[3:]
    if item is DataType:
        return "VT_LIST_DATA_TYPE"
    if _list_item(item) is int:
        return "VT_LIST_LIST_INT"
    return None


ATTR_ANNOTATION_TEXT = {
    "VT_INT": "int", "VT_FLOAT": "float", "VT_BOOL": "bool", "VT_STRING": "str",
    "VT_DATA_TYPE": "DataType", "VT_TENSOR": "Tensor",
    "VT_LIST_INT": "List[int]", "VT_LIST_FLOAT": "List[float]",
    "VT_LIST_BOOL": "List[bool]", "VT_LIST_STRING": "List[str]",
    "VT_LIST_DATA_TYPE": "List[DataType]", "VT_LIST_LIST_INT": "List[List[int]]",
}


def _scalar_default_ok(vt: str, value: Any) -> bool:
    if vt == "VT_INT":
        return type(value) is int and _INT64_MIN <= value <= _INT64_MAX
    if vt == "VT_FLOAT":
        return type(value) is float
    if vt == "VT_BOOL":
        return type(value) is bool
    if vt == "VT_STRING":
        return type(value) is str
    if vt == "VT_DATA_TYPE":
        return isinstance(value, DataType) and value != DataType.DT_MAX
    return False


def _default_ok(vt: str, value: Any) -> bool:
    """True when ``value`` has exactly the type that ``vt`` stands for."""
    if vt == "VT_TENSOR":
        return False
    if vt == "VT_LIST_LIST_INT":
        return type(value) is list and all(
            type(row) is list and all(_scalar_default_ok("VT_INT", v) for v in row)
            for row in value)
    if vt.startswith("VT_LIST_"):
        item_vt = "VT_" + vt[len("VT_LIST_"):]
        return type(value) is list and all(_scalar_default_ok(item_vt, v) for v in value)
    return _scalar_default_ok(vt, value)


# ---------------------------------------------------------------------------
# register_op
# ---------------------------------------------------------------------------

_PROTOS: Dict[str, OpProto] = {}
_BODIES: Dict[str, Any] = {}  # op_type -> body fingerprint of the registered function

_POSITIONAL = _sig.POSITIONAL


def _prefix(op_type: str) -> str:
    return f"register_op op_type '{op_type}' failed: "


def _check_op_type(op_type: Any, who: str) -> None:
    if not isinstance(op_type, str) or not op_type:
        raise TypeError(f"{who} op_type must be a non-empty str, "
                        f"actual {op_type!r} ({type(op_type).__name__})")


def _normalize_mutates(op_type: str, mutates_args: Any) -> Tuple[str, Tuple[Any, ...]]:
    """Check the *shape* of mutates_args; return (form, entries). TypeError on a bad shape."""
    p = _prefix(op_type)
    if mutates_args is None:
        return "names", ()
    if (isinstance(mutates_args, (str, bytes, bytearray))
            or not isinstance(mutates_args, collections.abc.Sequence)):
        raise TypeError(p + "mutates_args must be a list/tuple of input names or of "
                        f"(input_name, output_index) pairs, actual {type(mutates_args).__name__}")
    entries = tuple(mutates_args)
    forms = set()
    for entry in entries:
        if isinstance(entry, str):
            forms.add("names")
        elif (isinstance(entry, (tuple, list)) and len(entry) == 2
              and isinstance(entry[0], str)
              and isinstance(entry[1], int) and not isinstance(entry[1], bool)):
            forms.add("pairs")
        else:
            raise TypeError(p + "each mutates_args entry must be an input name (str) or an "
                            f"(input_name, output_index) pair, actual {entry!r}")
    if len(forms) > 1:
        raise TypeError(p + "mutates_args cannot mix input names and "
                        "(input_name, output_index) pairs")
    form = forms.pop() if forms else "names"
    if form == "pairs":
        entries = tuple((e[0], e[1]) for e in entries)
    return form, entries


def register_op(*, op_type: str, mutates_args: Sequence[Any] = ()):
    """Decorator registering a prototype / infer_meta function (API.md section 2).

    Args:
        op_type: non-empty ``str``, the operator type.
        mutates_args: outputs that alias inputs: a list/tuple of input names
            (output ``i`` aliases the ``i``-th name) or of ``(input_name,
            output_index)`` pairs; the two forms cannot be mixed.

    Returns:
        A decorator that parses the function's signature into an :class:`OpProto`,
        registers it and returns the function unchanged (registration does not
        call it).

    Raises:
        TypeError: bad ``op_type`` (raised here, before any function is seen) or a
            bad ``mutates_args`` shape (also raised here); when decorating: not a
            plain function, ``*args``/``**kwargs``, a missing or unsupported
            annotation, a bad default (messages prefixed
            ``"register_op op_type '<T>' failed:"``).
        ValueError: unknown input names / out-of-range or repeated output indices
            in ``mutates_args``; the same op_type registered by another function;
            the same function (module:qualname:op_type) re-registered with changed
            content.  Re-registering identical content is a no-op.
    """
    _check_op_type(op_type, "register_op")
    form, entries = _normalize_mutates(op_type, mutates_args)

    def decorator(func):
        proto, body = _build_proto(op_type, func, form, entries)
        _register(proto, body)
        return func

    return decorator


def _build_proto(op_type: str, func: Any, form: str, entries: Tuple[Any, ...]):
    p = _prefix(op_type)
    if not isinstance(func, types.FunctionType):
        raise TypeError(p + "register_op decorates a plain Python function, "
                        f"actual {type(func).__name__} {func!r}")
    if _sig.is_generator_or_coroutine_function(func):
        raise TypeError(p + f"{func.__qualname__} must be a plain function "
                        "(not a generator or coroutine function)")
    try:
        params, ret = _sig.signature(func)
    except (TypeError, ValueError) as exc:
        raise TypeError(p + f"cannot read the signature of {func.__qualname__}: {exc}") from exc
    globalns = function_globals(func)

    def resolve(ann: Any, what: str) -> Any:
        try:
            return resolve_annotation(ann, globalns)
        except AnnotationError as exc:
            raise TypeError(p + f"cannot resolve annotation {ann!r} of {what}: {exc}") from None

    inputs: List[IrInput] = []
    attrs: List[IrAttr] = []
    for param in params:
        if param.kind == _sig.VAR_POSITIONAL:
            raise TypeError(p + f"variadic parameter '*{param.name}' is not supported "
                            "(*args/**kwargs cannot describe an IR)")
        if param.kind == _sig.VAR_KEYWORD:
            raise TypeError(p + f"variadic parameter '**{param.name}' is not supported "
                            "(*args/**kwargs cannot describe an IR)")
        if param.annotation is _sig.EMPTY:
            role = "input" if param.kind in _POSITIONAL else "attr"
            raise TypeError(p + f"{role} parameter '{param.name}' is missing an annotation")
        if param.kind in _POSITIONAL:
            ann = resolve(param.annotation, f"input '{param.name}'")
            kind = tensor_kind(ann, TensorDesc)
            if kind is None:
                raise TypeError(p + f"unsupported annotation {annotation_repr(ann)} on input "
                                f"'{param.name}': expected TensorDesc, Optional[TensorDesc] "
                                "or List[TensorDesc]")
            if param.default is not _sig.EMPTY:
                if not (kind == "optional" and param.default is None):
                    raise TypeError(p + f"bad default {param.default!r} for input "
                                    f"'{param.name}': only an Optional[TensorDesc] input may "
                                    "have a default, and only None")
            inputs.append(IrInput(param.name, kind))
        else:  # keyword-only: an attribute
            ann = resolve(param.annotation, f"attr '{param.name}'")
            vt = attr_type_of(ann)
            if vt is None:
                raise TypeError(p + f"unsupported annotation {annotation_repr(ann)} on attr "
                                f"'{param.name}': expected one of int, float, bool, str, "
                                "DataType, Tensor, List[int], List[float], List[bool], "
                                "List[str], List[DataType], List[List[int]]")
            if param.default is _sig.EMPTY:
                attrs.append(IrAttr(param.name, vt, True, None))
                continue
            default = param.default
            if default is None:
                raise TypeError(p + f"bad default for attr '{param.name}': None defaults are "
                                "not supported (omit the default to make the attr required)")
            if vt == "VT_TENSOR":
                raise TypeError(p + f"bad default for attr '{param.name}': a Tensor attr "
                                "cannot have a default")
            if not _default_ok(vt, default):
                rng = " (int64 range)" if vt in ("VT_INT", "VT_LIST_INT", "VT_LIST_LIST_INT") else ""
                raise TypeError(p + f"bad default {default!r} "
                                f"({type(default).__name__}) for attr '{param.name}': "
                                f"expected exactly {ATTR_ANNOTATION_TEXT[vt]}{rng}")
            attrs.append(IrAttr(param.name, vt, False, _freeze(default)))

    # Outputs, from the return annotation.
    if ret is _sig.EMPTY:
        raise TypeError(p + "missing return annotation: expected None, TensorDesc, "
                        "List[TensorDesc] or a Tuple of TensorDesc / List[TensorDesc]")
    ret = resolve(ret, "the return value")
    out_kinds: List[str]
    if ret is _NONE_TYPE:
        return_form, out_kinds = "none", []
    elif ret is TensorDesc:
        return_form, out_kinds = "single", ["required"]
    elif _list_item(ret) is TensorDesc:
        return_form, out_kinds = "list", ["dynamic"]
    elif get_origin(ret) is tuple:
        args = get_args(ret)
        if not args or Ellipsis in args:
            raise TypeError(p + f"unsupported return annotation {annotation_repr(ret)}: a "
                            "Tuple must list at least one TensorDesc / List[TensorDesc] and "
                            "no '...' (use None for no outputs)")
        out_kinds = []
        for i, arg in enumerate(args):
            if arg is TensorDesc:
                out_kinds.append("required")
            elif _list_item(arg) is TensorDesc:
                out_kinds.append("dynamic")
            else:
                raise TypeError(p + f"unsupported return annotation {annotation_repr(ret)}: "
                                f"element {i} is {annotation_repr(arg)}, expected TensorDesc "
                                "or List[TensorDesc]")
        return_form = "tuple"
    else:
        raise TypeError(p + f"unsupported return annotation {annotation_repr(ret)}: expected "
                        "None, TensorDesc, List[TensorDesc] or a Tuple of TensorDesc / "
                        "List[TensorDesc]")

    mutates = _resolve_mutates(op_type, form, entries, inputs, out_kinds)
    outputs = _name_outputs(out_kinds, mutates, inputs, attrs)
    proto = OpProto(
        op_type=op_type,
        func=func,
        module_name=func.__module__ if isinstance(func.__module__, str) else str(func.__module__),
        qualname=func.__qualname__,
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        attrs=tuple(attrs),
        mutates=mutates,
        return_form=return_form,
    )
    return proto, _body_fingerprint(func.__code__)


def _resolve_mutates(op_type: str, form: str, entries: Tuple[Any, ...],
                     inputs: List[IrInput], out_kinds: List[str]) -> Tuple[Tuple[str, int], ...]:
    """Turn the mutates_args entries into (input_name, output_index) pairs. ValueError on bad names/indices."""
    p = _prefix(op_type)
    n_out = len(out_kinds)
    if form == "names":
        if len(entries) > n_out:
            raise ValueError(p + f"mutates_args names {len(entries)} aliased outputs but the "
                             f"prototype has {n_out} output(s)")
        pairs = [(name, i) for i, name in enumerate(entries)]
    else:
        pairs = list(entries)
    by_name = {i.name: i for i in inputs}
    seen_names, seen_indices = set(), set()
    for name, index in pairs:
        if name not in by_name:
            raise ValueError(p + f"mutates_args names unknown input '{name}' (inputs: "
                             f"{', '.join(by_name) or 'none'})")
        if index < 0 or index >= n_out:
            raise ValueError(p + f"mutates_args output index {index} for input '{name}' is out "
                             f"of range (the prototype has {n_out} output(s))")
        if name in seen_names:
            raise ValueError(p + f"mutates_args names input '{name}' more than once")
        if index in seen_indices:
            raise ValueError(p + f"mutates_args names output index {index} more than once")
        seen_names.add(name)
        seen_indices.add(index)
        in_kind, out_kind = by_name[name].kind, out_kinds[index]
        if in_kind == "optional" or in_kind != out_kind:
            raise ValueError(p + f"output {index} ({out_kind}) cannot alias {in_kind} input "
                             f"'{name}': an output may only alias an input of the same kind "
                             "(required or dynamic)")
    return tuple(sorted(pairs, key=lambda pair: pair[1]))


def _name_outputs(out_kinds: List[str], mutates: Tuple[Tuple[str, int], ...],
                  inputs: List[IrInput], attrs: List[IrAttr]) -> List[IrOutput]:
    alias = {index: name for name, index in mutates}
    taken = {i.name for i in inputs} | {a.name for a in attrs} | set(alias.values())
    names: List[str] = []
    for index in range(len(out_kinds)):
        if index in alias:
            names.append(alias[index])
            continue
        base = f"output{index}"
        candidate, suffix = base, 0
        while candidate in taken:
            suffix += 1
            candidate = f"{base}_{suffix}"
        taken.add(candidate)
        names.append(candidate)
    return [IrOutput(name, kind) for name, kind in zip(names, out_kinds)]


def _body_fingerprint(code: types.CodeType) -> Any:
    """Byte code, names and constants of a function (line numbers ignored)."""
    consts = tuple(_body_fingerprint(c) if isinstance(c, types.CodeType) else (type(c), c)
                   for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, code.co_freevars,
            code.co_cellvars, code.co_flags, code.co_argcount,
            code.co_kwonlyargcount, code.co_posonlyargcount, consts)


def _register(proto: OpProto, body: Any) -> None:
    p = _prefix(proto.op_type)
    existing = _PROTOS.get(proto.op_type)
    if existing is None:
        _PROTOS[proto.op_type] = proto
        _BODIES[proto.op_type] = body
        return
    if existing.proto_key != proto.proto_key:
        raise ValueError(p + f"op_type '{proto.op_type}' is already registered by "
                         f"{existing.module_name}:{existing.qualname}; it cannot be "
                         f"registered again by {proto.module_name}:{proto.qualname}")
    if existing.to_dict() != proto.to_dict() or _BODIES[proto.op_type] != body:
        raise ValueError(p + f"{proto.proto_key} is already registered with different "
                         "content (signature, mutates_args or body changed)")
    # Same function, same content: a no-op (the first record is kept).


def _unregister_op_proto(op_type: str) -> None:
    """Internal (used by ``_host``): forget one prototype if it is registered."""
    _PROTOS.pop(op_type, None)
    _BODIES.pop(op_type, None)


# ---------------------------------------------------------------------------
# Registry queries
# ---------------------------------------------------------------------------

def get_registered_op_protos() -> List[OpProto]:
    """All registered prototypes of this interpreter, sorted by op_type (API.md section 1)."""
    return [_PROTOS[k] for k in sorted(_PROTOS)]


def get_registered_op_proto_by_op_type(op_type: str) -> Optional[OpProto]:
    """The prototype registered for ``op_type``, or None when absent.

    Raises:
        TypeError: ``op_type`` is not a str.
    """
    if not isinstance(op_type, str):
        raise TypeError(f"op_type must be a str, actual {type(op_type).__name__}")
    return _PROTOS.get(op_type)


def get_registered_op_proto_dicts() -> List[Dict[str, Any]]:
    """``to_dict()`` of every registered prototype, sorted by op_type."""
    return [proto.to_dict() for proto in get_registered_op_protos()]


def get_registered_op_proto_dict_by_op_type(op_type: str) -> Optional[Dict[str, Any]]:
    """``to_dict()`` of the prototype registered for ``op_type``, or None when absent."""
    proto = get_registered_op_proto_by_op_type(op_type)
    return None if proto is None else proto.to_dict()


def clear_registered_op_protos() -> None:
    """Forget every registered prototype of this interpreter."""
    _PROTOS.clear()
    _BODIES.clear()


# ---------------------------------------------------------------------------
# infer_meta
# ---------------------------------------------------------------------------

def call_infer_meta(proto: OpProto, inputs: Sequence[Any], attrs: Mapping[str, Any],
                    dynamic_output_counts: Optional[Mapping[Union[str, int], int]] = None
                    ) -> List[Tuple[int, Any]]:
    """Call a prototype as infer_meta and check its result (API.md section 2, last rule).

    Args:
        proto: the :class:`OpProto` to call.
        inputs: one entry per IR input, in IR order: a ``TensorDesc`` for a required
            input, ``TensorDesc`` or None (absent) for an optional one, a list of
            ``TensorDesc`` for a dynamic one.  Passed positionally.
        attrs: attribute values by IR name, passed as keywords.
        dynamic_output_counts: optional expected instance counts of dynamic outputs,
            keyed by output IR index or output name (from the graph node).

    Returns:
        The outputs flattened in order: a list of ``(output_ir_index, TensorDesc)``
        (a dynamic output contributes one pair per instance).

    Raises:
        TypeError: ``inputs`` does not match the IR's input count; the result has the
            wrong type, the wrong number of outputs, or a dynamic output has the
            wrong number of instances (messages name op_type and the output).
        Any exception raised by the prototype function itself, unchanged.
    """
    op = proto.op_type
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, collections.abc.Sequence):
        raise TypeError(f"infer_meta of op_type '{op}': inputs must be a sequence, "
                        f"actual {type(inputs).__name__}")
    if len(inputs) != len(proto.inputs):
        raise TypeError(f"infer_meta of op_type '{op}': expected {len(proto.inputs)} inputs, "
                        f"actual {len(inputs)}")
    counts: Dict[int, int] = {}
    if dynamic_output_counts:
        names = {o.name: i for i, o in enumerate(proto.outputs)}
        for key, count in dynamic_output_counts.items():
            index = names.get(key) if isinstance(key, str) else key
            if not isinstance(index, int) or not 0 <= index < len(proto.outputs):
                raise ValueError(f"infer_meta of op_type '{op}': unknown output {key!r} "
                                 "in dynamic_output_counts")
            counts[index] = count

    result = proto.func(*inputs, **dict(attrs))

    def fail(detail: str) -> TypeError:
        return TypeError(f"infer_meta of op_type '{op}' returned a bad result: {detail}")

    def one(index: int, value: Any) -> List[Tuple[int, Any]]:
        out = proto.outputs[index]
        if out.kind == "required":
            if not isinstance(value, TensorDesc):
                raise fail(f"output '{out.name}' (index {index}): expected TensorDesc, "
                           f"actual {type(value).__name__}")
            return [(index, value)]
        if not isinstance(value, list):
            raise fail(f"dynamic output '{out.name}' (index {index}): expected a list of "
                       f"TensorDesc, actual {type(value).__name__}")
        for n, item in enumerate(value):
            if not isinstance(item, TensorDesc):
                raise fail(f"dynamic output '{out.name}' (index {index}) instance {n}: "
                           f"expected TensorDesc, actual {type(item).__name__}")
        if index in counts and len(value) != counts[index]:
            raise fail(f"dynamic output '{out.name}' (index {index}): expected "
                       f"{counts[index]} instances, actual {len(value)}")
        return [(index, item) for item in value]

    form = proto.return_form
    if form == "none":
        if result is not None:
            raise fail(f"expected None (no outputs), actual {type(result).__name__}")
        return []
    if form in ("single", "list"):
        return one(0, result)
    if not isinstance(result, tuple):
        raise fail(f"expected a tuple of {len(proto.outputs)} outputs, "
                   f"actual {type(result).__name__}")
    if len(result) != len(proto.outputs):
        raise fail(f"expected {len(proto.outputs)} outputs "
                   f"({', '.join(o.name for o in proto.outputs)}), actual {len(result)}")
    flat: List[Tuple[int, Any]] = []
    for index, value in enumerate(result):
        flat.extend(one(index, value))
    return flat
