"""CmpBadSig(x) -> y with a legacy compile(self, ctx): validation against the
IR (one input, one output) fails at load, so the plugin registers nothing."""
from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="CmpBadSig")
def cmp_bad_sig(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="CmpBadSig")
class CmpBadSig:
    def compile(self, ctx) -> None:
        pass

    def execute(self, x: Tensor) -> None:
        pass
