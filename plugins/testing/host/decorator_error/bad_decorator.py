from ge.custom_op import register_op
from ge.runtime import TensorDesc


@register_op(op_type="HostBadDecorator")
def proto(x: TensorDesc, *, alpha) -> TensorDesc:  # no annotation on alpha
    return x
