"""A plugin written the way GE's own Python custom-op plugins are written.

Only GE's public API is used: outputs from malloc_output_tensor(index, shape,
format, dtype), data reached through Tensor.addr (ctypes), the platform's
[version] NpuArch read in compile, and an ExpandDimsType read from a tensor.
test/compat/test_upstream_plugin.py runs it through ge-run.
"""
import ctypes

from ge.custom_op import (get_compile_platform_info, get_execute_ctx, register_op,
                          register_op_impl)
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="CompatAddCustom")
def compat_add(x: TensorDesc, y: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape, x.data_type)


@register_op_impl(op_type="CompatAddCustom")
class CompatAddCustom:
    def __init__(self):
        self.npu_arch = 0.0

    def compile(self, x: Tensor, y: Tensor, z: Tensor) -> None:
        # State passes from compile to execute on the one instance.
        self.npu_arch = float(get_compile_platform_info().get_platform_resource("version", "NpuArch"))

    def execute(self, x: Tensor, y: Tensor) -> None:
        ctx = get_execute_ctx()
        z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        n = x.shape_size
        xs = (ctypes.c_float * n).from_address(x.addr)
        ys = (ctypes.c_float * n).from_address(y.addr)
        zs = (ctypes.c_float * n).from_address(z.addr)
        for i in range(n):
            zs[i] = xs[i] + ys[i]
        # The last element carries what compile read from the platform.
        zs[n - 1] = self.npu_arch
