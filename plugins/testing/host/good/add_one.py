"""HostAddOne: y = x + 1 (float32); HostThreadId: the OS id of the calling thread."""
import threading

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc


@register_op(op_type="HostAddOne")
def add_one(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="HostAddOne")
class AddOne:
    def execute(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        src = x.data.cast("B").cast("f")
        dst = y.data.cast("B").cast("f")
        for i in range(len(src)):
            dst[i] = src[i] + 1.0


@register_op(op_type="HostThreadId")
def thread_id(x: TensorDesc) -> TensorDesc:
    return TensorDesc([1], DataType.DT_UINT64)


@register_op_impl(op_type="HostThreadId")
class ThreadId:
    def execute(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, StorageShape([1], [1]), StorageFormat(), DataType.DT_UINT64)
        y.data.cast("B").cast("Q")[0] = threading.get_ident()
