"""LaunchTwo(x) -> y: two launches in order, the second consuming the first's
output through a workspace (kernels stage1 / stage2 of $GE_LAUNCH_KERNEL_DIR/two.so).

stage1: w[i] = 2 * x[i];  stage2: y[i] = w[n-1-i] + 1, then w[n-1-i] = NaN.
"""
import os

from ge.custom_op import AnnotatedKernelLaunchInfo, get_declare_launch_args_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="LaunchTwo")
def launch_two(x: TensorDesc, *, block_dim: int = 3) -> TensorDesc:
    if x.data_type != DataType.DT_FLOAT:
        raise TypeError("LaunchTwo takes float32")
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="LaunchTwo")
class LaunchTwo:
    def declare_launch_args(self, x: Tensor, y: Tensor, *, block_dim: int) -> None:
        with open(os.path.join(os.environ["GE_LAUNCH_KERNEL_DIR"], "two.so"), "rb") as f:
            binary = f.read()
        ctx = get_declare_launch_args_ctx()
        n = x.shape_size
        w = ctx.malloc_workspace(4 * max(1, n))
        first = ctx.create_kernel_args()
        first.append_input(0, x)
        first.append_workspace(w)
        first.append_scalar(n)
        ctx.add_launch(AnnotatedKernelLaunchInfo(kernel_name="stage1", kernel_bin=binary, block_dim=block_dim,
                                                 stream_id=ctx.get_stream_id()), first)
        second = ctx.create_kernel_args()
        second.append_workspace(w)
        second.append_output(0, y)
        second.append_scalar(n)
        ctx.add_launch(AnnotatedKernelLaunchInfo(kernel_name="stage2", kernel_bin=binary, block_dim=block_dim,
                                                 stream_id=ctx.get_stream_id()), second)
