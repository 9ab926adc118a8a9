"""RelPlainCtx (y = alpha x) and RelStaticCtx (y = x - 1): the legacy
execute(ctx) that every GE release calls with the execute context, whatever
the class: a plain class reading its attribute with ctx.get_attrs(), and a
staticmethod on an EagerExecuteOp subclass; inputs by keyword index.
"""
from ge.custom_op import EagerExecuteOp, register_op, register_op_impl
from ge.runtime import TensorDesc

__version__ = "0.9.6"


@register_op(op_type="RelPlainCtx")
def rel_plain_ctx(x: TensorDesc, *, alpha: float = 2.0) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op(op_type="RelStaticCtx")
def rel_static_ctx(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


def _map(ctx, f):
    x = ctx.get_input_tensor(index=0)
    y = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
    dst = y.data.cast("B").cast("f")
    for i, v in enumerate(x.data.cast("B").cast("f").tolist()):
        dst[i] = f(v)


@register_op_impl(op_type="RelPlainCtx")
class RelPlainCtx:
    def execute(self, ctx):
        attrs = ctx.get_attrs()
        if attrs.get_attr_num() != 1:
            raise RuntimeError(f"expected 1 attr, got {attrs.get_attr_num()}")
        alpha = attrs.get_float(0)
        _map(ctx, lambda v: alpha * v)


@register_op_impl(op_type="RelStaticCtx")
class RelStaticCtx(EagerExecuteOp):
    @staticmethod
    def execute(ctx):
        _map(ctx, lambda v: v - 1.0)
