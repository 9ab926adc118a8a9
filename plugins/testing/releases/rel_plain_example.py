"""RelPlainAdd: y = x + y, written as the earlier GE releases' own example
plugin is: a plain class and a schema-bound execute without any annotation.
The newest GE refuses the missing '-> None'; it loads here with a warning.
"""
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import TensorDesc

__version__ = "0.9.4"


@register_op(op_type="RelPlainAdd")
def rel_plain_add(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="RelPlainAdd")
class RelPlainAdd:
    def execute(self, x, y):
        out = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        dst = out.data.cast("B").cast("f")
        for i, (u, v) in enumerate(zip(x.data.cast("B").cast("f").tolist(), y.data.cast("B").cast("f").tolist())):
            dst[i] = u + v
