"""Operator prototypes: ``register_op`` and the per-interpreter prototype registry.

GE's ``register_op(*, op_type, mutates_args=())`` and its records
(share/docs/plugin-authors.md, "The prototype"). A prototype is a plain Python
function that is at the same time the operator's ``infer_meta``; its signature
*is* the canonical IR of the operator:

* positional parameters are the inputs (``TensorDesc`` = required,
  ``Optional[TensorDesc]`` = optional, ``List[TensorDesc]`` = dynamic), with
  no defaults;
* keyword-only parameters are the attributes, typed by annotation (a default
  must have exactly the annotated type);
* the return annotation gives the outputs (``None``, ``TensorDesc``,
  ``List[TensorDesc]`` or a ``Tuple`` of the latter two).

The registry holds GE's public records (:class:`OpProtoDescriptor` with
:class:`OpInput` / :class:`OpAttr` / :class:`OpOutput`), keyed by descriptor_key
and by op_type. The host's canonical IR (:class:`OpProto` with :class:`IrInput`
/ :class:`IrOutput` / :class:`IrAttr`) is derived from a descriptor by
:func:`canonical_ir`, never stored beside it. Every interpreter (the host runs
each plugin in its own sub-interpreter) has its own copy of the ``ge`` package
and therefore its own registry.

Rules (GE's unless marked ours; also in the docs):

* ``mutates_args`` is checked when the decorator is applied: its shape
  (TypeError) and its names and indices (ValueError); ``None`` means no aliasing.
  An aliasing output takes the input's name.
* Ours: an output may only alias an input of the same kind (required output <->
  required input, dynamic output <-> dynamic input), so an optional input cannot
  be aliased; an input can be aliased by at most one output.
* Unnamed outputs are called ``output<i>`` where ``i`` is the output's position;
  on a clash with an input name or an earlier output name, ``_1``, ``_2``, ...
  is appended.
* Re-registering a descriptor_key with the same definition (inputs, attrs with
  their defaults, outputs; NaN equal to NaN) is a no-op that keeps the first
  record; the function body is not compared.
* List defaults are frozen into tuples in :class:`OpAttr` (the record is
  frozen); ``to_bridge_dict()`` turns them back into lists.
* Annotations written as strings (``from __future__ import annotations``) are
  resolved with :func:`typing.get_type_hints` against the function's globals.

This module does not import :mod:`typing` (about 1.4 MiB per sub-interpreter,
with ``re``; share/docs/host-design.md, "Targets").  A ``typing`` construct
(``Optional[X]``, ``List[X]``, ``ForwardRef``, ...) can only exist once some code
has imported ``typing``, so the annotation helpers look it up in ``sys.modules``
and use its ``get_origin`` / ``get_args`` / ``Union`` when it is there; builtin
generics (``list[X]``, ``tuple[...]``, a ``types.GenericAlias``) and PEP 604
unions (``X | None``, a ``types.UnionType``) are recognised with :mod:`types`
alone.  ``typing`` is imported lazily only to evaluate string annotations
(:func:`typing.get_type_hints`).
"""

from __future__ import annotations  # annotations below are text: no typing import

import _collections_abc  # what collections.abc re-exports; the collections package is not loaded
import enum
import _operator  # the C module behind operator (no Python module to load)
import sys
import types

from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc

from . import _sig
from ._record import FrozenRecord

__all__ = [
    "InputType",
    "OutputType",
    "OpInput",
    "OpAttr",
    "OpOutput",
    "OpProtoDescriptor",
    "canonical_ir",
    "get_registered_op_proto_by_descriptor_key",
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

    ``type`` is one of the ``VT_*`` strings of share/docs/plugin-authors.md, "The prototype"; ``required`` is
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


# ---------------------------------------------------------------------------
# Public records (GE's ``ge.custom_op.proto`` names and fields)
# ---------------------------------------------------------------------------

class InputType(enum.IntEnum):
    """Kind of an IR input: GE's numbering (REQUIRED 0, OPTIONAL 1, DYNAMIC 2)."""
    REQUIRED = 0
    OPTIONAL = 1
    DYNAMIC = 2


class OutputType(enum.IntEnum):
    """Kind of an IR output: GE's numbering (REQUIRED 0, DYNAMIC 1)."""
    REQUIRED = 0
    DYNAMIC = 1


_INPUT_KIND_NAMES = {InputType.REQUIRED: "required", InputType.OPTIONAL: "optional",
                     InputType.DYNAMIC: "dynamic"}
_OUTPUT_KIND_NAMES = {OutputType.REQUIRED: "required", OutputType.DYNAMIC: "dynamic"}


class OpInput(FrozenRecord):
    """One input of a prototype: ``name``, ``index`` (IR position), ``kind`` (:class:`InputType`)."""
    _fields = ("name", "index", "kind")
    name: str
    index: int
    kind: InputType

    def __init__(self, name: str, index: int, kind: InputType) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "kind", kind)


class OpOutput(FrozenRecord):
    """One output of a prototype: ``name``, ``index`` (IR position), ``kind`` (:class:`OutputType`)."""
    _fields = ("name", "index", "kind")
    name: str
    index: int
    kind: OutputType

    def __init__(self, name: str, index: int, kind: OutputType) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "kind", kind)


class OpAttr(FrozenRecord):
    """One attribute of a prototype.

    ``type`` is a ``VT_*`` string (share/docs/plugin-authors.md, "The prototype");
    ``is_required`` is True when the prototype gives no default (``default`` is
    then None). A list default is frozen into tuples (nested for
    VT_LIST_LIST_INT) when the record is made, so the record never shares a
    mutable list with its caller; ``to_bridge_dict()`` turns it back into lists.
    """
    _fields = ("name", "index", "type", "is_required", "default")
    name: str
    index: int
    type: str
    is_required: bool
    default: Any = None

    def __init__(self, name: str, index: int, type: str, is_required: bool,
                 default: Any = None) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "is_required", is_required)
        object.__setattr__(self, "default", _freeze(default))


class OpProtoDescriptor(FrozenRecord):
    """The registered prototype of one op_type (GE's ``OpProtoDescriptor``).

    Fields: ``descriptor_key`` ("module:func_name:op_type"), ``op_type``,
    ``module_name``, ``func_name`` (the function's ``__qualname__``),
    ``inputs`` / ``attrs`` / ``outputs`` (tuples of :class:`OpInput`,
    :class:`OpAttr`, :class:`OpOutput`; any sequence given is copied into a
    tuple) and ``infer_func`` (the prototype, which is also the op's
    infer_meta). ``infer_func`` takes no part in ``==``, ``hash`` or ``repr``.
    Set on the decorated function as ``__ge_op_proto_descriptor__``.
    """
    _fields = ("descriptor_key", "op_type", "module_name", "func_name", "inputs", "attrs",
               "outputs", "infer_func")
    descriptor_key: str
    op_type: str
    module_name: str
    func_name: str
    inputs: Tuple[OpInput, ...]
    attrs: Tuple[OpAttr, ...]
    outputs: Tuple[OpOutput, ...]
    infer_func: Any

    def __init__(self, descriptor_key: str, op_type: str, module_name: str, func_name: str,
                 inputs: Sequence[OpInput], attrs: Sequence[OpAttr], outputs: Sequence[OpOutput],
                 infer_func: Any) -> None:
        set_ = object.__setattr__
        set_(self, "descriptor_key", descriptor_key)
        set_(self, "op_type", op_type)
        set_(self, "module_name", module_name)
        set_(self, "func_name", func_name)
        set_(self, "inputs", tuple(inputs))
        set_(self, "attrs", tuple(attrs))
        set_(self, "outputs", tuple(outputs))
        set_(self, "infer_func", infer_func)

    def _astuple(self) -> Tuple[Any, ...]:  # infer_func is not compared
        return (self.descriptor_key, self.op_type, self.module_name, self.func_name,
                self.inputs, self.attrs, self.outputs)

    def __repr__(self) -> str:
        return (f"OpProtoDescriptor(descriptor_key={self.descriptor_key!r}, "
                f"op_type={self.op_type!r}, module_name={self.module_name!r}, "
                f"func_name={self.func_name!r}, inputs={self.inputs!r}, attrs={self.attrs!r}, "
                f"outputs={self.outputs!r})")

    def to_bridge_dict(self) -> Dict[str, Any]:
        """Plain data, a new copy each call: ``descriptor_key``, ``op_type``,
        ``module_name``, ``func_name``, ``inputs`` / ``outputs`` (``{"name",
        "kind": int}``) and ``attrs`` (``{"name", "type", "is_required",
        "default"}``, list defaults as lists)."""
        return {
            "descriptor_key": self.descriptor_key,
            "op_type": self.op_type,
            "module_name": self.module_name,
            "func_name": self.func_name,
            "inputs": [{"name": i.name, "kind": int(i.kind)} for i in self.inputs],
            "attrs": [{"name": a.name, "type": a.type, "is_required": a.is_required,
                       "default": _thaw(a.default)} for a in self.attrs],
            "outputs": [{"name": o.name, "kind": int(o.kind)} for o in self.outputs],
        }


def return_form(outputs: "tuple[IrOutput, ...]") -> str:
    """What infer_meta returns for these IR outputs: "none" (no output),
    "single" (one required output), "list" (one dynamic output) or "tuple"."""
    if not outputs:
        return "none"
    if len(outputs) == 1:
        return "single" if outputs[0].kind == "required" else "list"
    return "tuple"


def canonical_ir(proto: Any) -> Optional[OpProto]:
    """The host's canonical IR (:class:`OpProto`) of a prototype record.

    Accepts an :class:`OpProto` (returned as it is), an
    :class:`OpProtoDescriptor` (converted once; the result is cached on the
    record) or None (returned as None). Aliasing is read from the outputs: an
    output named like an input aliases it (``mutates_args`` names outputs that
    way). The return form follows the outputs: none, one required
    (``TensorDesc``), one dynamic (a list), several (a tuple or list).

    Raises:
        TypeError: anything else.
    """
    if proto is None or isinstance(proto, OpProto):
        return proto
    if not isinstance(proto, OpProtoDescriptor):
        raise TypeError(f"expected an OpProtoDescriptor, actual {type(proto).__name__}")
    cached = proto.__dict__.get("_canonical_ir")
    if cached is not None:
        return cached
    inputs = tuple(IrInput(i.name, _INPUT_KIND_NAMES[InputType(i.kind)]) for i in proto.inputs)
    outputs = tuple(IrOutput(o.name, _OUTPUT_KIND_NAMES[OutputType(o.kind)]) for o in proto.outputs)
    attrs = tuple(IrAttr(a.name, a.type, a.is_required, a.default) for a in proto.attrs)
    input_names = {i.name for i in inputs}
    mutates = tuple((o.name, index) for index, o in enumerate(outputs) if o.name in input_names)
    ir = OpProto(proto.op_type, proto.infer_func, proto.module_name, proto.func_name,
                 inputs, outputs, attrs, mutates, return_form(outputs))
    object.__setattr__(proto, "_canonical_ir", ir)
    return ir


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
        if (annotation.__origin__ is _collections_abc.Callable
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
    """Map an attribute annotation to its ``VT_*`` type (share/docs/plugin-authors.md, "The prototype"), or None."""
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


def _as_index(value: Any) -> Optional[int]:
    """``value`` as an int the way Python's builtins take one (``operator.index``:
    an int, or a numpy integer such as ``np.int64(3)``), else None. A bool,
    Python's or numpy's, is never an int here; nor is a float."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return None
    try:
        return _operator.index(value)
    except TypeError:
        return None


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

# The registry of this interpreter: descriptor_key -> descriptor and op_type ->
# descriptor (every interpreter has its own copy of the ge package).
_BY_KEY: Dict[str, OpProtoDescriptor] = {}
_BY_TYPE: Dict[str, OpProtoDescriptor] = {}

_POSITIONAL = _sig.POSITIONAL


def _prefix(op_type: str) -> str:
    return f"register_op op_type '{op_type}' failed: "


def _check_op_type(op_type: Any) -> None:
    if not isinstance(op_type, str) or not op_type:
        raise TypeError(f"register_op op_type must be a non-empty string, got {op_type!r}")


def register_op(*, op_type: str, mutates_args: Sequence[Any] = ()):
    """Decorator registering a prototype / infer_meta function (GE's ``register_op``).

    The function's signature is the operator's canonical IR
    (share/docs/plugin-authors.md, "The prototype"): positional parameters are inputs
    (``TensorDesc`` required, ``Optional[TensorDesc]`` optional,
    ``List[TensorDesc]`` dynamic; no defaults), keyword-only parameters are
    attributes typed by annotation (a default must have exactly that type),
    the return annotation gives the outputs. Registration does not call it.

    Args:
        op_type: non-empty ``str``, the operator type.
        mutates_args: outputs that alias inputs: a list/tuple of input names
            (output ``i`` aliases the ``i``-th name) or of ``(input_name,
            output_index)`` pairs; the two forms cannot be mixed. An aliasing
            output takes the input's name; other outputs are ``output<i>``
            (``_1``, ``_2``... appended on a clash with an input name).

    Returns:
        A decorator that builds an :class:`OpProtoDescriptor`, registers it, sets
        it on the function as ``__ge_op_proto_descriptor__`` and returns the
        function itself.

    Raises:
        TypeError: bad ``op_type`` ("register_op op_type must be a non-empty
            string, got <repr>"), raised before any function is seen. When
            decorating, every error is prefixed "register_op op_type '<T>'
            failed:": not a Python function, ``*args``/``**kwargs``, a missing or
            unsupported annotation, a default on an input, a bad attr default,
            a bad ``mutates_args`` shape.
        ValueError: unknown, repeated or out-of-range ``mutates_args`` entries;
            the op_type already registered by another function ("op type '<T>'
            already registered"); the same function (same descriptor_key)
            registered again with another definition ("descriptor content
            changed"). The same definition again is a no-op: the first record
            is kept and set on the new function too (NaN defaults compare equal).
    """
    _check_op_type(op_type)

    def decorator(func):
        try:
            descriptor = _register(_build_descriptor(op_type, func, mutates_args))
        except (TypeError, ValueError) as exc:
            raise type(exc)(_prefix(op_type) + str(exc)) from exc
        func.__ge_op_proto_descriptor__ = descriptor
        return func

    return decorator


def _build_descriptor(op_type: str, func: Any, mutates_args: Any) -> OpProtoDescriptor:
    if not isinstance(func, types.FunctionType):
        raise TypeError(f"register_op expects a Python function, got {type(func).__name__}")
    if _sig.is_generator_or_coroutine_function(func):
        raise TypeError(f"register_op expects a Python function, got the generator or coroutine "
                        f"function {func.__qualname__}")
    try:
        params, ret = _sig.signature(func)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"cannot read the signature of {func.__qualname__}: {exc}") from exc
    globalns = function_globals(func)

    def resolve(ann: Any, what: str) -> Any:
        try:
            return resolve_annotation(ann, globalns)
        except AnnotationError as exc:
            raise TypeError(f"failed to resolve annotations for '{func.__qualname__}': "
                            f"{what}: {exc}") from None

    inputs: List[OpInput] = []
    attrs: List[OpAttr] = []
    for param in params:
        if param.kind in (_sig.VAR_POSITIONAL, _sig.VAR_KEYWORD):
            raise TypeError(f"register_op does not support variadic parameter '{param.name}'")
        if param.kind in _POSITIONAL:
            if param.annotation is _sig.EMPTY:
                raise TypeError(f"input '{param.name}' must have a type annotation")
            if param.default is not _sig.EMPTY:
                raise TypeError(f"input '{param.name}' must not have a default value")
            ann = resolve(param.annotation, f"input '{param.name}'")
            kind = tensor_kind(ann, TensorDesc)
            if kind is None:
                raise TypeError(f"unsupported input annotation for '{param.name}': "
                                f"{annotation_repr(ann)} (expected TensorDesc, "
                                "Optional[TensorDesc] or List[TensorDesc])")
            inputs.append(OpInput(param.name, len(inputs),
                                  InputType[kind.upper()]))
            continue
        # keyword-only: an attribute
        if param.annotation is _sig.EMPTY:
            raise TypeError(f"attr '{param.name}' must have a type annotation")
        ann = resolve(param.annotation, f"attr '{param.name}'")
        if param.default is None:  # Optional[X] = None names the attr type X
            inner = _is_union_with_none(ann)
            if inner is not None:
                ann = inner
        vt = attr_type_of(ann)
        if vt is None:
            raise TypeError(f"unsupported attr annotation for '{param.name}': "
                            f"{annotation_repr(ann)} (expected int, float, bool, str, DataType, "
                            "Tensor, List[int], List[float], List[bool], List[str], "
                            "List[DataType] or List[List[int]])")
        if param.default is _sig.EMPTY:
            attrs.append(OpAttr(param.name, len(attrs), vt, True, None))
            continue
        if vt == "VT_TENSOR":
            raise TypeError(f"Tensor attr '{param.name}' does not support a default value")
        scalar_type = {"VT_INT": int, "VT_FLOAT": float, "VT_BOOL": bool, "VT_STRING": str}.get(vt)
        if scalar_type is not None and type(param.default) is not scalar_type:
            # GE's wording: a default has exactly the annotated type (np.int64(1) is not an int here).
            raise TypeError(f"default value for attr '{param.name}' must be {scalar_type.__name__}, "
                            f"got {type(param.default).__name__}")
        if not _default_ok(vt, param.default):
            rng = " in the int64 range" if vt in ("VT_INT", "VT_LIST_INT", "VT_LIST_LIST_INT") else ""
            raise TypeError(f"default value for attr '{param.name}' must be "
                            f"{ATTR_ANNOTATION_TEXT[vt]}{rng}, got {param.default!r} "
                            f"({type(param.default).__name__})")
        attrs.append(OpAttr(param.name, len(attrs), vt, False, param.default))

    if ret is _sig.EMPTY:
        raise TypeError("register_op return type annotation is required (None, TensorDesc, "
                        "List[TensorDesc] or a Tuple of those)")
    kinds = _output_kinds(resolve(ret, "the return annotation"))
    outputs = _build_outputs(kinds, inputs, mutates_args)
    module_name = func.__module__ if isinstance(func.__module__, str) else str(func.__module__)
    func_name = func.__qualname__
    return OpProtoDescriptor(
        descriptor_key=f"{module_name}:{func_name}:{op_type}", op_type=op_type,
        module_name=module_name, func_name=func_name, inputs=inputs, attrs=attrs,
        outputs=outputs, infer_func=func)


def _output_kinds(ret: Any) -> List[OutputType]:
    """The output kinds a resolved return annotation declares (TypeError if unsupported)."""
    if ret is _NONE_TYPE:
        return []
    if ret is TensorDesc:
        return [OutputType.REQUIRED]
    if _list_item(ret) is TensorDesc:
        return [OutputType.DYNAMIC]
    if get_origin(ret) is tuple:
        args = get_args(ret)
        if not args or Ellipsis in args:
            raise TypeError(f"unsupported return annotation: {annotation_repr(ret)} (a Tuple "
                            "lists each output; use None for no outputs)")
        kinds = []
        for index, arg in enumerate(args):
            if arg is TensorDesc:
                kinds.append(OutputType.REQUIRED)
            elif _list_item(arg) is TensorDesc:
                kinds.append(OutputType.DYNAMIC)
            else:
                raise TypeError(f"unsupported return annotation at output index {index}: "
                                f"{annotation_repr(arg)} (expected TensorDesc or List[TensorDesc])")
        return kinds
    raise TypeError(f"unsupported return annotation: {annotation_repr(ret)} (expected None, "
                    "TensorDesc, List[TensorDesc] or a Tuple of TensorDesc / List[TensorDesc])")


def _mutation_bindings(mutates_args: Any, inputs: List[OpInput],
                       kinds: List[OutputType]) -> Dict[int, str]:
    """``{output_index: input_name}`` from mutates_args (TypeError on its shape, ValueError on values)."""
    if mutates_args is None:
        return {}
    if isinstance(mutates_args, str) or not isinstance(mutates_args, (list, tuple)):
        raise TypeError("mutates_args must be a list or tuple of input names or of "
                        f"(input_name, output_index) pairs, got {type(mutates_args).__name__}")
    if not mutates_args:
        return {}
    named = [isinstance(item, str) for item in mutates_args]
    if any(named) and not all(named):
        raise TypeError("mutates_args sequential and explicit forms cannot be mixed "
                        "(input names and (input_name, output_index) pairs)")
    n_out = len(kinds)
    bindings: Dict[int, str] = {}
    if all(named):
        if len(mutates_args) > n_out:
            raise ValueError(f"mutates_args has more entries ({len(mutates_args)}) than outputs "
                             f"({n_out})")
        bindings = dict(enumerate(mutates_args))
    else:
        for item in mutates_args:
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise TypeError("mutates_args explicit entries must be (input_name, output_index), "
                                f"got {item!r}")
            name, index = item
            if not isinstance(name, str) or type(index) is not int:
                raise TypeError(f"mutates_args explicit entries must be (str, int), got {item!r}")
            if not 0 <= index < n_out:
                raise ValueError(f"mutates_args output index out of range: {index} (the "
                                 f"prototype has {n_out} output(s))")
            if index in bindings:
                raise ValueError(f"mutates_args output index is duplicated: {index}")
            bindings[index] = name
    by_name = {i.name: i for i in inputs}
    seen = set()
    for index, name in sorted(bindings.items()):
        if name not in by_name:
            raise ValueError(f"mutates_args input does not exist: '{name}' (inputs: "
                             f"{', '.join(by_name) or 'none'})")
        if name in seen:
            raise ValueError(f"mutates_args input is duplicated: '{name}'")
        seen.add(name)
        # Ours, beyond GE: an output can only share the memory of an input of
        # the same arity (a required input may be absent-free, a dynamic one a list).
        in_kind = _INPUT_KIND_NAMES[by_name[name].kind]
        out_kind = _OUTPUT_KIND_NAMES[kinds[index]]
        if in_kind != out_kind:
            raise ValueError(f"mutates_args output {index} ({out_kind}) cannot alias {in_kind} "
                             f"input '{name}': an output may only alias an input of the same kind "
                             "(required or dynamic)")
    return bindings


def _build_outputs(kinds: List[OutputType], inputs: List[OpInput],
                   mutates_args: Any) -> List[OpOutput]:
    bindings = _mutation_bindings(mutates_args, inputs, kinds)
    taken = {i.name for i in inputs}
    outputs: List[OpOutput] = []
    for index, kind in enumerate(kinds):
        name = bindings.get(index)
        if name is None:
            base = name = f"output{index}"
            suffix = 0
            while name in taken:
                suffix += 1
                name = f"{base}_{suffix}"
        taken.add(name)
        outputs.append(OpOutput(name, index, kind))
    return outputs


def _same_value(a: Any, b: Any) -> bool:
    """Definition equality: same types, tuples item by item, NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if type(a) is float and a != a and b != b:
        return True
    return a == b


def _definition(d: OpProtoDescriptor) -> Tuple[Any, ...]:
    return (d.op_type,
            tuple((i.name, i.index, int(i.kind)) for i in d.inputs),
            tuple((a.name, a.index, a.type, a.is_required, a.default) for a in d.attrs),
            tuple((o.name, o.index, int(o.kind)) for o in d.outputs))


def _source(label: str, d: OpProtoDescriptor) -> str:
    return (f"{label} source: module_name.func_name '{d.module_name}.{d.func_name}', "
            f"descriptor_key '{d.descriptor_key}'")


def _register(descriptor: OpProtoDescriptor) -> OpProtoDescriptor:
    """Add ``descriptor`` to the registry; return the registered record (the first one on a no-op)."""
    existing = _BY_KEY.get(descriptor.descriptor_key)
    if existing is not None:
        if not _same_value(_definition(existing), _definition(descriptor)):
            raise ValueError(f"python op proto descriptor content changed for descriptor_key "
                             f"'{descriptor.descriptor_key}'; {_source('existing', existing)}; "
                             f"{_source('current', descriptor)}")
        return existing
    existing = _BY_TYPE.get(descriptor.op_type)
    if existing is not None:
        raise ValueError(f"python op proto op type '{descriptor.op_type}' already registered by "
                         f"'{existing.descriptor_key}'; {_source('existing', existing)}; "
                         f"{_source('current', descriptor)}")
    _BY_KEY[descriptor.descriptor_key] = descriptor
    _BY_TYPE[descriptor.op_type] = descriptor
    return descriptor


def _unregister_op_proto(op_type: str) -> None:
    """Internal (used by ``_host``): forget one prototype if it is registered."""
    descriptor = _BY_TYPE.pop(op_type, None)
    if descriptor is not None:
        _BY_KEY.pop(descriptor.descriptor_key, None)


# ---------------------------------------------------------------------------
# Registry queries
# ---------------------------------------------------------------------------

def get_registered_op_protos() -> List[OpProtoDescriptor]:
    """All registered prototypes of this interpreter, sorted by op_type.

    Returns a new list; the records are frozen. Not thread-safe against a
    concurrent registration (plugins register while they are imported).
    """
    return [_BY_TYPE[k] for k in sorted(_BY_TYPE)]


def get_registered_op_proto_by_op_type(op_type: str) -> Optional[OpProtoDescriptor]:
    """The prototype registered for ``op_type``, or None when absent.

    Raises:
        TypeError: ``op_type`` is not a str.
    """
    if not isinstance(op_type, str):
        raise TypeError(f"op_type must be a str, got {type(op_type).__name__}")
    return _BY_TYPE.get(op_type)


def get_registered_op_proto_by_descriptor_key(descriptor_key: str) -> Optional[OpProtoDescriptor]:
    """The prototype registered under ``descriptor_key`` ("module:func_name:op_type"), or None.

    Raises:
        TypeError: ``descriptor_key`` is not a str.
    """
    if not isinstance(descriptor_key, str):
        raise TypeError(f"descriptor_key must be a str, got {type(descriptor_key).__name__}")
    return _BY_KEY.get(descriptor_key)


def get_registered_op_proto_dicts() -> List[Dict[str, Any]]:
    """``to_bridge_dict()`` of every registered prototype, sorted by op_type (new copies)."""
    return [d.to_bridge_dict() for d in get_registered_op_protos()]


def get_registered_op_proto_dict_by_op_type(op_type: str) -> Optional[Dict[str, Any]]:
    """``to_bridge_dict()`` of the prototype registered for ``op_type``, or None when absent."""
    proto = get_registered_op_proto_by_op_type(op_type)
    return None if proto is None else proto.to_bridge_dict()


def clear_registered_op_protos() -> None:
    """Forget every registered prototype of this interpreter."""
    _BY_KEY.clear()
    _BY_TYPE.clear()


# ---------------------------------------------------------------------------
# infer_meta
# ---------------------------------------------------------------------------

def call_infer_meta(proto: Any, inputs: Sequence[Any], attrs: Mapping[str, Any],
                    dynamic_output_counts: Optional[Mapping[Union[str, int], int]] = None
                    ) -> List[Tuple[int, Any]]:
    """Call a prototype as infer_meta and check its result.

    Args:
        proto: the prototype: an :class:`OpProtoDescriptor` or the host's
            :class:`OpProto` (see :func:`canonical_ir`).
        inputs: one entry per IR input, in IR order: a ``TensorDesc`` for a required
            input, ``TensorDesc`` or None (absent) for an optional one, a list of
            ``TensorDesc`` for a dynamic one.  Passed positionally.
        attrs: attribute values by IR name, passed as keywords.
        dynamic_output_counts: optional expected instance counts of dynamic outputs,
            keyed by output IR index or output name (from the graph node).

    The result follows GE's rules: no outputs -> None; one required output ->
    a ``TensorDesc``; one dynamic output -> a list or tuple of ``TensorDesc``;
    several outputs -> a list or tuple with one entry per output (a list or
    tuple for each dynamic one).

    Returns:
        The outputs flattened in order: a list of ``(output_ir_index, TensorDesc)``
        (a dynamic output contributes one pair per instance). The TensorDescs
        are the objects infer_meta returned (owned values).

    Raises:
        TypeError: ``inputs`` does not match the IR's input count; the result has the
            wrong type ("must be TensorDesc", "must return list/tuple for
            multiple outputs"), the wrong number of outputs, or a dynamic output
            has the wrong number of instances ("instance count mismatch");
            messages name the op_type and the output.
        ValueError: an unknown output in ``dynamic_output_counts``.
        Any exception raised by the prototype function itself, unchanged.
    """
    proto = canonical_ir(proto)
    op = proto.op_type
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, _collections_abc.Sequence):
        raise TypeError(f"infer_meta of op_type '{op}': inputs must be a sequence, "
                        f"got {type(inputs).__name__}")
    if len(inputs) != len(proto.inputs):
        raise TypeError(f"infer_meta of op_type '{op}': expected {len(proto.inputs)} inputs, "
                        f"actual {len(inputs)}")
    counts: Dict[int, int] = {}
    if dynamic_output_counts:
        names = {o.name: i for i, o in enumerate(proto.outputs)}
        for key, count in dynamic_output_counts.items():
            index = names.get(key) if isinstance(key, str) else _as_index(key)
            if index is None or not 0 <= index < len(proto.outputs):
                raise ValueError(f"infer_meta of op_type '{op}': unknown output {key!r} "
                                 "in dynamic_output_counts")
            counts[index] = count

    result = proto.func(*inputs, **dict(attrs))

    def one(index: int, value: Any) -> List[Tuple[int, Any]]:
        out = proto.outputs[index]
        if out.kind == "required":
            if not isinstance(value, TensorDesc):
                raise TypeError(f"infer_meta output[{index}] must be TensorDesc, got "
                                f"{type(value).__name__} (op_type '{op}', output '{out.name}')")
            return [(index, value)]
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"infer_meta output[{index}] is dynamic, must return list, got "
                            f"{type(value).__name__} (op_type '{op}', output '{out.name}')")
        for n, item in enumerate(value):
            if not isinstance(item, TensorDesc):
                raise TypeError(f"infer_meta output[{index}] must be TensorDesc, got "
                                f"{type(item).__name__} at instance {n} (op_type '{op}', "
                                f"dynamic output '{out.name}')")
        if index in counts and len(value) != counts[index]:
            raise TypeError(f"infer_meta output[{index}] instance count mismatch: expected "
                            f"{counts[index]}, actual {len(value)} (op_type '{op}', dynamic "
                            f"output '{out.name}')")
        return [(index, item) for item in value]

    n_out = len(proto.outputs)
    if n_out == 0:
        if result is not None:
            raise TypeError(f"infer_meta of op_type '{op}' has no outputs and must return None, "
                            f"got {type(result).__name__}")
        return []
    if n_out == 1:
        return one(0, result)
    if not isinstance(result, (list, tuple)):
        raise TypeError(f"infer_meta must return list/tuple for multiple outputs, got "
                        f"{type(result).__name__} (op_type '{op}' has {n_out} outputs: "
                        f"{', '.join(o.name for o in proto.outputs)})")
    if len(result) != n_out:
        raise TypeError(f"infer_meta return count {len(result)} != output count {n_out} "
                        f"(op_type '{op}': {', '.join(o.name for o in proto.outputs)})")
    flat: List[Tuple[int, Any]] = []
    for index, value in enumerate(result):
        flat.extend(one(index, value))
    return flat
