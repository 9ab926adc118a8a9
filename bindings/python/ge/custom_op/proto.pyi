# Type stubs of ge.custom_op.proto: prototypes and their registry (GE's names;
# share/docs/plugin-authors.md, "The prototype").
from enum import IntEnum
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

__all__ = [
    "register_op",
    "InputType",
    "OutputType",
    "OpInput",
    "OpAttr",
    "OpOutput",
    "OpProtoDescriptor",
    "get_registered_op_protos",
    "get_registered_op_proto_by_op_type",
    "get_registered_op_proto_by_descriptor_key",
    "get_registered_op_proto_dicts",
    "get_registered_op_proto_dict_by_op_type",
    "clear_registered_op_protos",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def register_op(*, op_type: str, mutates_args: Sequence[Any] = ...) -> Callable[[_F], _F]:
    """Declares a prototype (the function is also the op's infer_meta); see ge.custom_op.register_op."""


class InputType(IntEnum):
    REQUIRED = 0
    OPTIONAL = 1
    DYNAMIC = 2


class OutputType(IntEnum):
    REQUIRED = 0
    DYNAMIC = 1


class OpInput:
    """One input: name, IR index, kind. Frozen."""
    def __init__(self, name: str, index: int, kind: InputType) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def kind(self) -> InputType: ...


class OpOutput:
    """One output: name, IR index, kind. Frozen."""
    def __init__(self, name: str, index: int, kind: OutputType) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def kind(self) -> OutputType: ...


class OpAttr:
    """One attribute: ``type`` is a VT_* string; list defaults are frozen into tuples. Frozen."""
    def __init__(self, name: str, index: int, type: str, is_required: bool, default: Any = ...) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def is_required(self) -> bool: ...
    @property
    def default(self) -> Any: ...


class OpProtoDescriptor:
    """A registered prototype; ``infer_func`` takes no part in ==, hash or repr. Frozen."""
    def __init__(self, descriptor_key: str, op_type: str, module_name: str, func_name: str,
                 inputs: Sequence[OpInput], attrs: Sequence[OpAttr], outputs: Sequence[OpOutput],
                 infer_func: Callable[..., Any]) -> None: ...
    @property
    def descriptor_key(self) -> str: ...
    @property
    def op_type(self) -> str: ...
    @property
    def module_name(self) -> str: ...
    @property
    def func_name(self) -> str: ...
    @property
    def inputs(self) -> Tuple[OpInput, ...]: ...
    @property
    def attrs(self) -> Tuple[OpAttr, ...]: ...
    @property
    def outputs(self) -> Tuple[OpOutput, ...]: ...
    @property
    def infer_func(self) -> Callable[..., Any]: ...
    def to_bridge_dict(self) -> Dict[str, Any]:
        """Plain data (a new copy): descriptor_key, op_type, module_name, func_name, inputs, attrs, outputs."""


def get_registered_op_protos() -> List[OpProtoDescriptor]:
    """Sorted by op_type."""
def get_registered_op_proto_by_op_type(op_type: str) -> Optional[OpProtoDescriptor]: ...
def get_registered_op_proto_by_descriptor_key(descriptor_key: str) -> Optional[OpProtoDescriptor]: ...
def get_registered_op_proto_dicts() -> List[Dict[str, Any]]: ...
def get_registered_op_proto_dict_by_op_type(op_type: str) -> Optional[Dict[str, Any]]: ...
def clear_registered_op_protos() -> None: ...
