"""HostFrameCtx: what execute sees of contextvars when the host runs it in the
op's own contextvars.Context (bindings/native/frame_context.h;
test/cpp/test_host.cc, execute_runs_in_the_op_context).

x (float32, 5 elements): x[0] is the mode, x[1] a value. y (float32, 5):
  mode 0 (probe):    y[0] decimal precision, y[1] _AT_IMPORT, y[2] 1 when
                     get_execute_ctx() works in a thread running a copy of the
                     context, y[3] the same through asyncio.to_thread, y[4]
                     _INSIDE (set by mode 1 in an earlier call, else -1)
  mode 1 (set):      sets _INSIDE to x[1] inside execute; y[4] = x[1]
  mode 2 (nested):   runs HostFrameInner through ge.testing inside execute;
                     y[0] 1 when the outer context is bound again afterwards,
                     y[1] its input count, y[2] the inner call's input count
  mode 3 (slow):     sleeps (the GIL released) then reads x[1] through
                     get_execute_ctx(); y[0] the value read, y[1] 1 when the
                     context is still this call's
  modes 4, 5, 6:     y[0] how many copies kept by earlier calls see an active
                     execute context (must be 0), y[1] how many see none;
                     then 4 keeps a copy in which another ContextVar was set
                     (its mapping shares parts of the op's Context's),
                     5 keeps a plain copy, 6 keeps nothing
"""
import asyncio
import contextvars
import decimal
import threading
import time

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

# Set in the main context at import, before the op's context is made: seen by execute.
_AT_IMPORT = contextvars.ContextVar("frame_ctx.at_import")
_AT_IMPORT.set(7)
decimal.getcontext().prec = 11
# Many ContextVars, so that the context's mapping has sub-nodes a copy can share.
_MANY = [contextvars.ContextVar(f"frame_ctx.many{i}") for i in range(40)]
for _i, _v in enumerate(_MANY):
    _v.set(_i)
_INSIDE = contextvars.ContextVar("frame_ctx.inside", default=-1.0)
_OTHER = contextvars.ContextVar("frame_ctx.other")
_copies = []


def _active(run):
    try:
        run(get_execute_ctx)
    except RuntimeError as e:
        if "only available inside" in str(e) or "expired" in str(e):
            return False
        raise
    return True


def _in_thread_with_copy():
    seen = []
    copy = contextvars.copy_context()
    t = threading.Thread(target=lambda: seen.append(copy.run(lambda: get_execute_ctx().get_input_num())))
    t.start()
    t.join()
    return 1.0 if seen == [1] else 0.0


def _to_thread():
    async def main():
        return await asyncio.to_thread(lambda: get_execute_ctx().get_input_num())
    return 1.0 if asyncio.run(main()) == 1 else 0.0


@register_op(op_type="HostFrameCtx")
def frame_ctx(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op(op_type="HostFrameInner")
def frame_inner(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


_inner_inputs = []


@register_op_impl(op_type="HostFrameInner")
class FrameInner:
    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        _inner_inputs.append(ctx.get_input_num())
        ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)


@register_op_impl(op_type="HostFrameCtx")
class FrameCtx:
    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        src = x.data.cast("B").cast("f")
        mode, value = int(src[0]), src[1]
        y = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        out = y.data.cast("B").cast("f")
        for i in range(len(out)):
            out[i] = 0.0
        if mode == 0:
            out[0] = decimal.getcontext().prec
            out[1] = _AT_IMPORT.get(-1)
            out[2] = _in_thread_with_copy()
            out[3] = _to_thread()
            out[4] = _INSIDE.get()
        elif mode == 1:
            _INSIDE.set(value)
            out[4] = value
        elif mode == 2:
            from ge.graph import DataType
            from ge.testing import host_tensor, run_execute
            run_execute("HostFrameInner", [host_tensor([1.0, 2.0], DataType.DT_FLOAT)])
            after = get_execute_ctx()
            out[0] = 1.0 if after is ctx else 0.0
            out[1] = after.get_input_num()
            out[2] = _inner_inputs[-1]
        elif mode == 3:
            time.sleep(0.05)
            now = get_execute_ctx()
            out[0] = now.get_input_tensor(0).data.cast("B").cast("f")[1]
            out[1] = 1.0 if now is ctx else 0.0
        elif mode in (4, 5, 6):
            # Copies kept by earlier calls: none may see an active context.
            active = sum(1 for c in _copies if _active(c.run))
            out[0] = active
            out[1] = len(_copies) - active
            if mode == 4:
                changed = contextvars.copy_context()
                changed.run(_OTHER.set, value)
                _copies.append(changed)
            elif mode == 5:
                _copies.append(contextvars.copy_context())
