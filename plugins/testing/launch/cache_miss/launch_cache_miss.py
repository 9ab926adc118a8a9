"""LaunchAxpyMiss: the sample's AxpyKernel (plugins/samples/axpy_kernel, loaded
from its file) with a compile that caches the kernel under alpha + 1, so the
sample's own declare_launch_args misses its cache and must fail with a clear
error. Loading the sample's file also registers its ops in this plugin: do not
load this folder together with plugins/samples."""
import importlib.util
import os

from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

_SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "samples", "axpy_kernel",
                       "__init__.py")
_spec = importlib.util.spec_from_file_location("launch_cache_miss_axpy_sample", _SAMPLE)
_sample = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sample)


@register_op(op_type="LaunchAxpyMiss")
def launch_axpy_miss(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="LaunchAxpyMiss")
class AxpyKernelMissingCompile(_sample.AxpyKernel):
    def compile(self, x: Tensor, y: Tensor, z: Tensor, *, alpha: float) -> None:
        super().compile(x, y, z, alpha=alpha + 1.0)
