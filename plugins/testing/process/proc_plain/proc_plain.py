"""ProcNoop(x) -> x: a no-op execute (aliases its input); single file, so it
loads in whatever isolation the host defaults to (test_process_worker.cc,
bench_process.cc)."""
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="ProcNoop")
def proto(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="ProcNoop")
class Noop:
    def execute(self, x: Tensor) -> None:
        get_execute_ctx().make_output_ref_input(0, 0)
