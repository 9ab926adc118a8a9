# Type stubs of ge.custom_op._impl: the implementation registry (private module;
# its public names are re-exported by ge.custom_op). OpImplDescriptor is the
# record type the registry functions return.
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type, TypeVar

_T = TypeVar("_T")


class OpImplDescriptor:
    """The frozen record of one registered implementation class."""
    @property
    def descriptor_key(self) -> str:
        """"module:ClassName:op_type"."""
    @property
    def op_type(self) -> str: ...
    @property
    def module_name(self) -> str: ...
    @property
    def class_name(self) -> str: ...
    @property
    def interfaces(self) -> Tuple[str, ...]:
        """Capability names in the fixed order eager_execute, compilable, annotated_args
        (an immutable sequence that also compares equal to a list of the same names)."""
    @property
    def cls(self) -> type: ...
    def __init__(self, descriptor_key: str, op_type: str, module_name: str, class_name: str,
                 interfaces: Sequence[str], cls: type) -> None: ...
    def to_bridge_dict(self) -> Dict[str, Any]:
        """Plain data (a new copy): descriptor_key, op_type, module_name, class_name, interfaces (list)."""


def register_op_impl(*, op_type: str) -> Callable[[Type[_T]], Type[_T]]: ...
def get_registered_op_impls() -> List[OpImplDescriptor]: ...
def get_registered_op_impl_dicts() -> List[Dict[str, Any]]: ...
def get_registered_op_impl_by_descriptor_key(descriptor_key: str) -> Optional[OpImplDescriptor]: ...
def get_registered_op_impl_by_op_type(op_type: str) -> Optional[OpImplDescriptor]: ...
def clear_registered_op_impls() -> None: ...
