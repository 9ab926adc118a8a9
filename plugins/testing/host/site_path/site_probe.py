"""HostSiteProbe: imports two pure-Python modules that only the main
interpreter's `site` put on sys.path (test_host.cc adds a site folder with
site.addsitedir before loading this plugin): ge_site_probe_mod from the folder
itself, ge_pth_probe_mod from the folder a .pth file in it names.

y = [x0 + the two modules' VALUEs, hasattr(builtins, "exit"), sys.flags.no_site]
(float32, 3 elements): what a sub-interpreter plugin sees of `site`
(share/docs/plugin-authors.md, "Isolation").
"""
import builtins
import sys

import ge_pth_probe_mod
import ge_site_probe_mod
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="HostSiteProbe")
def site_probe(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="HostSiteProbe")
class SiteProbe:
    def execute(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        src = x.data.cast("B").cast("f")
        dst = y.data.cast("B").cast("f")
        dst[0] = src[0] + ge_site_probe_mod.VALUE + ge_pth_probe_mod.VALUE
        dst[1] = float(hasattr(builtins, "exit"))
        dst[2] = float(sys.flags.no_site)
