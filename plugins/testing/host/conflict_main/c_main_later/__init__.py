"""Defines HostConflict in the main interpreter (isolation = "main"). It loads
before every sub-interpreter plugin, yet it comes later in path order than
conflict/a_first.py, so it must lose the conflict. Output: [3]."""
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc


@register_op(op_type="HostConflict")
def proto(x: TensorDesc) -> TensorDesc:
    return TensorDesc([1], DataType.DT_FLOAT)


@register_op_impl(op_type="HostConflict")
class Impl:
    def execute(self, x: Tensor) -> None:
        get_execute_ctx().malloc_output_tensor(0, StorageShape([1], [1]), StorageFormat(), DataType.DT_FLOAT).data.cast("B").cast("f")[0] = 3.0
