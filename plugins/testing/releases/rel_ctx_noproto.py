"""RelNoProto: a legacy execute(self, ctx) whose prototype this plugin does not
register (in GE it came from a C++ op package). It registers; a node of
RelNoProto fails, naming the missing prototype, until one is installed.
"""
from ge.custom_op import EagerExecuteOp, register_op_impl

__version__ = "0.9.5"


@register_op_impl(op_type="RelNoProto")
class RelNoProto(EagerExecuteOp):
    def execute(self, ctx):
        x = ctx.get_input_tensor(0)
        ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
