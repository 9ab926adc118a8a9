"""HostIsoA: [util.bump(), own builtins marker seen alone, other plugin invisible]."""
import builtins
import sys

import _util as util
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc

_SEEN_BEFORE = getattr(builtins, "_ge_host_test_marker", None)
builtins._ge_host_test_marker = "a"


@register_op(op_type="HostIsoA")
def proto(x: TensorDesc) -> TensorDesc:
    return TensorDesc([3], DataType.DT_FLOAT)


@register_op_impl(op_type="HostIsoA")
class Impl:
    def execute(self, x: Tensor) -> None:
        out = get_execute_ctx().malloc_output_tensor(0, StorageShape([3], [3]), StorageFormat(), DataType.DT_FLOAT).data.cast("B").cast("f")
        out[0] = float(util.bump())
        alone = _SEEN_BEFORE is None and builtins._ge_host_test_marker == "a"
        out[1] = 1.0 if alone else 0.0
        out[2] = 1.0 if "plug_iso_b" in sys.modules else 0.0
