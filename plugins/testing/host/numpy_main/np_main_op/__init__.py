"""HostNpAddOne: y = x + 1 with numpy (isolation = "main")."""
import numpy as np

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="HostNpAddOne")
def proto(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="HostNpAddOne")
class Impl:
    def execute(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        np.asarray(y)[...] = np.asarray(x) + np.float32(1)
