"""Integers as Python's builtins take them (share/docs/plugin-authors.md,
"Integers"): wherever the API takes an int (an index, a size, a dim, block_dim,
an int attribute, a dynamic output count key), an object with ``__index__``
(numpy integers, ``np.prod(...)``) is accepted; a bool (Python's or numpy's)
and a float are still refused with TypeError. Plain python3, no host."""
from typing import List

import numpy as np
import pytest

from ge.custom_op import (AnnotatedKernelLaunchInfo, get_declare_launch_args_ctx, get_execute_ctx, register_op,
                          register_op_impl)
from ge.custom_op._proto import call_infer_meta
from ge.custom_op.proto import get_registered_op_proto_by_op_type
from ge.graph import DataType
from ge.runtime import ExpandDimsType, Shape, StorageShape, Tensor, TensorDesc
from ge.testing import host_tensor, run_declare_launch_args, run_execute

NUMPY_INTS = [np.int64(2), np.int32(2), np.uint8(2), np.intp(2)]
NOT_INTS = [True, np.bool_(True), 2.0, np.float64(2.0), "2"]


@pytest.mark.parametrize("n", NUMPY_INTS, ids=lambda v: type(v).__name__)
def test_shapes_and_descs_take_numpy_dims(n):
    dims = list(np.array([n, 3]))
    assert TensorDesc(dims, DataType.DT_FLOAT).shape.storage_shape.dims == [2, 3]
    ss = StorageShape(dims, dims)
    assert ss.origin_shape.dims == [2, 3] and ss.storage_shape.dims == [2, 3]
    desc = TensorDesc([1, 1], DataType.DT_FLOAT)
    desc.shape = dims
    assert desc.shape.storage_shape.dims == [2, 3]
    ss.storage_shape.set_dim(n - 2, n + 5)  # numpy index and value
    assert ss.storage_shape.dims == [7, 3]
    assert ExpandDimsType(np.int64(1)).is_expand_index(n - 2)


@pytest.mark.parametrize("bad", NOT_INTS, ids=lambda v: type(v).__name__)
def test_bools_floats_and_strings_are_still_refused_as_dims(bad):
    with pytest.raises(TypeError):
        TensorDesc([bad, 3], DataType.DT_FLOAT)
    with pytest.raises(TypeError):
        StorageShape([bad], [bad])


def define(op_type, execute):
    @register_op(op_type=op_type)
    def proto(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape.storage_shape.dims, x.data_type)

    register_op_impl(op_type=op_type)(type("Impl", (), {"execute": execute}))


@pytest.mark.parametrize("n", NUMPY_INTS, ids=lambda v: type(v).__name__)
def test_execute_context_takes_numpy_indexes_and_sizes(n):
    seen = {}

    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        shape = x.storage_shape.dims
        ws = ctx.malloc_workspace(np.prod(shape) * n)  # the idiom of the field report
        seen["ws"] = ws
        y = ctx.malloc_output_tensor(np.int64(0), list(np.array(shape)), x.format, x.data_type)
        seen["input"] = ctx.get_input_tensor(n - n).storage_shape.dims
        y.data.cast("B")[:] = x.data.cast("B")

    define("NpIdx", execute)
    x = host_tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], DataType.DT_FLOAT, [2, 3])
    (out,) = run_execute("NpIdx", [x])
    assert out.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert seen["input"] == [2, 3]
    assert isinstance(seen["ws"], int)


@pytest.mark.parametrize("bad", NOT_INTS, ids=lambda v: type(v).__name__)
def test_execute_context_still_refuses_bools_and_floats(bad):
    errors = {}

    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        for name, call in (("workspace", lambda: ctx.malloc_workspace(bad)),
                           ("output", lambda: ctx.malloc_output_tensor(bad, [2], x.format, x.data_type)),
                           ("input", lambda: ctx.get_input_tensor(bad))):
            try:
                call()
                errors[name] = None
            except Exception as e:  # noqa: BLE001 - the type is what is checked
                errors[name] = type(e)
        ctx.malloc_output_tensor(0, [2], x.format, x.data_type)

    define("NpBad", execute)
    run_execute("NpBad", [host_tensor([1.0, 2.0], DataType.DT_FLOAT, [2])])
    assert errors == {"workspace": TypeError, "output": TypeError, "input": TypeError}


def test_launch_info_takes_numpy_block_dim_and_refuses_numpy_bool():
    info = AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin=b"\x7fELF", block_dim=np.uint32(4),
                                     stream_id=np.int64(0))
    assert (info.block_dim, info.stream_id) == (4, 0) and type(info.block_dim) is int
    for bad in (np.bool_(True), True, 4.0, np.float32(4)):
        with pytest.raises(TypeError):
            AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin=b"\x7fELF", block_dim=bad)


def test_declare_launch_args_takes_numpy_workspace_sizes_and_block_dim():
    def declare(self, x: Tensor, y: Tensor) -> None:
        ctx = get_declare_launch_args_ctx()
        args = ctx.create_kernel_args()
        args.append_workspace(ctx.malloc_workspace(np.int64(16)))
        ctx.add_launch(AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin=b"\x7fELF", block_dim=np.int16(3)), args)

    @register_op(op_type="NpDecl")
    def proto(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape.storage_shape.dims, x.data_type)

    register_op_impl(op_type="NpDecl")(type("Impl", (), {"declare_launch_args": declare}))
    plan = run_declare_launch_args("NpDecl", [TensorDesc([2], DataType.DT_FLOAT)])
    assert plan["launches"][0]["block_dim"] == 3
    assert plan["workspaces"] == [16]


def test_int_attrs_and_dynamic_output_counts_take_numpy_ints():
    @register_op(op_type="NpAttr")
    def proto(x: TensorDesc, *, n: int = 1) -> List[TensorDesc]:
        return [TensorDesc(x.shape.storage_shape.dims, x.data_type) for _ in range(2)]

    def execute(self, x: Tensor, *, n: int) -> None:
        ctx = get_execute_ctx()
        for i in range(2):
            ctx.malloc_output_tensor(i, x.storage_shape.dims, x.format, x.data_type).data.cast("B")[:] = \
                bytes(x.data.cast("B"))

    register_op_impl(op_type="NpAttr")(type("Impl", (), {"execute": execute}))
    x = TensorDesc([2], DataType.DT_FLOAT)
    got = call_infer_meta(get_registered_op_proto_by_op_type("NpAttr"), [x], {"n": 1},
                          dynamic_output_counts={np.int64(0): 2})
    assert [i for i, _ in got] == [0, 0]
    outs = run_execute("NpAttr", [host_tensor([1.0, 2.0], DataType.DT_FLOAT, [2])], attrs={"n": np.int64(3)})
    assert len(outs) == 2
    with pytest.raises(TypeError):
        run_execute("NpAttr", [host_tensor([1.0, 2.0], DataType.DT_FLOAT, [2])], attrs={"n": np.bool_(True)})
