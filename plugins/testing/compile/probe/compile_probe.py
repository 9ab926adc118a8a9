"""CmpProbe(x) -> y (a copy of x): logs import / compile / execute events.

Each event is one JSON line appended to $GE_COMPILE_PROBE_LOG (nothing is
logged when the variable is unset). compile logs the SoC, the core counts and
the options it reads; with the option probe.no_platform=1 it does not touch the
platform at all. execute refuses to run when compile did not run first.
"""
import json
import os

from ge.custom_op import get_compile_ctx, get_compile_platform_info, get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

OPTIONS = ("probe.tag", "probe.other", "probe.no_platform", "ge.coreType", "ge.aicoreNum")


def _log(event, **fields):
    path = os.environ.get("GE_COMPILE_PROBE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(dict(event=event, **fields)) + "\n")


def _compile_ctx_at_import():
    try:
        get_compile_ctx()
        return "available"
    except RuntimeError as e:
        return str(e)


_log("import", compile_ctx=_compile_ctx_at_import())


@register_op(op_type="CmpProbe")
def cmp_probe(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="CmpProbe")
class CmpProbe:
    def __init__(self):
        self.compiled = set()

    def compile(self, x: Tensor, y: Tensor) -> None:
        ctx = get_compile_ctx()
        options = {}
        for key in OPTIONS:
            try:
                options[key] = ctx.get_option(key)
            except KeyError:
                pass
        fields = dict(shape=x.storage_shape.dims, options=options)
        if options.get("probe.no_platform") != "1":
            p = get_compile_platform_info()
            fields.update(soc=p.get_soc_version(), core_num=p.get_core_num(), ai_core_num=p.get_ai_core_num(),
                          vector_core_num=p.get_core_num("VectorCore"))
        self.compiled.add(tuple(x.storage_shape.dims))
        _log("compile", **fields)

    def execute(self, x: Tensor) -> None:
        if tuple(x.storage_shape.dims) not in self.compiled:
            raise RuntimeError("execute before compile")
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        y.data.cast("B")[:] = x.data.cast("B")
        _log("execute", shape=x.storage_shape.dims)
