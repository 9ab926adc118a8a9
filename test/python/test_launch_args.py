"""Schema-bound declare_launch_args through ge.testing.run_declare_launch_args (the
host's dispatch code): reflection, get_declare_launch_args_ctx, AnnotatedArgsContext,
AnnotatedKernelArgs, AnnotatedKernelLaunchInfo, WorkspaceAddr and every error of
share/docs/launch-args.md, binding by flattened instance index, lifetimes, signature
validation (section 5), and the axpy kernel sample's compile -> declare hand-off.
Plain python3, no host (the end-to-end runs are in test/e2e/test_ge_run_launch_args.py)."""
import contextvars
import importlib.util
import os
import shutil
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

from ge.custom_op import (AnnotatedArgsContext, AnnotatedKernelArgs, AnnotatedKernelLaunchInfo, WorkspaceAddr,
                          _host, get_compile_ctx, get_declare_launch_args_ctx, get_execute_ctx, register_op,
                          register_op_impl)
from ge.graph import DataType, Format
from ge.runtime import Tensor, TensorDesc
from ge.testing import host_tensor, run_compile, run_declare_launch_args, run_execute
from ge_test_helpers import EXPIRED, desc, expect, expired

READ_ONLY = "borrowed object is read-only"
CONSUMED = "has been consumed"
OUTSIDE = "get_declare_launch_args_ctx() is only available inside declare_launch_args ("
BIN = b"\x7fELF not loaded by ge.testing"  # declarations only record the bytes

ROOT = Path(__file__).resolve().parents[2]


def info(name="k", binary=BIN, block_dim=1, stream_id=0):
    return AnnotatedKernelLaunchInfo(kernel_name=name, kernel_bin=binary, block_dim=block_dim, stream_id=stream_id)


def define_binary(op_type, declare_fn, execute_fn=None):
    """op_type(x, y) -> z (x's shape and dtype), with ``declare_fn(self, x, y, z)``."""
    @register_op(op_type=op_type)
    def proto(x: TensorDesc, y: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape.storage_shape.dims, x.data_type)

    body = {"declare_launch_args": declare_fn}
    if execute_fn is not None:
        body["execute"] = execute_fn
    return register_op_impl(op_type=op_type)(type("Impl", (), body))


def run_body(body, stream_id=0, x=(2, 3), y=(2, 3)):
    """Run ``body(ctx, x, y, z)`` as the declare_launch_args of a two-input op; returns the plan."""
    def declare(self, x: Tensor, y: Tensor, z: Tensor) -> None:
        body(get_declare_launch_args_ctx(), x, y, z)

    define_binary("Body", declare)
    return run_declare_launch_args("Body", [desc(x), desc(y)], stream_id=stream_id)


def launch_simple(ctx, x, y, z, name="k"):
    args = ctx.create_kernel_args()
    args.append_input(0, x)
    args.append_input(1, y)
    args.append_output(0, z)
    ctx.add_launch(info(name, stream_id=ctx.get_stream_id()), args)


# ---- reflection and getters -----------------------------------------------------------------

def test_declare_launch_args_is_reflected_as_annotated_args():
    @register_op_impl(op_type="OnlyDecl")
    class OnlyDecl:
        def declare_launch_args(self) -> None:
            pass

    assert OnlyDecl.__ge_op_impl_descriptor__.interfaces == ("annotated_args",)

    @register_op_impl(op_type="ExecDecl")
    class ExecDecl:
        def declare_launch_args(self) -> None:
            pass

        def execute(self) -> None:
            pass

    assert ExecDecl.__ge_op_impl_descriptor__.interfaces == ("eager_execute", "annotated_args")

    @register_op_impl(op_type="NoDecl")
    class NoDecl:
        def execute(self) -> None:
            pass

    assert "annotated_args" not in NoDecl.__ge_op_impl_descriptor__.interfaces


def test_getter_fails_outside_declare_launch_args():
    expect(RuntimeError, get_declare_launch_args_ctx, OUTSIDE)


def test_getter_fails_inside_execute_and_compile():
    seen = {}

    @register_op(op_type="Other")
    def proto(x: TensorDesc) -> TensorDesc:
        return x

    @register_op_impl(op_type="Other")
    class Impl:
        def compile(self, x: Tensor, y: Tensor) -> None:
            try:
                get_declare_launch_args_ctx()
                seen["compile"] = "available"
            except RuntimeError as e:
                seen["compile"] = str(e)

        def execute(self, x: Tensor) -> None:
            try:
                get_declare_launch_args_ctx()
                seen["execute"] = "available"
            except RuntimeError as e:
                seen["execute"] = str(e)
            get_execute_ctx().malloc_output_tensor(0, [1], DataType.DT_FLOAT)

    run_compile("Other", [desc([1])])
    run_execute("Other", [host_tensor([1.0], DataType.DT_FLOAT)])
    assert OUTSIDE in seen["compile"] and OUTSIDE in seen["execute"], seen


def test_getter_returns_the_context_and_other_getters_fail_inside():
    seen = {}

    def body(ctx, x, y, z):
        seen["same"] = get_declare_launch_args_ctx() is ctx
        seen["type"] = type(ctx)
        for name, getter in (("execute", get_execute_ctx), ("compile", get_compile_ctx)):
            try:
                getter()
                seen[name] = "available"
            except RuntimeError:
                seen[name] = "RuntimeError"
        launch_simple(ctx, x, y, z)

    run_body(body)
    assert seen == {"same": True, "type": AnnotatedArgsContext, "execute": "RuntimeError", "compile": "RuntimeError"}


def test_native_launch_classes_cannot_be_constructed():
    for cls in (AnnotatedArgsContext, AnnotatedKernelArgs, WorkspaceAddr):
        expect(TypeError, cls)


# ---- AnnotatedKernelLaunchInfo --------------------------------------------------------------

def test_launch_info_is_an_owned_constructible_value():
    raw = bytearray(b"\x7fELF-bytes")
    li = AnnotatedKernelLaunchInfo(kernel_name="kern", kernel_bin=raw, block_dim=8, stream_id=0)
    raw[:] = b"changed!!!!"
    assert (li.kernel_name, li.kernel_bin, li.block_dim, li.stream_id) == ("kern", b"\x7fELF-bytes", 8, 0)
    assert type(li.kernel_bin) is bytes
    # Usable in two declarations: it belongs to the plugin, not to a callback.
    kept = AnnotatedKernelLaunchInfo(kernel_name="kern", kernel_bin=BIN, block_dim=3, stream_id=0)

    def declare(self, x: Tensor, y: Tensor, z: Tensor) -> None:
        ctx = get_declare_launch_args_ctx()
        ctx.add_launch(kept, ctx.create_kernel_args())

    define_binary("KeepInfo", declare)
    for _ in range(2):
        plan = run_declare_launch_args("KeepInfo", [desc([1]), desc([1])])
        assert [(l["kernel_name"], l["kernel_bin"], l["block_dim"]) for l in plan["launches"]] == [("kern", BIN, 3)]
    assert kept.kernel_name == "kern" and kept.block_dim == 3


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(kernel_name="", kernel_bin=BIN, block_dim=1), "kernel_name"),
    (dict(kernel_name="k", kernel_bin=b"", block_dim=1), "kernel_bin"),
    (dict(kernel_name="k", kernel_bin=bytearray(), block_dim=1), "kernel_bin"),
    (dict(kernel_name="k", kernel_bin=BIN, block_dim=0), "block_dim"),
], ids=["empty_name", "empty_bytes", "empty_bytearray", "zero_block_dim"])
def test_launch_info_value_errors(kwargs, fragment):
    expect(ValueError, lambda: AnnotatedKernelLaunchInfo(**kwargs), fragment)


def test_launch_info_is_keyword_only():
    expect(TypeError, lambda: AnnotatedKernelLaunchInfo("k", BIN, 1, 0))


# ---- context, args, workspaces: errors ---------------------------------------------------------

def test_malloc_workspace_zero_is_value_error_and_sizes_are_recorded():
    seen = {}

    def body(ctx, x, y, z):
        seen["zero"] = expect(ValueError, lambda: ctx.malloc_workspace(0))
        w1, w2 = ctx.malloc_workspace(64), ctx.malloc_workspace(3)
        seen.update(types=(type(w1), type(w2)), sizes=(w1.size, w2.size), indexes=(w1.index, w2.index),
                    addr_types=(type(w1.addr), type(w2.addr)))
        args = ctx.create_kernel_args()
        args.append_workspace(w2)
        args.append_workspace(w1)
        ctx.add_launch(info(), args)

    plan = run_body(body)
    assert seen["types"] == (WorkspaceAddr, WorkspaceAddr)
    assert seen["sizes"] == (64, 3) and seen["indexes"] == (0, 1)
    assert seen["addr_types"] == (int, int)
    assert plan["workspaces"] == [64, 3]  # a refused size reserved nothing
    assert plan["launches"][0]["args"] == [("workspace", 1), ("workspace", 0)]


@pytest.mark.parametrize("method, index, exc", [
    ("append_input", 2, IndexError), ("append_input", 100, IndexError), ("append_output", 1, IndexError),
    ("append_input", -1, TypeError), ("append_output", -1, TypeError), ("append_output", -(2 ** 70), TypeError),
    ("append_input", 0.0, TypeError), ("append_input", True, TypeError), ("append_output", "0", TypeError),
])
def test_append_tensor_index_errors(method, index, exc):
    seen = {}

    def body(ctx, x, y, z):
        args = ctx.create_kernel_args()
        seen["err"] = expect(exc, lambda: getattr(args, method)(index))
        seen["len"] = len(args)  # nothing appended by the failed call
        args.append_input(1)
        ctx.add_launch(info(), args)

    plan = run_body(body)
    assert seen["len"] == 0
    assert plan["launches"][0]["args"] == [("input", 1)]


def test_append_tensor_checks_that_the_tensor_is_that_instance():
    seen = {}

    def body(ctx, x, y, z):
        args = ctx.create_kernel_args()
        seen["input"] = expect(ValueError, lambda: args.append_input(0, y), "input instance 0")
        seen["output"] = expect(ValueError, lambda: args.append_output(0, x), "output instance 0")
        expect(TypeError, lambda: args.append_input(0, "x"))
        args.append_input(0, x)
        args.append_input(1, y)
        args.append_output(0, z)
        args.append_input(0)  # the tensor is optional
        ctx.add_launch(info(), args)

    plan = run_body(body)
    assert plan["launches"][0]["args"] == [("input", 0), ("input", 1), ("output", 0), ("input", 0)]


def test_append_scalar_negative_is_type_error_and_uint64_is_kept():
    seen = {}

    def body(ctx, x, y, z):
        args = ctx.create_kernel_args()
        seen["neg"] = expect(TypeError, lambda: args.append_scalar(-1))
        expect(TypeError, lambda: args.append_scalar(-(2 ** 64)))
        expect(TypeError, lambda: args.append_scalar(1.5))
        with pytest.raises((ValueError, OverflowError)):
            args.append_scalar(2 ** 64)  # never silently truncated
        args.append_scalar(0)
        args.append_scalar(2 ** 64 - 1)
        args.append_scalar(12345)
        ctx.add_launch(info(), args)

    plan = run_body(body)
    assert plan["launches"][0]["args"] == [("scalar", 0), ("scalar", 2 ** 64 - 1), ("scalar", 12345)]


def test_append_workspace_takes_only_a_workspace_of_this_call():
    def body(ctx, x, y, z):
        args = ctx.create_kernel_args()
        expect(TypeError, lambda: args.append_workspace(3))
        expect(TypeError, lambda: args.append_workspace(x))
        args.append_workspace(ctx.malloc_workspace(8))
        ctx.add_launch(info(), args)

    assert run_body(body)["launches"][0]["args"] == [("workspace", 0)]


def test_stream_id_and_stream_mismatch():
    seen = {}

    def body(ctx, x, y, z):
        seen["stream"] = ctx.get_stream_id()
        args = ctx.create_kernel_args()
        args.append_input(0, x)
        seen["err"] = expect(ValueError, lambda: ctx.add_launch(info(stream_id=0), args), "stream")
        seen["err2"] = expect(ValueError, lambda: ctx.add_launch(info(stream_id=4), args), "stream")
        ctx.add_launch(info(stream_id=3), args)

    plan = run_body(body, stream_id=3)
    assert seen["stream"] == 3
    assert [(l["stream_id"], l["args"]) for l in plan["launches"]] == [(3, [("input", 0)])]


def test_add_launch_argument_types():
    def body(ctx, x, y, z):
        args = ctx.create_kernel_args()
        expect(TypeError, lambda: ctx.add_launch({"kernel_name": "k"}, args))
        expect(TypeError, lambda: ctx.add_launch(info(), [0]))
        ctx.add_launch(info(), args)

    plan = run_body(body)
    assert len(plan["launches"]) == 1


def test_every_use_of_args_after_add_launch_is_consumed():
    seen = {}

    def body(ctx, x, y, z):
        args = ctx.create_kernel_args()
        args.append_input(0, x)
        ws = ctx.malloc_workspace(16)
        ctx.add_launch(info("first"), args)
        uses = {
            "append_input": lambda: args.append_input(0, x),
            "append_output": lambda: args.append_output(0, z),
            "append_workspace": lambda: args.append_workspace(ws),
            "append_scalar": lambda: args.append_scalar(1),
            "len": lambda: len(args),
            "add_launch": lambda: ctx.add_launch(info("again"), args),
        }
        for name, use in uses.items():
            try:
                use()
                seen[name] = "accepted"
            except RuntimeError as e:
                seen[name] = "consumed" if CONSUMED in str(e) else f"RuntimeError: {e}"
            except Exception as e:  # noqa: BLE001 - reported below
                seen[name] = f"{type(e).__name__}: {e}"
        # The context itself goes on: a fresh args object works.
        fresh = ctx.create_kernel_args()
        fresh.append_scalar(7)
        ctx.add_launch(info("second"), fresh)

    plan = run_body(body)
    assert seen == {k: "consumed" for k in ("append_input", "append_output", "append_workspace", "append_scalar",
                                             "len", "add_launch")}
    assert [(l["kernel_name"], l["args"]) for l in plan["launches"]] == [("first", [("input", 0)]),
                                                                         ("second", [("scalar", 7)])]


def test_args_object_cannot_be_used_in_another_declaration():
    kept = {}

    def declare(self, x: Tensor, y: Tensor, z: Tensor) -> None:
        ctx = get_declare_launch_args_ctx()
        if "args" in kept:
            expired(lambda: ctx.add_launch(info(), kept["args"]))
        kept["args"] = ctx.create_kernel_args()
        ctx.add_launch(info(), ctx.create_kernel_args())

    define_binary("OtherArgs", declare)
    run_declare_launch_args("OtherArgs", [desc([1]), desc([1])])
    run_declare_launch_args("OtherArgs", [desc([1]), desc([1])])


def test_several_launches_are_declared_in_order():
    def body(ctx, x, y, z):
        w = ctx.malloc_workspace(24)
        for i, name in enumerate(("first", "second", "third")):
            args = ctx.create_kernel_args()
            args.append_scalar(i)
            if i == 0:
                args.append_input(0, x)
                args.append_workspace(w)
            elif i == 1:
                args.append_workspace(w)
                args.append_output(0, z)
            else:
                args.append_input(1, y)
            ctx.add_launch(info(name, binary=BIN + bytes([i]), block_dim=i + 1), args)

    plan = run_body(body)
    assert [(l["kernel_name"], l["kernel_bin"], l["block_dim"], l["stream_id"], l["args"]) for l in plan["launches"]] == [
        ("first", BIN + b"\x00", 1, 0, [("scalar", 0), ("input", 0), ("workspace", 0)]),
        ("second", BIN + b"\x01", 2, 0, [("scalar", 1), ("workspace", 0), ("output", 0)]),
        ("third", BIN + b"\x02", 3, 0, [("scalar", 2), ("input", 1)]),
    ]
    assert plan["workspaces"] == [24]


def test_a_declaration_without_launch_is_runtime_error():
    def body(ctx, x, y, z):
        args = ctx.create_kernel_args()
        args.append_input(0, x)
        ctx.malloc_workspace(8)

    expect(RuntimeError, lambda: run_body(body), "no launch")


def test_non_none_return_is_type_error():
    def declare(self, x: Tensor, y: Tensor, z: Tensor) -> None:
        launch_simple(get_declare_launch_args_ctx(), x, y, z)
        return 0

    define_binary("Ret", declare)
    expect(TypeError, lambda: run_declare_launch_args("Ret", [desc([1]), desc([1])]),
           "declare_launch_args must return None")


def test_an_exception_propagates_with_its_type():
    class PluginError(Exception):
        pass

    def declare(self, x: Tensor, y: Tensor, z: Tensor) -> None:
        launch_simple(get_declare_launch_args_ctx(), x, y, z)
        raise PluginError("no kernel for you")

    define_binary("Raises", declare)
    expect(PluginError, lambda: run_declare_launch_args("Raises", [desc([1]), desc([1])]), "no kernel for you")


# ---- tensors, binding, attributes ---------------------------------------------------------------

def test_tensors_are_read_only_metadata():
    seen = {}

    def body(ctx, x, y, z):
        for label, t in (("x", x), ("z", z)):
            before = (t.storage_shape.dims, t.origin_shape.dims, t.format.storage_format, t.data_type)
            for name, call in (("storage_shape.set_dim", lambda: t.storage_shape.set_dim(0, 9)),
                               ("storage_shape.append_dim", lambda: t.storage_shape.append_dim(9)),
                               ("origin_shape.set_dim", lambda: t.origin_shape.set_dim(0, 9)),
                               ("format.set_storage_format", lambda: t.format.set_storage_format(Format.FORMAT_NHWC))):
                try:
                    call()
                    seen[f"{label}.{name}"] = "accepted"
                except RuntimeError as e:
                    seen[f"{label}.{name}"] = "read-only" if READ_ONLY in str(e) else f"RuntimeError: {e}"
            seen[f"{label}.unchanged"] = (t.storage_shape.dims, t.origin_shape.dims, t.format.storage_format,
                                          t.data_type) == before
            try:
                t.data
                seen[f"{label}.data"] = "readable"
            except RuntimeError:
                seen[f"{label}.data"] = "RuntimeError"
        launch_simple(ctx, x, y, z)

    run_body(body)
    for label in ("x", "z"):
        for name in ("storage_shape.set_dim", "storage_shape.append_dim", "origin_shape.set_dim",
                     "format.set_storage_format"):
            assert seen[f"{label}.{name}"] == "read-only", (label, name, seen)
        assert seen[f"{label}.unchanged"] is True
        assert seen[f"{label}.data"] == "RuntimeError"


def _define_binding(seen):
    @register_op(op_type="BindL")
    def proto(a: TensorDesc, xs: List[TensorDesc], opt: Optional[TensorDesc],
              *, scale: int = 1) -> Tuple[List[TensorDesc], TensorDesc]:
        return [TensorDesc([i + 1], DataType.DT_INT8) for i in range(len(xs))], TensorDesc([7], DataType.DT_INT32)

    @register_op_impl(op_type="BindL")
    class Impl:
        def declare_launch_args(self, a: Tensor, xs: List[Tensor], opt: Optional[Tensor], ys: List[Tensor],
                                s: Tensor, *, scale: int) -> None:
            def meta(t):
                return type(t), t.storage_shape.dims, t.data_type

            seen.append(dict(a=meta(a), xs_type=type(xs), xs=[meta(t) for t in xs],
                             opt=None if opt is None else meta(opt), ys_type=type(ys), ys=[meta(t) for t in ys],
                             s=meta(s), scale=scale))
            ctx = get_declare_launch_args_ctx()
            k = len(xs)
            args = ctx.create_kernel_args()
            # Flattened instance indices: a = 0, xs = 1..k, opt = k + 1; ys = 0..k-1, s = k.
            args.append_input(0, a)
            for i, x in enumerate(xs):
                args.append_input(1 + i, x)
            if opt is not None:
                args.append_input(1 + k, opt)
            for i, y in enumerate(ys):
                args.append_output(i, y)
            args.append_output(k, s)
            # Past the last instance is out of range.
            n_in = 1 + k + (opt is not None)
            expect(IndexError, lambda: args.append_input(n_in), str(n_in))
            expect(IndexError, lambda: args.append_output(k + 1))
            ctx.add_launch(info(stream_id=ctx.get_stream_id()), args)


def test_required_dynamic_optional_inputs_and_outputs_bind_by_flattened_index():
    seen = []
    _define_binding(seen)
    f, i8, i32 = DataType.DT_FLOAT, DataType.DT_INT8, DataType.DT_INT32
    p1 = run_declare_launch_args("BindL", [desc([2, 3]), [desc([4], DataType.DT_INT64), desc([5])], desc([6])],
                                 attrs={"scale": 3})
    p2 = run_declare_launch_args("BindL", [desc([1]), [desc([2])], None])
    p3 = run_declare_launch_args("BindL", [desc([1]), [], desc([9], DataType.DT_DOUBLE)])
    assert seen == [
        dict(a=(Tensor, [2, 3], f), xs_type=list, xs=[(Tensor, [4], DataType.DT_INT64), (Tensor, [5], f)],
             opt=(Tensor, [6], f), ys_type=list, ys=[(Tensor, [1], i8), (Tensor, [2], i8)], s=(Tensor, [7], i32),
             scale=3),
        dict(a=(Tensor, [1], f), xs_type=list, xs=[(Tensor, [2], f)], opt=None, ys_type=list,
             ys=[(Tensor, [1], i8)], s=(Tensor, [7], i32), scale=1),
        dict(a=(Tensor, [1], f), xs_type=list, xs=[], opt=(Tensor, [9], DataType.DT_DOUBLE), ys_type=list, ys=[],
             s=(Tensor, [7], i32), scale=1),
    ]
    assert p1["launches"][0]["args"] == [("input", 0), ("input", 1), ("input", 2), ("input", 3), ("output", 0),
                                         ("output", 1), ("output", 2)]
    assert p2["launches"][0]["args"] == [("input", 0), ("input", 1), ("output", 0), ("output", 1)]
    assert p3["launches"][0]["args"] == [("input", 0), ("input", 1), ("output", 0)]


def test_explicit_outputs_are_bound_as_given():
    seen = []
    _define_binding(seen)
    run_declare_launch_args("BindL", [desc([1]), [desc([1])], None],
                            outputs=[[desc([3], DataType.DT_BOOL)], desc([8, 8], DataType.DT_FLOAT16)])
    assert seen[0]["ys"] == [(Tensor, [3], DataType.DT_BOOL)]
    assert seen[0]["s"] == (Tensor, [8, 8], DataType.DT_FLOAT16)


# ---- lifetimes -------------------------------------------------------------------------------

def _define_stash(st):
    @register_op(op_type="StashL")
    def proto(x: TensorDesc, xs: List[TensorDesc]) -> TensorDesc:
        return x

    @register_op_impl(op_type="StashL")
    class Impl:
        def declare_launch_args(self, x: Tensor, xs: List[Tensor], y: Tensor) -> None:
            ctx = get_declare_launch_args_ctx()
            if "ctx" in st:  # objects kept from the previous declaration
                st["in_later"] = _expiry_report(st)
            ws = ctx.malloc_workspace(32)
            args = ctx.create_kernel_args()
            args.append_input(0, x)
            consumed = ctx.create_kernel_args()
            ctx.add_launch(info(), consumed)
            st.update(ctx=ctx, args=args, consumed=consumed, ws=ws, x=x, listed=xs[0], y=y, shape=x.storage_shape,
                      format=x.format, copied=contextvars.copy_context())
            if st.get("raise"):
                raise KeyError("after stashing")


def _expiry_report(st):
    """{use: "expired" | what happened} for every kept object."""
    uses = {
        "ctx.malloc_workspace": lambda: st["ctx"].malloc_workspace(8),
        "ctx.get_stream_id": lambda: st["ctx"].get_stream_id(),
        "ctx.create_kernel_args": lambda: st["ctx"].create_kernel_args(),
        "ctx.add_launch": lambda: st["ctx"].add_launch(info(), st["args"]),
        "args.append_input": lambda: st["args"].append_input(0),
        "args.append_scalar": lambda: st["args"].append_scalar(1),
        "args.len": lambda: len(st["args"]),
        "consumed.len": lambda: len(st["consumed"]),
        "ws.size": lambda: st["ws"].size,
        "ws.index": lambda: st["ws"].index,
        "x.data_type": lambda: st["x"].data_type,
        "x.storage_shape": lambda: st["x"].storage_shape,
        "listed.shape_size": lambda: st["listed"].shape_size,
        "y.data_type": lambda: st["y"].data_type,
        "shape.dims": lambda: st["shape"].dims,
        "format.storage_format": lambda: st["format"].storage_format,
    }
    report = {}
    for name, use in uses.items():
        try:
            use()
            report[name] = "usable"
        except RuntimeError as e:
            report[name] = "expired" if EXPIRED in str(e) else f"RuntimeError: {e}"
        except Exception as e:  # noqa: BLE001 - reported
            report[name] = f"{type(e).__name__}: {e}"
    try:
        st["copied"].run(get_declare_launch_args_ctx)
        report["copied_context"] = "available"
    except RuntimeError as e:
        report["copied_context"] = "outside" if OUTSIDE in str(e) else str(e)
    return report


def _all_expired():
    r = {k: "expired" for k in ("ctx.malloc_workspace", "ctx.get_stream_id", "ctx.create_kernel_args",
                                "ctx.add_launch", "args.append_input", "args.append_scalar", "args.len",
                                "consumed.len", "ws.size", "ws.index", "x.data_type", "x.storage_shape",
                                "listed.shape_size", "y.data_type", "shape.dims", "format.storage_format")}
    r["copied_context"] = "outside"
    return r


def test_every_borrowed_object_expires_after_the_declaration():
    st = {}
    _define_stash(st)
    run_declare_launch_args("StashL", [desc([2]), [desc([3])]])
    assert _expiry_report(st) == _all_expired()


def test_objects_kept_from_an_earlier_declaration_expire_in_a_later_one():
    st = {}
    _define_stash(st)
    obj = run_compile_free_instance("StashL")
    run_declare_launch_args("StashL", [desc([2]), [desc([3])]], instance=obj)
    run_declare_launch_args("StashL", [desc([4]), [desc([5])]], instance=obj)
    assert st["in_later"] == _all_expired()


def run_compile_free_instance(op_type):
    from ge.custom_op import get_registered_op_impls
    (impl,) = [d for d in get_registered_op_impls() if d.op_type == op_type]
    return impl.cls()


def test_objects_expire_when_the_declaration_raises():
    st = {"raise": True}
    _define_stash(st)
    expect(KeyError, lambda: run_declare_launch_args("StashL", [desc([2]), [desc([3])]]), "after stashing")
    assert _expiry_report(st) == _all_expired()


# ---- signature validation ---------------------------------------------------------------------

BAD_SIGNATURES = {
    "count": ("def declare_launch_args(self, x: Tensor) -> None: pass", "expected 2 positional"),
    "too_many": ("def declare_launch_args(self, x: Tensor, y: Tensor, z: Tensor, *, alpha: int) -> None: pass",
                 "expected 2 positional"),
    "variadic": ("def declare_launch_args(self, x: Tensor, y: Tensor, *args, alpha: int) -> None: pass",
                 "expected no variadic parameters, actual variadic parameter args"),
    "kwargs": ("def declare_launch_args(self, x: Tensor, y: Tensor, *, alpha: int, **kw) -> None: pass",
               "expected no variadic parameters, actual variadic parameter kw"),
    "attr_not_keyword_only": ("def declare_launch_args(self, x: Tensor, y: Tensor, alpha: int) -> None: pass",
                              "expected keyword-only attr parameter alpha, actual parameter alpha kind "
                              "POSITIONAL_OR_KEYWORD"),
    "wrong_attr_name": ("def declare_launch_args(self, x: Tensor, y: Tensor, *, beta: int) -> None: pass",
                        "expected attr name alpha"),
    "wrong_annotation": ("def declare_launch_args(self, x: List[Tensor], y: Tensor, *, alpha: int) -> None: pass",
                         "expected input parameter at index 0 annotation Tensor, actual "),
    "return_annotation": ("def declare_launch_args(self, x: Tensor, y: Tensor, *, alpha: int) -> int: pass",
                          "expected None return annotation, actual int"),
    "no_return_annotation": ("def declare_launch_args(self, x: Tensor, y: Tensor, *, alpha: int): pass",
                             "expected None return annotation, actual missing return annotation"),
}


def _bad_impl(case, ran):
    @register_op(op_type="SigBadL")
    def proto(x: TensorDesc, *, alpha: int = 1) -> TensorDesc:
        return x

    ns = {"Tensor": Tensor, "List": List, "ran": ran}
    exec(BAD_SIGNATURES[case][0].replace("pass", "ran.append(1)"), ns)
    register_op_impl(op_type="SigBadL")(type("Impl", (), {"declare_launch_args": ns["declare_launch_args"]}))


@pytest.mark.parametrize("case", sorted(BAD_SIGNATURES))
def test_invalid_declare_signature_through_ge_testing(case):
    ran = []
    _bad_impl(case, ran)
    err = expect(TypeError, lambda: run_declare_launch_args("SigBadL", [desc([1])]),
                 "invalid declare_launch_args signature for op type SigBadL, descriptor key ",
                 ":Impl:SigBadL, method declare_launch_args: expected ", BAD_SIGNATURES[case][1])
    assert ":Impl:SigBadL" in str(err)  # the descriptor key
    assert ran == []


PLUGIN = '''
from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

@register_op(op_type="LoadDecl")
def proto(x: TensorDesc, y: TensorDesc, *, alpha: int = 1) -> TensorDesc:
    return x

@register_op_impl(op_type="LoadDecl")
class LoadDeclImpl:
    DECLARE
'''
GOOD = "def declare_launch_args(self, x: Tensor, y: Tensor, out: Tensor, *, alpha: int) -> None: pass"


def test_good_declare_signature_is_collected_at_load(exec_plugin):
    before = _host.snapshot()
    exec_plugin(PLUGIN.replace("DECLARE", GOOD), "decl_plugin")
    result = _host.collect(before)
    assert [(i["op_type"], i["interfaces"]) for i in result["impls"]] == [("LoadDecl", ["annotated_args"])]


@pytest.mark.parametrize("bad, fragment", [
    ("def declare_launch_args(self, x: Tensor, y: Tensor, *, alpha: int) -> None: pass",
     "expected 3 positional input/output parameters followed by 1 keyword-only attrs, "
     "actual 3 parameters (2 positional, 1 keyword-only)"),
    ("def declare_launch_args(self, x: Tensor, y: Tensor, out: Tensor, *a, alpha: int) -> None: pass",
     "expected no variadic parameters, actual variadic parameter a"),
    ("def declare_launch_args(self, x: Tensor, y: Tensor, out: Tensor, *, beta: int) -> None: pass",
     "expected attr name alpha at index 0 (IR attrs in order: alpha), actual attr name beta"),
    ("def declare_launch_args(self, x: Tensor, y: Tensor, out: Tensor, *, alpha: int) -> bool: pass",
     "expected None return annotation, actual bool"),
], ids=["count", "variadic", "attr_name", "return_annotation"])
def test_invalid_declare_signature_fails_at_load_all_or_nothing(exec_plugin, bad, fragment):
    before = _host.snapshot()
    exec_plugin(PLUGIN.replace("DECLARE", bad), "decl_plugin")
    expect(TypeError, lambda: _host.collect(before),
           "invalid declare_launch_args signature for op type LoadDecl, descriptor key "
           "decl_plugin:LoadDeclImpl:LoadDecl, method declare_launch_args: " + fragment + " (at <decl_plugin>:")
    assert _host.snapshot() == before  # nothing registered


def test_missing_ir_is_runtime_error():
    @register_op_impl(op_type="NoIrL")
    class Impl:
        def declare_launch_args(self) -> None:
            pass

    expect(RuntimeError, lambda: run_declare_launch_args("NoIrL", []),
           "canonical IR not found for schema-bound declare_launch_args: NoIrL (descriptor key ",
           ":Impl:NoIrL)")


# ---- the axpy kernel sample: compile builds, declare declares ---------------------------------

@pytest.fixture(scope="module")
def axpy_sample():
    """The sample module, loaded from its file (registrations are redone per test)."""
    path = ROOT / "plugins" / "samples" / "axpy_kernel" / "__init__.py"
    return path.read_text(), str(path)


def _load_sample(axpy_sample):
    source, path = axpy_sample
    ns = {"__name__": "axpy_kernel_sample", "__file__": path}
    exec(compile(source, path, "exec"), ns)
    return ns


@pytest.fixture(scope="module")
def host_cores():
    return len(os.sched_getaffinity(0))


def test_sample_cache_miss_is_a_clear_error(axpy_sample):
    _load_sample(axpy_sample)
    expect(RuntimeError, lambda: run_declare_launch_args("AxpyKernelCustom", [desc([5]), desc([5])],
                                                         attrs={"alpha": 2.0}),
           "no kernel for shape [5]", "compile did not build one")


@pytest.mark.skipif(shutil.which("cc") is None, reason="the sample builds its kernel with cc")
def test_sample_compile_then_declare_with_platform_block_dim(axpy_sample, host_cores):
    _load_sample(axpy_sample)
    x = [desc([100]), desc([100])]
    host = run_compile("AxpyKernelCustom", x, attrs={"alpha": 2.0}, soc="host")
    ascend = run_compile("AxpyKernelCustom", x, attrs={"alpha": 2.0}, soc="Ascend910B1")  # 24 AI cores
    plans = {}
    for label, obj in (("host", host), ("ascend", ascend)):
        plans[label] = run_declare_launch_args("AxpyKernelCustom", x, attrs={"alpha": 2.0}, instance=obj)
        (launch,) = plans[label]["launches"]
        assert launch["kernel_name"] == "axpy_float_100"
        assert launch["kernel_bin"][:4] == b"\x7fELF"
        assert launch["args"] == [("input", 0), ("input", 1), ("output", 0), ("scalar", 100)]
        assert plans[label]["workspaces"] == []
    assert plans["host"]["launches"][0]["block_dim"] == min(host_cores, 100)
    assert plans["ascend"]["launches"][0]["block_dim"] == 24
    # Another shape or alpha than the compiled one misses the cache.
    expect(RuntimeError, lambda: run_declare_launch_args("AxpyKernelCustom", [desc([7]), desc([7])],
                                                         attrs={"alpha": 2.0}, instance=host), "[7]")
    expect(RuntimeError, lambda: run_declare_launch_args("AxpyKernelCustom", x, attrs={"alpha": 3.0}, instance=host),
           "compile did not build one")
