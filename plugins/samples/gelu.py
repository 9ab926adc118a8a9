"""GeluCustom: the GELU activation, in pure Python (a single-file plugin).

approximate="tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
approximate="none": 0.5 x (1 + erf(x / sqrt(2)))
float32 and float64; sub-interpreter isolation (the default).
"""
import math

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc

__version__ = "1.0.0"

_FORMATS = {DataType.DT_FLOAT: "f", DataType.DT_DOUBLE: "d"}


@register_op(op_type="GeluCustom")
def gelu(x: TensorDesc, *, approximate: str = "tanh") -> TensorDesc:
    if x.data_type not in _FORMATS:
        raise TypeError(f"GeluCustom supports float32 and float64, got {DataType(x.data_type).name}")
    if approximate not in ("tanh", "none"):
        raise ValueError(f"approximate must be 'tanh' or 'none', got {approximate!r}")
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


def _gelu_tanh(v):
    return 0.5 * v * (1.0 + math.tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))


def _gelu_erf(v):
    return 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0)))


@register_op_impl(op_type="GeluCustom")
class Gelu:
    def execute(self, x: Tensor, *, approximate: str) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        fmt = _FORMATS[x.data_type]
        f = _gelu_tanh if approximate == "tanh" else _gelu_erf
        src = x.data.cast("B").cast(fmt)
        dst = y.data.cast("B").cast(fmt)
        for i, v in enumerate(src.tolist()):
            dst[i] = f(v)
