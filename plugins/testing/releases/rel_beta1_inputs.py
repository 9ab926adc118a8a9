"""RelBeta1Add: y = x1 + x2, written as GE 9.2.0-beta.1 plugins were.

The class derives from EagerExecuteOp and its execute takes the list of input
tensors; the context's methods (malloc_output_tensor, get_input_num, ...) are
read from self while execute runs, and its return value is ignored.
"""
from ge.custom_op import EagerExecuteOp, register_op, register_op_impl
from ge.runtime import TensorDesc

__version__ = "0.9.1"


@register_op(op_type="RelBeta1Add")
def rel_beta1_add(x1: TensorDesc, x2: TensorDesc) -> TensorDesc:
    return TensorDesc(x1.shape.storage_shape.dims, x1.data_type)


@register_op_impl(op_type="RelBeta1Add")
class RelBeta1Add(EagerExecuteOp):
    def execute(self, inputs):
        if self.get_input_num() != len(inputs):
            raise RuntimeError(f"get_input_num() {self.get_input_num()} != {len(inputs)} inputs")
        a, b = inputs
        y = self.malloc_output_tensor(0, a.shape, a.format, a.data_type)
        dst = y.data.cast("B").cast("f")
        for i, (u, v) in enumerate(zip(a.data.cast("B").cast("f").tolist(), b.data.cast("B").cast("f").tolist())):
            dst[i] = u + v
        return "a value GE 9.2.0-beta.1 ignores"
