"""A package without pyproject.toml: its isolation is HostOptions::default_isolation.
Output: [1] when it runs in the main interpreter, [0] in a sub-interpreter."""
import sys

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc


@register_op(op_type="HostWhichInterp")
def proto(x: TensorDesc) -> TensorDesc:
    return TensorDesc([1], DataType.DT_FLOAT)


@register_op_impl(op_type="HostWhichInterp")
class Impl:
    def execute(self, x: Tensor) -> None:
        import _xxsubinterpreters as si
        main = si.get_current() == si.get_main()
        get_execute_ctx().malloc_output_tensor(0, StorageShape([1], [1]), StorageFormat(), DataType.DT_FLOAT).data.cast("B").cast("f")[0] = 1.0 if main else 0.0
