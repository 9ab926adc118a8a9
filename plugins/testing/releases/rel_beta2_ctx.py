"""RelCtxScale (y = 2 x) and RelCtxAnnotated (y = x + 10), written as GE
9.2.0-beta.2 plugins were: an EagerExecuteOp subclass whose execute takes the
execute context (named ctx, or annotated EagerOpExecutionContext), reads its
inputs from it and may return a value (ignored).
"""
from ge.custom_op import EagerExecuteOp, EagerOpExecutionContext, register_op, register_op_impl
from ge.runtime import TensorDesc

__version__ = "0.9.2"


@register_op(op_type="RelCtxScale")
def rel_ctx_scale(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op(op_type="RelCtxAnnotated")
def rel_ctx_annotated(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


def _map(ctx, f):
    x = ctx.get_input_tensor(0)
    y = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
    dst = y.data.cast("B").cast("f")
    for i, v in enumerate(x.data.cast("B").cast("f").tolist()):
        dst[i] = f(v)


@register_op_impl(op_type="RelCtxScale")
class RelCtxScale(EagerExecuteOp):
    def execute(self, ctx):
        _map(ctx, lambda v: 2.0 * v)
        return True


@register_op_impl(op_type="RelCtxAnnotated")
class RelCtxAnnotated(EagerExecuteOp):
    def execute(self, context: EagerOpExecutionContext) -> None:
        _map(context, lambda v: v + 10.0)
