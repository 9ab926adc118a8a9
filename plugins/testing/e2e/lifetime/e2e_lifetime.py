"""Borrowed-object lifetime checks run inside ge-run (share/docs/plugin-authors.md, "Tensors and lifetimes").

Every op writes verdicts into a float32 output: 1.0 = behaves as specified,
0.0 = not. The tests read the output file and name the failing check by index
(see CHECKS_* below, in output order).

E2eStash(x)      keeps borrowed objects of its execute in module globals
E2eProbe(s)      touches what E2eStash kept (its input is E2eStash's output, so
                 it runs afterwards): every use must raise
E2eRefInput(x)   make_output_ref_input(0, 0): the output aliases x (mutates_args)
E2eWorkspace(x)  malloc_workspace
"""
import contextvars

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc

EXPIRED = "Borrowed native object has expired"


def _raises(fn, exc, *fragments):
    try:
        fn()
    except exc as e:
        return all(f in str(e) for f in fragments)
    except BaseException:
        return False
    return False


def _write(values):
    y = get_execute_ctx().malloc_output_tensor(0, StorageShape([len(values)], [len(values)]), StorageFormat(), DataType.DT_FLOAT)
    out = y.data.cast("B").cast("f")
    for i, v in enumerate(values):
        out[i] = 1.0 if v else 0.0


_STASH = {}
_WS = {}
_OUTSIDE = {"import": _raises(get_execute_ctx, RuntimeError)}

CHECKS_STASH = [
    "get_execute_ctx() works inside execute",
    "a copied context sees the active binding while execute runs",
    "x.data is readable inside execute",
    "shape views are readable inside execute",
    "Tensor.data shape matches the tensor",
]


@register_op(op_type="E2eStash")
def e2e_stash(x: TensorDesc) -> TensorDesc:
    return TensorDesc([len(CHECKS_STASH)], DataType.DT_FLOAT)


@register_op_impl(op_type="E2eStash")
class E2eStashImpl:
    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        copied = contextvars.copy_context()
        mv = x.data
        _STASH.update(tensor=x, shape=x.shape, storage_shape=x.storage_shape, ctx=ctx, data=mv,
                      copied=copied)
        _write([
            ctx.get_input_num() == 1,
            copied.run(lambda: get_execute_ctx().get_input_num()) == 1,
            mv.tolist() is not None and mv.nbytes == x.size,
            x.storage_shape.dims == x.shape.storage_shape.dims,
            list(mv.shape) == x.storage_shape.dims,
        ])


CHECKS_PROBE = [
    "kept Tensor: data_type raises RuntimeError(expired)",
    "kept Tensor: .data raises RuntimeError(expired)",
    "kept Tensor: storage_shape raises RuntimeError(expired)",
    "kept StorageShape view: origin_shape raises RuntimeError(expired)",
    "kept Shape view: dims raises RuntimeError(expired)",
    "kept Shape view: set_dim raises RuntimeError(expired)",
    "kept context: get_input_num raises RuntimeError(expired)",
    "kept context: malloc_output_tensor raises RuntimeError(expired)",
    "kept Tensor.data memoryview is released (ValueError)",
    "copied context: get_execute_ctx raises RuntimeError after the callback",
    "get_execute_ctx raises RuntimeError at import",
    "get_execute_ctx raises RuntimeError in infer_meta",
    "get_execute_ctx works in the probe's own execute",
    "E2eStash ran before the probe",
]


@register_op(op_type="E2eProbe")
def e2e_probe(s: TensorDesc) -> TensorDesc:
    _OUTSIDE["infer_meta"] = _raises(get_execute_ctx, RuntimeError)
    return TensorDesc([len(CHECKS_PROBE)], DataType.DT_FLOAT)


@register_op_impl(op_type="E2eProbe")
class E2eProbeImpl:
    def execute(self, s: Tensor) -> None:
        st = _STASH
        if not st:
            _write([False] * len(CHECKS_PROBE))
            return
        t, ctx, mv = st["tensor"], st["ctx"], st["data"]
        _write([
            _raises(lambda: t.data_type, RuntimeError, EXPIRED),
            _raises(lambda: t.data, RuntimeError, EXPIRED),
            _raises(lambda: t.storage_shape, RuntimeError, EXPIRED),
            _raises(lambda: st["shape"].origin_shape, RuntimeError, EXPIRED),
            _raises(lambda: st["storage_shape"].dims, RuntimeError, EXPIRED),
            _raises(lambda: st["storage_shape"].set_dim(0, 1), RuntimeError, EXPIRED),
            _raises(lambda: ctx.get_input_num(), RuntimeError, EXPIRED),
            _raises(lambda: ctx.malloc_output_tensor(0, StorageShape([1], [1]), StorageFormat(), DataType.DT_FLOAT), RuntimeError, EXPIRED),
            _raises(lambda: mv[0], ValueError, "released"),
            _raises(lambda: st["copied"].run(get_execute_ctx), RuntimeError),
            _OUTSIDE.get("import") is True,
            _OUTSIDE.get("infer_meta") is True,
            get_execute_ctx().get_input_num() == 1,
            True,
        ])
        _STASH.clear()


CHECKS_REF = [
    "output addr == input addr",
    "output size and dtype == input's",
    "a write through the output is seen through the input",
    "get_output_tensor(0) is the aliased tensor",
    "a write through the input is seen through the output",
]


@register_op(op_type="E2eRefInput", mutates_args=("x",))
def e2e_ref_input(x: TensorDesc) -> TensorDesc:
    if x.data_type != DataType.DT_FLOAT or x.shape.storage_shape.dims != [len(CHECKS_REF)]:
        raise TypeError(f"E2eRefInput takes float32[{len(CHECKS_REF)}]")
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="E2eRefInput")
class E2eRefInputImpl:
    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        y = ctx.make_output_ref_input(0, 0)
        xs, ys = x.data.cast("B").cast("f"), y.data.cast("B").cast("f")
        ys[1] = 7.5
        seen_in = xs[1] == 7.5
        xs[2] = -3.0
        seen_out = ys[2] == -3.0
        got = ctx.get_output_tensor(0)
        verdicts = [
            y.addr == x.addr,
            y.size == x.size and y.data_type == x.data_type,
            seen_in,
            got is not None and got.addr == x.addr,
            seen_out,
        ]
        for i, v in enumerate(verdicts):  # written through the output: x is modified in place
            ys[i] = 1.0 if v else 0.0


CHECKS_WS = [
    "malloc_workspace(100) returns an int address (GE's form)",
    "two malloc_workspace calls return distinct addresses",
    "malloc_workspace_buffer(100) has 100 bytes",
    "workspace is writable",
    "workspace is zero-filled",
    "a write reads back",
    "two workspaces do not overlap",
    "malloc_workspace(0) raises ValueError",
    "malloc_workspace_buffer(-1) raises ValueError",
    "a kept workspace memoryview is released after the callback (ValueError)",
]


@register_op(op_type="E2eWorkspace")
def e2e_workspace(x: TensorDesc) -> TensorDesc:
    return TensorDesc([len(CHECKS_WS)], DataType.DT_FLOAT)


@register_op_impl(op_type="E2eWorkspace")
class E2eWorkspaceImpl:
    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        old = _WS.pop("workspace", None)
        kept_released = _raises(lambda: old[0], ValueError, "released") if old is not None else None
        addr1, addr2 = ctx.malloc_workspace(100), ctx.malloc_workspace(100)
        ws = ctx.malloc_workspace_buffer(100)
        ws2 = ctx.malloc_workspace_buffer(100)
        zero = bytes(ws) == bytes(100)
        ws[:] = bytes(range(100))
        ws2[:] = b"\xff" * 100
        _WS["workspace"] = ws
        _write([
            type(addr1) is int and addr1 > 0,
            addr1 != addr2,
            len(ws) == 100 and ws.nbytes == 100,
            not ws.readonly,
            zero,
            bytes(ws) == bytes(range(100)),
            bytes(ws) == bytes(range(100)) and bytes(ws2) == b"\xff" * 100,
            _raises(lambda: ctx.malloc_workspace(0), ValueError),
            _raises(lambda: ctx.malloc_workspace_buffer(-1), ValueError),
            kept_released is not False,  # None on the first run (nothing kept yet)
        ])
