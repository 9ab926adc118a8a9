"""HostAddTwo: y = x + 2 (float32), in its own sub-interpreter."""
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="HostAddTwo")
def add_two(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="HostAddTwo")
class AddTwo:
    def execute(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        src = x.data.cast("B").cast("f")
        dst = y.data.cast("B").cast("f")
        for i in range(len(src)):
            dst[i] = src[i] + 2.0
