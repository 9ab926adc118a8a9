"""HostPrint: y = x; prints at import and in execute (captured into the log)."""
import sys

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

print("printer plugin says hello at import")
print("printer plugin warns on stderr", file=sys.stderr)


@register_op(op_type="HostPrint")
def proto(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="HostPrint")
class Impl:
    def execute(self, x: Tensor) -> None:
        print("printer plugin execute", x.shape_size)
        get_execute_ctx().make_output_ref_input(0, 0)
