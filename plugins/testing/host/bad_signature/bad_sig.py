from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="HostBadSig")
def proto(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="HostBadSig")
class Impl:
    def execute(self, x: Tensor, extra: Tensor) -> None:  # the IR has one input
        pass
