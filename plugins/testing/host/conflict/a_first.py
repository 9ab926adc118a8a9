"""Both files define HostConflict; the first in path order wins. Output: [1]."""
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc


@register_op(op_type="HostConflict")
def proto(x: TensorDesc) -> TensorDesc:
    return TensorDesc([1], DataType.DT_FLOAT)


@register_op_impl(op_type="HostConflict")
class Impl:
    def execute(self, x: Tensor) -> None:
        get_execute_ctx().malloc_output_tensor(0, StorageShape([1], [1]), StorageFormat(), DataType.DT_FLOAT).data.cast("B").cast("f")[0] = 1.0
