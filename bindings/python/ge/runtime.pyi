# Type stubs of ge.runtime (share/docs/plugin-authors.md, "Tensors and lifetimes").
#
# At run time Tensor, TensorDesc, Shape, StorageShape, StorageFormat and
# ExpandDimsType are classes of the native module _ge_native re-exported here;
# the stubs describe them under their public home. Views (Tensor, Shape and the
# shape/format views of a tensor) are borrowed: any use after their callback
# returns raises RuntimeError "Borrowed native object has expired".
from enum import IntEnum
from typing import Any, Dict, Iterator, List, NoReturn, Optional, SupportsIndex, Tuple, Union, overload

from ge.graph import DataType, Format

__all__ = [
    "Tensor",
    "TensorDesc",
    "Shape",
    "StorageShape",
    "StorageFormat",
    "ExpandDimsType",
    "TensorPlacement",
]

# What the native code accepts where it reads dims: a list or tuple of ints, or a Shape.
_Dims = Union[List[int], Tuple[int, ...], "Shape"]


class _TensorData(memoryview):  # type: ignore[misc]  # memoryview is final in typeshed
    """The type of ``Tensor.data`` (and of ``malloc_workspace`` in execute) for type checkers.

    At run time it is a plain ``memoryview``. This stub-only class exists because
    the standard library stubs model a memoryview's items as ``int`` (bytes),
    while a tensor's view has the struct format of its dtype: its items are
    ``float`` for 'f'/'e'/'d', ``int`` for integer formats, ``bool`` for '?'.
    ``cast`` and slicing keep this type, so ``y.data.cast("B").cast("f")[i] = 0.5``
    type-checks.
    """
    def cast(self, format: str, shape: Union[List[int], Tuple[int, ...]] = ...) -> _TensorData: ...
    @overload
    def __getitem__(self, __i: SupportsIndex) -> Any: ...
    @overload
    def __getitem__(self, __s: slice) -> _TensorData: ...
    @overload  # type: ignore[override]
    def __setitem__(self, __s: slice, __o: Any) -> None: ...
    @overload
    def __setitem__(self, __i: SupportsIndex, __o: Union[float, int, bool]) -> None: ...
    def __iter__(self) -> Iterator[Any]: ...
    def tolist(self) -> List[Any]: ...


class TensorPlacement(IntEnum):
    """Where a tensor's memory lives (gert::TensorPlacement); host tensors report ON_HOST."""
    ON_DEVICE_HBM = 0
    ON_HOST = 1
    FOLLOWING = 2
    ON_DEVICE_P2P = 3
    END = 4


class Shape:
    """A shape view (borrowed). Not constructible: the host hands it out (TypeError)."""
    # The parameter type makes any construction a type error, as it is a TypeError at run time.
    def __init__(self, __host_only: NoReturn) -> None: ...
    @property
    def dims(self) -> List[int]:
        """The dims as a new list."""
    @property
    def dim_num(self) -> int:
        """The rank."""
    @property
    def size(self) -> int:
        """Number of elements (1 for a scalar, -1 with unknown dims)."""
    def get_dim(self, index: int, /) -> int:
        """ValueError when ``index`` is out of range."""
    def set_dim(self, index: int, value: int, /) -> None:
        """ValueError when out of range; RuntimeError "borrowed object is read-only" in compile."""
    def append_dim(self, value: int, /) -> None:
        """ValueError past the maximum rank."""
    def is_scalar(self) -> bool: ...
    def set_scalar(self) -> None: ...
    def __len__(self) -> int: ...
    def __eq__(self, other: object) -> bool:
        """Equal to another Shape, or to a list/tuple of the same dims."""


class StorageShape:
    """Origin and storage shapes: ``StorageShape()`` or ``StorageShape(origin, storage)``
    is an owned value; a tensor's ``shape`` is a view."""
    @overload
    def __init__(self) -> None: ...
    @overload
    def __init__(self, origin: _Dims, storage: _Dims) -> None: ...
    @property
    def origin_shape(self) -> Shape: ...
    @property
    def storage_shape(self) -> Shape: ...
    def set_origin_shape(self, dims: _Dims, /) -> None:
        """ValueError with more dims than the maximum rank."""
    def set_storage_shape(self, dims: _Dims, /) -> None:
        """ValueError with more dims than the maximum rank."""
    def __eq__(self, other: object) -> bool: ...


class ExpandDimsType:
    """An expand-dims rule: a string such as ``"101"`` or an int mask. Owned when
    constructed; read from a tensor or a StorageFormat it is a view of that rule
    (read-only in compile), expiring with its owner."""
    def __init__(self, rule: Union[str, int, None] = None) -> None:
        """TypeError for another type, ValueError for a bad rule."""
    @property
    def rule(self) -> str: ...
    @property
    def mask(self) -> int: ...
    @property
    def rule_size(self) -> int: ...
    @property
    def full_size(self) -> int:
        """Dimension count after expansion (the rule's length)."""
    def is_expand_index(self, index: int, /) -> bool: ...
    def set_expand_index(self, index: int, /) -> None:
        """Marks ``index`` (< full_size) as inserted; ValueError past the rule, RuntimeError when read-only."""
    def __eq__(self, other: object) -> bool: ...


class StorageFormat:
    """Origin and storage formats and the expand-dims rule (owned when constructed,
    a view when read from a tensor). Format arguments take a ``Format`` or an int."""
    def __init__(self, origin_format: Optional[int] = None, storage_format: Optional[int] = None,
                 expand_dims_type: Optional[ExpandDimsType] = None) -> None: ...
    @property
    def origin_format(self) -> Format: ...
    @property
    def storage_format(self) -> Format: ...
    @property
    def expand_dims_type(self) -> ExpandDimsType:
        """A view of the rule (expires with this StorageFormat)."""
    def set_origin_format(self, format: int, /) -> None: ...
    def set_storage_format(self, format: int, /) -> None: ...
    def set_expand_dims_type(self, expand_dims_type: ExpandDimsType, /) -> None: ...


class TensorDesc:
    """``TensorDesc(shape, data_type)``: an owned shape + dtype description (infer_meta's currency).

    ``shape`` is a StorageShape (copied), a list of ints (origin and storage)
    or None (a scalar); anything else, a tuple or a list holding bools or
    floats included, raises TypeError ("StorageShape, list of integers, or
    None"); more than 8 dims ValueError ("maximum dimension count").
    ``data_type`` must be a ``DataType`` (TypeError "data_type must be a
    DataType"; ValueError "less than DataType.DT_MAX" at or past DT_MAX).
    Views taken from it (``shape``, ``format``) expire when it is freed.
    """
    def __init__(self, shape: Union[StorageShape, List[int], None], data_type: DataType) -> None: ...
    @property
    def shape(self) -> StorageShape:
        """A view that expires with this TensorDesc."""
    @shape.setter
    def shape(self, value: Union[StorageShape, List[int], None]) -> None:
        """Copies a StorageShape, or sets origin and storage from a list; None is a scalar."""
    @property
    def origin_shape(self) -> Shape: ...
    @property
    def storage_shape(self) -> Shape: ...
    @property
    def format(self) -> StorageFormat: ...
    @property
    def data_type(self) -> DataType: ...
    @data_type.setter
    def data_type(self, value: DataType) -> None: ...
    def __eq__(self, other: object) -> bool: ...


class Tensor:
    """A borrowed tensor view handed to a callback; it expires when the callback returns.
    Not constructible (TypeError)."""
    def __init__(self, __host_only: NoReturn) -> None: ...
    @property
    def addr(self) -> int:
        """Host address of the data."""
    @property
    def size(self) -> int:
        """Data size in bytes."""
    @property
    def shape_size(self) -> int:
        """Number of elements."""
    @property
    def shape(self) -> StorageShape: ...
    @property
    def storage_shape(self) -> Shape: ...
    @property
    def origin_shape(self) -> Shape: ...
    @property
    def format(self) -> StorageFormat: ...
    @property
    def storage_format(self) -> Format: ...
    @property
    def origin_format(self) -> Format: ...
    @property
    def expand_dims_type(self) -> ExpandDimsType: ...
    @property
    def data_type(self) -> DataType: ...
    @property
    def placement(self) -> TensorPlacement: ...
    @property
    def data(self) -> _TensorData:
        """Zero-copy memoryview of the host data (ours, not GE's): C-contiguous, the
        tensor's shape, the struct format of its dtype ('B' bytes for bfloat16);
        read-only where the tensor is. RuntimeError for a tensor without host data
        (compile-time metadata)."""
    @property
    def __array_interface__(self) -> Dict[str, Any]:
        """numpy array interface, version 3 (``numpy.asarray(tensor)`` shares the memory)."""
