"""LaunchBoth(x) -> y: execute (y = x - 100, logged to $GE_LAUNCH_BOTH_LOG) and
declare_launch_args (kernel add_one of $GE_LAUNCH_KERNEL_DIR/simple.so: y = x + 1).
The engine must run the declared plan and never call execute.
"""
import os

from ge.custom_op import (AnnotatedKernelLaunchInfo, get_declare_launch_args_ctx, get_execute_ctx, register_op,
                          register_op_impl)
from ge.runtime import Tensor, TensorDesc


def _log(event):
    path = os.environ.get("GE_LAUNCH_BOTH_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(event + "\n")


@register_op(op_type="LaunchBoth")
def launch_both(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="LaunchBoth")
class LaunchBoth:
    def execute(self, x: Tensor) -> None:
        _log("execute")
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        src, dst = x.data.cast("B").cast("f"), y.data.cast("B").cast("f")
        for i in range(len(src)):
            dst[i] = src[i] - 100.0

    def declare_launch_args(self, x: Tensor, y: Tensor) -> None:
        _log("declare_launch_args")
        with open(os.path.join(os.environ["GE_LAUNCH_KERNEL_DIR"], "simple.so"), "rb") as f:
            binary = f.read()
        ctx = get_declare_launch_args_ctx()
        args = ctx.create_kernel_args()
        args.append_input(0, x)
        args.append_output(0, y)
        args.append_scalar(x.shape_size)
        ctx.add_launch(AnnotatedKernelLaunchInfo(kernel_name="add_one", kernel_bin=binary, block_dim=1,
                                                 stream_id=ctx.get_stream_id()), args)
