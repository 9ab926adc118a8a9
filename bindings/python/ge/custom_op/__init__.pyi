# Type stubs of ge.custom_op (share/docs/plugin-authors.md, compile.md, launch-args.md).
#
# At run time the context classes (EagerOpExecutionContext, OpCompileContext,
# CompilePlatformInfo, AnnotatedArgsContext, AnnotatedKernelArgs, WorkspaceAddr)
# come from the native module _ge_native; the stubs describe them here, their
# public home. Everything a callback receives is borrowed: any use after the
# callback returns raises RuntimeError "Borrowed native object has expired".
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple, Type, TypeVar, Union, overload

from ge.graph import DataType
from ge.runtime import Shape, StorageFormat, StorageShape, Tensor
from ge.runtime import _TensorData

import abc

from . import base as base
from . import proto as proto
from ._impl import OpImplDescriptor

__all__ = [
    "register_op",
    "register_op_impl",
    "get_execute_ctx",
    "get_compile_ctx",
    "get_compile_platform_info",
    "get_declare_launch_args_ctx",
    "get_registered_op_impls",
    "get_registered_op_impl_dicts",
    "get_registered_op_impl_by_descriptor_key",
    "clear_registered_op_impls",
    "EagerOpExecutionContext",
    "OpCompileContext",
    "CompilePlatformInfo",
    "AnnotatedArgsContext",
    "AnnotatedKernelArgs",
    "AnnotatedKernelLaunchInfo",
    "WorkspaceAddr",
    "InferMetaContext",
    "BaseCustomOp",
    "EagerExecuteOp",
]

_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")

# Output shapes malloc_output_tensor takes: a list or tuple of ints, a Shape or a StorageShape.
_OutputShape = Union[List[int], Tuple[int, ...], Shape, StorageShape]


# ---- registration -------------------------------------------------------------

def register_op(*, op_type: str, mutates_args: Sequence[Union[str, Tuple[str, int]]] = ()) -> Callable[[_F], _F]:
    """Decorator: the function is the op's prototype (its canonical IR) and its infer_meta.

    ``mutates_args``: input names (output i aliases the i-th name) or
    ``(input_name, output_index)`` pairs, not mixed. Returns the function unchanged.
    """

def register_op_impl(*, op_type: str) -> Callable[[Type[_T]], Type[_T]]:
    """Class decorator: the class implements ``op_type`` through ``execute``,
    ``compile`` and/or ``declare_launch_args``. Returns the class unchanged
    (with ``__ge_op_impl_descriptor__`` set)."""

def get_registered_op_impls() -> List[OpImplDescriptor]: ...
def get_registered_op_impl_dicts() -> List[Dict[str, Any]]: ...
def get_registered_op_impl_by_descriptor_key(descriptor_key: str) -> Optional[OpImplDescriptor]: ...
def clear_registered_op_impls() -> None: ...


# ---- GE 9.2.0-beta.x base classes (also ge.custom_op.base) ---------------------------

class BaseCustomOp(abc.ABC):
    """The abstract root of GE 9.2.0-beta.x implementation classes (no methods)."""


class EagerExecuteOp(BaseCustomOp):
    """A GE 9.2.0-beta.x implementation with eager execution.

    ``execute`` is abstract; a subclass defines it as ``execute(self, ctx)``
    (called with the EagerOpExecutionContext, no canonical IR needed),
    ``execute(self, inputs)`` (9.2.0-beta.1: the input tensor list, the
    context's methods readable on ``self`` during the call) or schema-bound
    (its result not checked; share/docs/plugin-authors.md, "Plugins from
    earlier GE releases")."""
    @abc.abstractmethod
    def execute(self, *args: Any, **kwargs: Any) -> None: ...


# ---- the current callback's context ---------------------------------------------

def get_execute_ctx() -> EagerOpExecutionContext:
    """The context of the running ``execute``; RuntimeError anywhere else."""

def get_compile_ctx() -> OpCompileContext:
    """The context of the running ``compile``; RuntimeError "only available inside
    schema-bound compile" anywhere else."""

def get_compile_platform_info() -> CompilePlatformInfo:
    """The target platform of the running ``compile``; RuntimeError anywhere else."""

def get_declare_launch_args_ctx() -> AnnotatedArgsContext:
    """The context of the running ``declare_launch_args``; RuntimeError anywhere else."""


# ---- execute ------------------------------------------------------------------------

class _RuntimeAttrs:
    """The attributes of one eager execute by IR index (``EagerOpExecutionContext.get_attrs()``,
    borrowed). A getter of another type than the IR's, or an index past the attributes, raises
    RuntimeError "Failed to get runtime attr type[VT_X] at index[i]"."""
    def __init__(self, __host_only: NoReturn) -> None: ...
    def get_int(self, index: int) -> int: ...
    def get_float(self, index: int) -> float: ...
    def get_bool(self, index: int) -> bool: ...
    def get_str(self, index: int) -> str: ...
    def get_data_type(self, index: int) -> DataType: ...
    def get_tensor(self, index: int) -> Tensor: ...
    def get_list_int(self, index: int) -> List[int]: ...
    def get_list_float(self, index: int) -> List[float]: ...
    def get_list_bool(self, index: int) -> List[bool]: ...
    def get_list_str(self, index: int) -> List[str]: ...
    def get_list_data_type(self, index: int) -> List[DataType]: ...
    def get_list_list_int(self, index: int) -> List[List[int]]: ...
    def get_attr_num(self) -> int: ...


class EagerOpExecutionContext:
    """Context of one eager ``execute`` (borrowed). Indexes are flattened instance
    indexes (a dynamic input or output counts one per instance)."""
    # Not constructible (TypeError at run time): the parameter type makes any call a type error.
    def __init__(self, __host_only: NoReturn) -> None: ...
    def get_input_num(self) -> int: ...
    def get_output_num(self) -> int: ...
    def get_input_tensor(self, index: int) -> Tensor:
        """By flattened instance index; RuntimeError when unavailable."""
    def get_required_input_tensor(self, ir_index: int) -> Tensor:
        """By IR index; RuntimeError when unavailable."""
    def get_optional_input_tensor(self, ir_index: int) -> Optional[Tensor]:
        """By IR index; None when the optional input is absent."""
    def get_dynamic_input_tensor(self, ir_index: int, relative_index: int) -> Tensor:
        """Instance ``relative_index`` of a dynamic IR input; RuntimeError when unavailable."""
    def get_dynamic_input_num(self, ir_index: int) -> int: ...
    def get_output_tensor(self, index: int) -> Tensor:
        """RuntimeError when out of range or not yet allocated."""
    def get_attrs(self) -> _RuntimeAttrs:
        """The node's attributes by IR index (borrowed, expires with the callback)."""
    @overload
    def malloc_output_tensor(self, index: int, shape: StorageShape, format: StorageFormat,
                             dtype: DataType) -> Tensor:
        """GE's form: allocates output ``index`` (zero-filled host memory); RuntimeError on failure."""
    @overload
    def malloc_output_tensor(self, index: int, shape: _OutputShape, format: Union[DataType, int]) -> Tensor:
        """Ours: (index, shape, dtype), the format left as the output's default."""
    def make_output_ref_input(self, output_index: int, input_index: int) -> Tensor:
        """Output ``output_index`` shares input ``input_index``'s memory; RuntimeError on a lookup failure."""
    def malloc_workspace(self, size: int) -> int:
        """Address of ``size`` bytes of scratch memory valid until the callback returns
        (ValueError for size <= 0, RuntimeError when it cannot be allocated)."""
    def malloc_workspace_buffer(self, size: int) -> _TensorData:
        """Ours: the same kind of scratch memory as a writable memoryview (expires with the callback)."""
    def get_stream(self) -> int:
        """The stream handle (0 on the host backend)."""


# ---- compile ------------------------------------------------------------------------

class OpCompileContext:
    """Context of one schema-bound ``compile`` (borrowed)."""
    def __init__(self, __host_only: NoReturn) -> None: ...
    def get_option(self, key: str) -> str:
        """A compile option (a copy). TypeError for a non-str key, ValueError for an
        empty one, KeyError when the option is not set."""


class CompilePlatformInfo:
    """Target platform of one ``compile`` (borrowed), read lazily once per callback;
    when that read fails every method raises RuntimeError "Failed to get platform infos"."""
    def __init__(self, __host_only: NoReturn) -> None: ...
    def get_platform_resource(self, group: str, key: str) -> str:
        """KeyError "group:key" when absent."""
    def get_platform_resource_group(self, group: str) -> Dict[str, str]:
        """A copy; KeyError when the group is absent."""
    def get_core_num(self, core_type: Optional[str] = None) -> int:
        """Cores of a type (AiCore, VectorCore, CubeCore, AiCpu); None: the compile
        option ge.coreType, else the platform's default core type."""
    def get_soc_version(self) -> str: ...
    def get_ai_core_num(self) -> int:
        """AI cores, limited by the compile option ge.aicoreNum when set."""


# ---- declare_launch_args -----------------------------------------------------------------

class WorkspaceAddr:
    """A workspace of the task plan (borrowed), from AnnotatedArgsContext.malloc_workspace."""
    def __init__(self, __host_only: NoReturn) -> None: ...
    @property
    def size(self) -> int: ...
    @property
    def index(self) -> int: ...
    @property
    def addr(self) -> int:
        """Host address of the workspace (allocated when declared, reused by every run)."""


class AnnotatedKernelArgs:
    """Argument slots of one kernel launch, in order; consumed by ``add_launch``
    (any later use raises RuntimeError "has been consumed")."""
    def __init__(self, __host_only: NoReturn) -> None: ...
    def append_input(self, instance_index: int, tensor: Optional[Tensor] = None) -> None:
        """The address of the node's flattened input instance (IndexError out of
        range, TypeError when negative)."""
    def append_output(self, instance_index: int, tensor: Optional[Tensor] = None) -> None:
        """The address of the node's flattened output instance."""
    def append_workspace(self, workspace: WorkspaceAddr) -> None: ...
    def append_scalar(self, value: int) -> None:
        """A uint64 slot (TypeError when negative)."""
    def __len__(self) -> int: ...


class AnnotatedKernelLaunchInfo:
    """One kernel launch (an owned value). ValueError for an empty name or binary or
    block_dim == 0; TypeError for wrong types."""
    kernel_name: str
    kernel_bin: bytes
    block_dim: int
    stream_id: int
    def __init__(self, *, kernel_name: str, kernel_bin: Union[bytes, bytearray], block_dim: int,
                 stream_id: int = 0) -> None: ...


class AnnotatedArgsContext:
    """Context of one ``declare_launch_args`` (borrowed)."""
    def __init__(self, __host_only: NoReturn) -> None: ...
    def malloc_workspace(self, size: int) -> WorkspaceAddr:
        """A workspace of ``size`` bytes for every run (ValueError for 0)."""
    def get_stream_id(self) -> int: ...
    def create_kernel_args(self) -> AnnotatedKernelArgs: ...
    def add_launch(self, launch_info: AnnotatedKernelLaunchInfo, args: AnnotatedKernelArgs) -> None:
        """Declares one launch and consumes ``args``. ValueError on a stream mismatch."""


class InferMetaContext:
    """Reserved for GE compatibility (infer_meta receives TensorDescs directly);
    not constructible."""
    def __init__(self, __host_only: NoReturn) -> None: ...
