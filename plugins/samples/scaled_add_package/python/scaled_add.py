"""ScaledAddCustom's implementation: y = alpha * x1 + x2 (float32).

An impl-only plugin, as most upstream GE Python custom operators are: there is
no register_op here. The prototype (inputs x1, x2; output y; attribute alpha;
float32 only) is the C++ REG_OP in ../proto/scaled_add.h, loaded from the
package's opp root, and the signature of execute is checked against it.
"""
from ge.custom_op import get_execute_ctx, register_op_impl
from ge.runtime import Tensor

__version__ = "1.0.0"


@register_op_impl(op_type="ScaledAddCustom")
class ScaledAdd:
    def execute(self, x1: Tensor, x2: Tensor, *, alpha: float) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x1.shape, x1.format, x1.data_type)
        a = x1.data.cast("B").cast("f")
        b = x2.data.cast("B").cast("f")
        dst = y.data.cast("B").cast("f")
        for i, (u, v) in enumerate(zip(a.tolist(), b.tolist())):
            dst[i] = alpha * u + v
