"""RmsNormCustom: RMS normalization over the last axis, in pure Python.

y = x / sqrt(mean(x^2, axis=-1) + epsilon) * gamma   (gamma optional)

Runs in its own sub-interpreter (the default isolation) and reads and writes
tensor memory through the zero-copy ``Tensor.data`` memoryview. float32 only.
"""
import math
from typing import Optional

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc

from . import _kernels


@register_op(op_type="RmsNormCustom")
def rms_norm(x: TensorDesc, gamma: Optional[TensorDesc], *, epsilon: float = 1e-6) -> TensorDesc:
    if x.data_type != DataType.DT_FLOAT:
        raise TypeError(f"RmsNormCustom supports float32 only, got {DataType(x.data_type).name}")
    dims = x.shape.storage_shape.dims
    if not dims:
        raise ValueError("RmsNormCustom needs at least one axis")
    if gamma is not None and gamma.shape.storage_shape.dims != [dims[-1]]:
        raise ValueError(f"gamma must have shape [{dims[-1]}], got {gamma.shape.storage_shape.dims}")
    return TensorDesc(x.shape.storage_shape.dims, DataType.DT_FLOAT)


@register_op_impl(op_type="RmsNormCustom")
class RmsNorm:
    def execute(self, x: Tensor, gamma: Optional[Tensor], *, epsilon: float) -> None:
        ctx = get_execute_ctx()
        y = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        dims = x.storage_shape.dims
        cols = dims[-1]
        src = x.data.cast("B").cast("f")
        dst = y.data.cast("B").cast("f")
        g = gamma.data.cast("B").cast("f").tolist() if gamma is not None else None
        if len(src) == 0:  # no elements (a zero in the shape): nothing to normalize
            return
        for start in range(0, len(src), cols):
            row = src[start:start + cols].tolist()
            inv = 1.0 / math.sqrt(_kernels.mean_square(row) + epsilon)
            if g is None:
                dst[start:start + cols] = _kernels.pack([v * inv for v in row])
            else:
                dst[start:start + cols] = _kernels.pack([v * inv * w for v, w in zip(row, g)])
