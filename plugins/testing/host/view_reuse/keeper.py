"""HostKeepView: keeps (or not) what execute was handed, and reports what it
finds of the previous calls' objects (test/cpp/test_host.cc,
views_kept_by_a_plugin_stay_expired). The host keeps the views of a call for
the next one only when nothing else references them (bindings/native/dispatch.h,
ExecuteFrame); whatever the plugin kept must stay expired and distinct.

x (float32, 5 elements): x[0] is the mode of this call (what to keep of it),
x[1] a value to copy. y (float32, same shape):
  y[0] objects of earlier calls seen expired (RuntimeError "expired")
  y[1] objects of earlier calls still alive (must be 0)
  y[2] 1 when x or the context is one of the objects kept earlier
  y[3] 1 when x carries an attribute set by an earlier call
  y[4] x[1], read through x
Modes: 0 keep x and the context, 1 weak references to both, 2 set an attribute
on x, 3 keep nothing, 4 keep a copy of the contextvars context.
"""
import contextvars
import weakref

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

_kept = []  # views (Tensor, EagerOpExecutionContext)
_weak = []  # weak references to views
_copies = []  # contextvars copies taken inside execute


def _expired(probe):
    try:
        probe()
    except RuntimeError as e:
        if "expired" in str(e) or "only available inside" in str(e):
            return True
        raise
    return False


def _probe(obj):
    if isinstance(obj, Tensor):
        return lambda: obj.shape
    return lambda: obj.get_input_num()


@register_op(op_type="HostKeepView")
def keep_view(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="HostKeepView")
class KeepView:
    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        src = x.data.cast("B").cast("f")
        mode = int(src[0])
        expired = alive = 0
        earlier = list(_kept) + [o for o in (w() for w in _weak) if o is not None]
        for obj in earlier:
            if _expired(_probe(obj)):
                expired += 1
            else:
                alive += 1
        for copy in _copies:
            if _expired(lambda: copy.run(get_execute_ctx)):
                expired += 1
            else:
                alive += 1
        held = any(x is o or ctx is o for o in earlier)
        y = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        out = y.data.cast("B").cast("f")
        out[0] = expired
        out[1] = alive
        out[2] = 1.0 if held else 0.0
        out[3] = 1.0 if hasattr(x, "tag") else 0.0
        out[4] = src[1]
        if mode == 0:
            _kept.extend([x, ctx])
        elif mode == 1:
            _weak.extend([weakref.ref(x), weakref.ref(ctx)])
        elif mode == 2:
            x.tag = True
        elif mode == 4:
            _copies.append(contextvars.copy_context())
