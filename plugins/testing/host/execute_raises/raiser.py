"""HostRaise: execute raises ValueError."""
from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="HostRaise")
def proto(x: TensorDesc) -> TensorDesc:
    return x


def _fail(value):
    raise ValueError(f"boom {value}")


@register_op_impl(op_type="HostRaise")
class Impl:
    def execute(self, x: Tensor) -> None:
        _fail(42)
