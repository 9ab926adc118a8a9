"""CmpFails(x) -> y: compile raises ValueError("compile exploded 31") from a
helper (so that the traceback names _explode). Its execute would create the
file named by $GE_COMPILE_SIDE_EFFECT: it must never run."""
import os

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


def _explode(dims):
    raise ValueError(f"compile exploded 31 for {dims}")


@register_op(op_type="CmpFails")
def cmp_fails(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="CmpFails")
class CmpFails:
    def compile(self, x: Tensor, y: Tensor) -> None:
        _explode(x.storage_shape.dims)

    def execute(self, x: Tensor) -> None:
        path = os.environ.get("GE_COMPILE_SIDE_EFFECT")
        if path:
            with open(path, "w") as f:
                f.write("execute ran\n")
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        y.data.cast("B")[:] = x.data.cast("B")
