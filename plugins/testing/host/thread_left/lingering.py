"""Leaves a non-daemon thread waiting forever on an Event."""
import threading

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

_NEVER = threading.Event()
_THREAD = threading.Thread(target=_NEVER.wait, name="ge-test-lingering", daemon=False)
_THREAD.start()


@register_op(op_type="HostLinger")
def proto(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="HostLinger")
class Impl:
    def execute(self, x: Tensor) -> None:
        get_execute_ctx().make_output_ref_input(0, 0)
