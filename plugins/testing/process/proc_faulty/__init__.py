"""Process-isolated test ops (test/cpp/test_process_worker.cc).

ProcFault(x) -> y: what execute does is chosen by x[0]:
  0 y = 2 x    1 SIGSEGV    2 os._exit(3)    3 sleeps 1000 s
  4 y = [pid of the process running execute, ...]    5 raises ValueError("bad five")
  6 forks a child that sleeps 1000 s holding everything the worker holds, writes
    its pid to /tmp/ge-proc-faulty-<x[1]>.pid, then SIGSEGV
  7 closes the worker's channel to the engine (descriptor 3), then raises
  8 y = [1 if SIGCHLD is ignored here else 0, number of signals blocked here, 0, ...]
ProcScale(x, *, scale=2.0) -> y = scale * x, with infer_meta (float32 only).
ProcRef(x) -> x, aliasing its input (make_output_ref_input).
"""
import os
import time

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc


def _floats(t):
    return t.data.cast("B").cast("f")


@register_op(op_type="ProcFault")
def fault_proto(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="ProcFault")
class Fault:
    def execute(self, x: Tensor) -> None:
        src = _floats(x)
        mode = int(src[0])
        if mode == 1:
            os.kill(os.getpid(), 11)
            time.sleep(10)
        elif mode == 7:
            os.close(3)
            raise ValueError("closed the channel")
        elif mode == 2:
            os._exit(3)
        elif mode == 3:
            time.sleep(1000)
        elif mode == 5:
            raise ValueError("bad five")
        elif mode == 6:
            child = os.fork()
            if child == 0:
                time.sleep(1000)
                os._exit(0)
            with open(f"/tmp/ge-proc-faulty-{int(src[1])}.pid", "w") as f:
                f.write(str(child))
            os.kill(os.getpid(), 11)
            time.sleep(10)
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        dst = _floats(y)
        if mode == 8:  # this process's signal state, as the kernel has it (signal.* is the engine's)
            with open("/proc/self/status") as f:
                masks = {k: int(v, 16) for k, _, v in (line.partition(":") for line in f) if k in ("SigIgn", "SigBlk")}
            dst[0] = float((masks["SigIgn"] >> (17 - 1)) & 1)  # SIGCHLD is 17 on Linux
            dst[1] = float(bin(masks["SigBlk"]).count("1"))
            return
        for i, v in enumerate(src.tolist()):
            dst[i] = float(os.getpid()) if mode == 4 else 2.0 * v


@register_op(op_type="ProcScale")
def scale_proto(x: TensorDesc, *, scale: float = 2.0) -> TensorDesc:
    if x.data_type != DataType.DT_FLOAT:
        raise TypeError(f"ProcScale takes float32, got {DataType(x.data_type).name}")
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="ProcScale")
class Scale:
    def execute(self, x: Tensor, *, scale: float) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        dst = _floats(y)
        for i, v in enumerate(_floats(x).tolist()):
            dst[i] = scale * v


@register_op(op_type="ProcRef")
def ref_proto(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="ProcRef")
class Ref:
    def execute(self, x: Tensor) -> None:
        get_execute_ctx().make_output_ref_input(0, 0)
