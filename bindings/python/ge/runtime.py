"""ge.runtime: tensors, tensor descriptions, shapes and formats.

``Tensor``, ``Shape`` and the context classes are native views the host lends to
callbacks (borrowed: any use after the callback returns raises RuntimeError
"Borrowed native object has expired"); they cannot be constructed (TypeError).
``TensorDesc``, ``StorageShape``, ``StorageFormat`` and ``ExpandDimsType`` are
owned values you may construct. Behaviour follows GE's ``ge.runtime`` API
(share/docs/plugin-authors.md, "Tensors and lifetimes"); ``Tensor.data`` and ``__array_interface__`` are ours.
"""
from enum import IntEnum

from _ge_native import (  # noqa: F401  (re-exported)
    ExpandDimsType,
    Shape,
    StorageFormat,
    StorageShape,
    Tensor,
    TensorDesc,
)

__all__ = [
    "Tensor",
    "TensorDesc",
    "Shape",
    "StorageShape",
    "StorageFormat",
    "ExpandDimsType",
    "TensorPlacement",
]


class TensorPlacement(IntEnum):
    """Where a tensor's memory lives (gert::TensorPlacement numbering).

    The host keeps every tensor in host memory, so tensors it lends report
    ON_HOST.
    """
    ON_DEVICE_HBM = 0
    ON_HOST = 1
    FOLLOWING = 2
    ON_DEVICE_P2P = 3
    END = 4
