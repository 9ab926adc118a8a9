"""CmpSwap(x) -> y: the first compile replaces the class's compile with a
legacy ``compile(self, ctx)``. The host checks compile against the IR on every
call, so the next compile must fail with "expected 2 positional" (and the
legacy method must never run: it would raise AssertionError)."""
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


def _legacy(self, ctx) -> None:
    raise AssertionError("the legacy compile ran: compile was not validated again")


@register_op(op_type="CmpSwap")
def cmp_swap(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="CmpSwap")
class CmpSwap:
    def compile(self, x: Tensor, y: Tensor) -> None:
        type(self).compile = _legacy

    def execute(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        y.data.cast("B")[:] = x.data.cast("B")
