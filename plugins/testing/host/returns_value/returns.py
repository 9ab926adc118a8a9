"""HostReturns: execute allocates its output and then returns 1 (not None)."""
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="HostReturns")
def proto(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="HostReturns")
class Impl:
    def execute(self, x: Tensor) -> None:
        get_execute_ctx().make_output_ref_input(0, 0)
        return 1
