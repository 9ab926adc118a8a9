# Type stubs of ge.testing: run a plugin's callbacks outside the host.
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from ge.graph import DataType
from ge.runtime import TensorDesc

__all__ = ["HostTensor", "host_tensor", "run_execute", "run_infer_meta", "run_compile", "run_declare_launch_args"]

# One entry per IR input (or output): a tensor, None for an absent optional one,
# a list for a dynamic one.
_HostEntry = Union[HostTensor, None, List[HostTensor]]
_DescEntry = Union[TensorDesc, None, List[TensorDesc]]


class HostTensor:
    """An owned host tensor: raw little-endian bytes, a shape and a DataType."""
    data: bytes
    shape: List[int]
    data_type: DataType
    def __init__(self, data: Union[bytes, bytearray, memoryview], shape: Iterable[int], data_type: int) -> None: ...
    def tolist(self) -> List[Any]:
        """Flat list of the elements (TypeError for a dtype without a struct format, e.g. bfloat16)."""
    def __eq__(self, other: object) -> bool: ...


def host_tensor(values: Iterable[float], data_type: int, shape: Optional[Sequence[int]] = None) -> HostTensor:
    """A HostTensor from a flat sequence of numbers (shape defaults to [len(values)])."""

def run_execute(op_type: str, inputs: Sequence[_HostEntry], attrs: Optional[Mapping[str, Any]] = None,
                instance: Any = None) -> List[HostTensor]:
    """Runs ``execute`` as the host does (infer_meta first, outputs checked after);
    returns the flattened outputs."""

def run_infer_meta(op_type: str, inputs: Sequence[_DescEntry],
                   attrs: Optional[Mapping[str, Any]] = None) -> List[TensorDesc]:
    """Calls the prototype as infer_meta; returns the flattened output TensorDescs."""

def run_compile(op_type: str, inputs: Sequence[_DescEntry], outputs: Optional[Sequence[_DescEntry]] = None,
                attrs: Optional[Mapping[str, Any]] = None, options: Optional[Mapping[str, str]] = None,
                soc: str = "host", platform_dir: Optional[str] = None, instance: Any = None) -> Any:
    """Runs ``compile``; returns the implementation instance used (pass it on as ``instance``)."""

def run_declare_launch_args(op_type: str, inputs: Sequence[_DescEntry], outputs: Optional[Sequence[_DescEntry]] = None,
                            attrs: Optional[Mapping[str, Any]] = None, instance: Any = None,
                            stream_id: int = 0) -> Dict[str, Any]:
    """Runs ``declare_launch_args``; returns the declared plan
    ``{"launches": [...], "workspaces": [...]}``."""
