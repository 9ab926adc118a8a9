"""LaunchDyn(a, xs: dynamic, bias: optional) -> (ys: dynamic, s): kernel `dyn` of
$GE_LAUNCH_KERNEL_DIR/dyn.so, slots bound by flattened instance index.

ys[i][j] = a[j] * (i + 1) + xs[i][j] + bias[j] (0 without bias); s[j] = sum_i ys[i][j].
Slots: k, n, a, bias address (scalar 0 when absent), xs..., ys..., s.
Flattened indices: inputs a = 0, xs = 1..k, bias = k + 1; outputs ys = 0..k-1, s = k.
"""
import os
from typing import List, Optional, Tuple

from ge.custom_op import AnnotatedKernelLaunchInfo, get_declare_launch_args_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="LaunchDyn")
def launch_dyn(a: TensorDesc, xs: List[TensorDesc], bias: Optional[TensorDesc]) -> Tuple[List[TensorDesc], TensorDesc]:
    dims = a.shape.storage_shape.dims
    for t in list(xs) + ([bias] if bias is not None else []):
        if t.shape.storage_shape.dims != dims or t.data_type != DataType.DT_FLOAT:
            raise ValueError("LaunchDyn: every input must be float32 of a's shape")
    return [TensorDesc(dims, DataType.DT_FLOAT) for _ in xs], TensorDesc(dims, DataType.DT_FLOAT)


@register_op_impl(op_type="LaunchDyn")
class LaunchDyn:
    def declare_launch_args(self, a: Tensor, xs: List[Tensor], bias: Optional[Tensor], ys: List[Tensor],
                            s: Tensor) -> None:
        with open(os.path.join(os.environ["GE_LAUNCH_KERNEL_DIR"], "dyn.so"), "rb") as f:
            binary = f.read()
        ctx = get_declare_launch_args_ctx()
        k = len(xs)
        args = ctx.create_kernel_args()
        args.append_scalar(k)
        args.append_scalar(a.shape_size)
        args.append_input(0, a)
        if bias is None:
            args.append_scalar(0)
        else:
            args.append_input(1 + k, bias)
        for i, x in enumerate(xs):
            args.append_input(1 + i, x)
        for i, y in enumerate(ys):
            args.append_output(i, y)
        args.append_output(k, s)
        ctx.add_launch(AnnotatedKernelLaunchInfo(kernel_name="dyn", kernel_bin=binary, block_dim=2,
                                                 stream_id=ctx.get_stream_id()), args)
