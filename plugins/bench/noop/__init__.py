"""NoopCustom: the dispatch benchmark's op (2 inputs, 1 output, 1 int attr).

execute and compile do nothing, so the benchmark measures only the cost of
getting from C++ into the callback and back (binding, context, expiry; for
compile also the per-call signature check).
"""
from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="NoopCustom")
def noop(x: TensorDesc, y: TensorDesc, *, alpha: int = 1) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="NoopCustom")
class Noop:
    def execute(self, x: Tensor, y: Tensor, *, alpha: int) -> None:
        pass

    def compile(self, x: Tensor, y: Tensor, out: Tensor, *, alpha: int) -> None:
        pass
