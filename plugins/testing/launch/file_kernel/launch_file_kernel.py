"""LaunchFile(x) -> y: one launch of a kernel read from $GE_LAUNCH_KERNEL_DIR/<kernel_file>.

Slots: args[0] = x, args[1] = y, args[2] = element count. The op has neither
compile nor execute: declare_launch_args alone makes it runnable.
"""
import os

from ge.custom_op import AnnotatedKernelLaunchInfo, get_declare_launch_args_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


def _kernel_bytes(name):
    with open(os.path.join(os.environ["GE_LAUNCH_KERNEL_DIR"], name), "rb") as f:
        return f.read()


@register_op(op_type="LaunchFile")
def launch_file(x: TensorDesc, *, kernel_file: str, kernel_name: str, block_dim: int = 1) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="LaunchFile")
class LaunchFile:
    def declare_launch_args(self, x: Tensor, y: Tensor, *, kernel_file: str, kernel_name: str,
                            block_dim: int) -> None:
        ctx = get_declare_launch_args_ctx()
        args = ctx.create_kernel_args()
        args.append_input(0, x)
        args.append_output(0, y)
        args.append_scalar(x.shape_size)
        info = AnnotatedKernelLaunchInfo(kernel_name=kernel_name, kernel_bin=_kernel_bytes(kernel_file),
                                         block_dim=block_dim, stream_id=ctx.get_stream_id())
        ctx.add_launch(info, args)
