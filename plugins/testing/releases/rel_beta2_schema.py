"""RelSchemaAxpy: y = alpha x + b, written as GE 9.2.0-beta.2 and develop
plugins were: an EagerExecuteOp subclass with a schema-bound execute, no
return annotation, returning a value (neither is checked by those releases).
"""
from ge.custom_op import EagerExecuteOp, get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

__version__ = "0.9.3"


@register_op(op_type="RelSchemaAxpy")
def rel_schema_axpy(x: TensorDesc, b: TensorDesc, *, alpha: float = 3.0) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="RelSchemaAxpy")
class RelSchemaAxpy(EagerExecuteOp):
    def execute(self, x: Tensor, b: Tensor, *, alpha: float):
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        dst = y.data.cast("B").cast("f")
        for i, (u, v) in enumerate(zip(x.data.cast("B").cast("f").tolist(), b.data.cast("B").cast("f").tolist())):
            dst[i] = alpha * u + v
        return 0
