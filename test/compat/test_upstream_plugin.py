"""Plugins written for GE run unchanged: an upstream-style plugin through ge-run,
and GE's execute / launch-args context methods through ge.testing.

``plugins/testing/compat/upstream_style.py`` uses only GE's public API
(malloc_output_tensor(index, shape, format, dtype), Tensor.addr, the platform's
NpuArch read in compile).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ge.custom_op as custom_op
from ge.custom_op import get_declare_launch_args_ctx, get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType, Format
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc
from ge.testing import host_tensor, run_declare_launch_args, run_execute

SOURCE = os.environ.get("GE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
GE_RUN = os.environ.get("GE_RUN")


@pytest.mark.skipif(not GE_RUN, reason="GE_RUN (the built ge-run) is not set")
@pytest.mark.parametrize(("soc", "npu_arch"), [("Ascend910B1", 2201.0), ("Ascend310P3", 2002.0)])
def test_upstream_style_plugin_runs_unchanged_under_ge_run(tmp_path, soc, npu_arch):
    graph = {
        "name": "compat",
        "inputs": [{"name": "x", "dtype": "float32", "shape": [4], "data": [1.0, 2.0, 3.0, 4.0]},
                   {"name": "y", "dtype": "float32", "shape": [4], "data": [10.0, 20.0, 30.0, 40.0]}],
        "nodes": [{"name": "add", "op_type": "CompatAddCustom", "inputs": ["x", "y"]}],
        "outputs": ["add:0"],
    }
    (tmp_path / "g.json").write_text(json.dumps(graph))
    out = tmp_path / "out"
    res = subprocess.run([GE_RUN, str(tmp_path / "g.json"), "--opp-path",
                          os.path.join(SOURCE, "plugins", "testing", "compat", "upstream_style.py"),
                          "--soc", soc, "--output-dir", str(out)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    z = np.load(out / "add_0.npy")
    # x + y, with the last element replaced by the NpuArch compile read for --soc.
    assert z.tolist() == [11.0, 22.0, 33.0, npu_arch]


def _register_copy_op(execute):
    @register_op(op_type="CompatCopy")
    def infer(x: TensorDesc, maybe: "Optional[TensorDesc]", many: "List[TensorDesc]") -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    register_op_impl(op_type="CompatCopy")(type("CompatCopyImpl", (), {"execute": execute}))


def _f32(values):
    return host_tensor(values, DataType.DT_FLOAT)


def test_execute_context_methods_of_ge():
    seen = {}

    def execute(self, x: Tensor, maybe: "Optional[Tensor]", many: "List[Tensor]") -> None:
        ctx = get_execute_ctx()
        fmt = StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_NCHW)
        y = ctx.malloc_output_tensor(0, x.shape, fmt, x.data_type)
        y.data.cast("B").cast("f")[:] = x.data.cast("B").cast("f")
        seen["format"] = y.storage_format
        seen["same_output"] = ctx.get_output_tensor(0).addr == y.addr
        seen["required"] = ctx.get_required_input_tensor(0).addr == x.addr
        seen["optional"] = ctx.get_optional_input_tensor(1)
        seen["dyn_num"] = ctx.get_dynamic_input_num(2)
        seen["dyn1"] = ctx.get_dynamic_input_tensor(2, 1).addr == many[1].addr
        addr = ctx.malloc_workspace(64)
        seen["workspace"] = type(addr) is int and addr != 0
        seen["stream"] = type(ctx.get_stream()) is int
        for what, call in (("bad_output", lambda: ctx.get_output_tensor(5)),
                           ("bad_input", lambda: ctx.get_input_tensor(9)),
                           ("bad_dynamic", lambda: ctx.get_dynamic_input_tensor(2, 7)),
                           ("bad_alloc", lambda: ctx.malloc_output_tensor(3, x.shape, x.format, x.data_type)),
                           ("format_as_dtype", lambda: ctx.malloc_output_tensor(0, x.shape, Format.FORMAT_NCHW)),
                           ("dtype_as_format", lambda: ctx.malloc_output_tensor(0, x.shape, x.data_type,
                                                                                x.data_type))):
            try:
                call()
                seen[what] = "no error"
            except Exception as exc:  # noqa: BLE001 - the type is what is checked
                seen[what] = type(exc).__name__

    import typing
    execute.__globals__.update(Optional=typing.Optional, List=typing.List)
    _register_copy_op(execute)
    (y,) = run_execute("CompatCopy", [_f32([1.0, 2.0]), None, [_f32([3.0, 4.0]), _f32([5.0, 6.0])]])
    assert y.tolist() == [1.0, 2.0]
    assert seen == {"format": Format.FORMAT_NCHW, "same_output": True, "required": True, "optional": None,
                    "dyn_num": 2, "dyn1": True, "workspace": True, "stream": True, "bad_output": "RuntimeError",
                    "bad_input": "RuntimeError", "bad_dynamic": "RuntimeError", "bad_alloc": "RuntimeError",
                    "format_as_dtype": "TypeError", "dtype_as_format": "TypeError"}


def test_an_output_not_yet_allocated_is_a_runtime_error():
    seen = []

    def execute(self, x: Tensor, maybe, many) -> None:
        ctx = get_execute_ctx()
        try:
            ctx.get_output_tensor(0)
        except RuntimeError as exc:
            seen.append(str(exc))
        ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)

    _register_copy_op(execute)
    run_execute("CompatCopy", [_f32([1.0]), None, []])
    assert len(seen) == 1 and "unavailable" in seen[0]


def test_workspace_addr_has_the_address_of_the_declared_workspace():
    seen = {}

    @register_op(op_type="CompatWs")
    def infer(x: TensorDesc) -> TensorDesc:
        return x

    @register_op_impl(op_type="CompatWs")
    class CompatWs:
        def declare_launch_args(self, x: Tensor, y: Tensor) -> None:
            ctx = get_declare_launch_args_ctx()
            a, b = ctx.malloc_workspace(256), ctx.malloc_workspace(16)
            seen["addrs"] = (a.addr, b.addr, a.index, b.index)
            args = ctx.create_kernel_args()
            args.append_workspace(a)
            ctx.add_launch(custom_op.AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin=b"\x7fELF", block_dim=1,
                                                               stream_id=ctx.get_stream_id()), args)

    plan = run_declare_launch_args("CompatWs", [TensorDesc([4], DataType.DT_FLOAT)])
    addr_a, addr_b, ia, ib = seen["addrs"]
    assert (ia, ib) == (0, 1)
    assert addr_a != 0 and addr_b != 0 and addr_a % 64 == 0 and abs(addr_b - addr_a) >= 256
    assert plan["workspaces"] == [256, 16]
    assert plan["launches"][0]["args"] == [("workspace", 0)]
