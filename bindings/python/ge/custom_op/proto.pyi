# Type stubs of ge.custom_op.proto: the prototype registry (API.md section 1).
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = [
    "get_registered_op_protos",
    "get_registered_op_proto_by_op_type",
    "get_registered_op_proto_dicts",
    "get_registered_op_proto_dict_by_op_type",
    "clear_registered_op_protos",
    "OpProto",
    "IrInput",
    "IrOutput",
    "IrAttr",
]


class IrInput:
    """One input of the canonical IR; ``kind`` is "required", "optional" or "dynamic"."""
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    def __init__(self, name: str, kind: str) -> None: ...
    def to_dict(self) -> Dict[str, str]: ...


class IrOutput:
    """One output of the canonical IR; ``kind`` is "required" or "dynamic"."""
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    def __init__(self, name: str, kind: str) -> None: ...
    def to_dict(self) -> Dict[str, str]: ...


class IrAttr:
    """One attribute of the canonical IR; ``type`` is a VT_* string (API.md section 6)."""
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def required(self) -> bool: ...
    @property
    def default(self) -> Any:
        """None when required; list defaults are tuples."""
    def __init__(self, name: str, type: str, required: bool, default: Any = None) -> None: ...
    def to_dict(self) -> Dict[str, Any]: ...


class OpProto:
    """The record of one registered prototype (the canonical IR of an op_type)."""
    @property
    def op_type(self) -> str: ...
    @property
    def func(self) -> Callable[..., Any]:
        """The prototype / infer_meta function."""
    @property
    def module_name(self) -> str: ...
    @property
    def qualname(self) -> str: ...
    @property
    def inputs(self) -> Tuple[IrInput, ...]: ...
    @property
    def outputs(self) -> Tuple[IrOutput, ...]: ...
    @property
    def attrs(self) -> Tuple[IrAttr, ...]: ...
    @property
    def mutates(self) -> Tuple[Tuple[str, int], ...]:
        """``(input_name, output_index)`` pairs sorted by output index."""
    @property
    def return_form(self) -> str:
        """"none", "single", "list" or "tuple"."""
    @property
    def proto_key(self) -> str:
        """"module:qualname:op_type"."""
    def __init__(self, op_type: str, func: Callable[..., Any], module_name: str, qualname: str,
                 inputs: Tuple[IrInput, ...], outputs: Tuple[IrOutput, ...], attrs: Tuple[IrAttr, ...],
                 mutates: Tuple[Tuple[str, int], ...], return_form: str) -> None: ...
    def to_dict(self) -> Dict[str, Any]: ...


def get_registered_op_protos() -> List[OpProto]:
    """Sorted by op_type."""
def get_registered_op_proto_by_op_type(op_type: str) -> Optional[OpProto]:
    """None when absent."""
def get_registered_op_proto_dicts() -> List[Dict[str, Any]]: ...
def get_registered_op_proto_dict_by_op_type(op_type: str) -> Optional[Dict[str, Any]]: ...
def clear_registered_op_protos() -> None: ...
