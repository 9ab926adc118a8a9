"""Schema-bound execute through ge.testing.run_execute (the host's dispatch code):
argument binding, Tensor.data, lifetime of borrowed objects, context scoping
(share/docs/plugin-authors.md). Plain python3, no host."""
import contextvars
import ctypes
import struct
from typing import List, Optional, Tuple

import pytest

import ge.custom_op
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType, Format
from ge.runtime import ExpandDimsType, Shape, StorageFormat, StorageShape, Tensor, TensorDesc
from ge.testing import HostTensor, host_tensor, run_execute

EXPIRED = "Borrowed native object has expired"


def f32(*values, shape=None):
    return host_tensor(list(values), DataType.DT_FLOAT, shape)


def define_unary(op_type, execute, out_dtype=None, mutates=False):
    """Registers op_type(x) -> TensorDesc with ``execute`` (a function of (self, x));
    ``mutates``: the output aliases x (mutates_args), so x is writable in execute."""
    @register_op(op_type=op_type, mutates_args=("x",) if mutates else ())
    def proto(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape.storage_shape.dims, out_dtype or x.data_type)

    return register_op_impl(op_type=op_type)(type("Impl", (), {"execute": execute}))


def alloc_like(x):
    """Allocates output 0 like ``x``: run_execute, like the host, requires every
    output to be allocated with infer_meta's dtype and shape."""
    return get_execute_ctx().malloc_output_tensor(0, x.storage_shape.dims, x.data_type)


def expired(fn):
    with pytest.raises(RuntimeError) as info:
        fn()
    assert EXPIRED in str(info.value)


# ---- exports -------------------------------------------------------------------------------

API_CUSTOM_OP = [
    "register_op", "register_op_impl", "get_execute_ctx", "get_compile_ctx", "get_compile_platform_info",
    "get_declare_launch_args_ctx", "get_registered_op_impls", "get_registered_op_impl_dicts",
    "get_registered_op_impl_by_descriptor_key", "clear_registered_op_impls", "EagerOpExecutionContext",
    "OpCompileContext", "CompilePlatformInfo", "AnnotatedArgsContext", "AnnotatedKernelArgs",
    "AnnotatedKernelLaunchInfo", "WorkspaceAddr", "InferMetaContext", "BaseCustomOp", "EagerExecuteOp",
]


def test_custom_op_all_is_exactly_the_api_list():
    assert sorted(ge.custom_op.__all__) == sorted(API_CUSTOM_OP)
    assert len(ge.custom_op.__all__) == len(set(ge.custom_op.__all__))
    for name in API_CUSTOM_OP:
        assert getattr(ge.custom_op, name) is not None


def test_custom_op_unknown_attribute_is_attribute_error():
    with pytest.raises(AttributeError):
        ge.custom_op.no_such_thing
    with pytest.raises(AttributeError):
        getattr(ge.custom_op, "get_infer_ctx")
    assert not hasattr(ge.custom_op, "register_kernel")


# ---- binding -------------------------------------------------------------------------------

def test_required_optional_and_dynamic_inputs_are_bound_in_ir_order():
    seen = []

    @register_op(op_type="Bind")
    def proto(x: TensorDesc, opt: Optional[TensorDesc], xs: List[TensorDesc]) -> TensorDesc:
        return x

    @register_op_impl(op_type="Bind")
    class Impl:
        def execute(self, x: Tensor, opt: Optional[Tensor], xs: List[Tensor]) -> None:
            def vals(t):
                return t.data.tolist()
            seen.append((type(x), vals(x), None if opt is None else (type(opt), vals(opt)),
                         type(xs), [(type(t), vals(t)) for t in xs]))
            assert get_execute_ctx().get_input_num() == 1 + (opt is not None) + len(xs)
            alloc_like(x)

    run_execute("Bind", [f32(1.0), None, [f32(2.0), f32(3.0), f32(4.0)]])
    run_execute("Bind", [f32(1.0), f32(9.0), [f32(5.0)]])
    run_execute("Bind", [f32(1.0), None, []])
    assert seen == [
        (Tensor, [1.0], None, list, [(Tensor, [2.0]), (Tensor, [3.0]), (Tensor, [4.0])]),
        (Tensor, [1.0], (Tensor, [9.0]), list, [(Tensor, [5.0])]),
        (Tensor, [1.0], None, list, []),
    ]


def test_ctx_get_input_tensor_follows_the_flattened_instances():
    seen = {}

    @register_op(op_type="Flat")
    def proto(xs: List[TensorDesc], y: TensorDesc) -> TensorDesc:
        return y

    @register_op_impl(op_type="Flat")
    class Impl:
        def execute(self, xs: List[Tensor], y: Tensor) -> None:
            ctx = get_execute_ctx()
            seen["values"] = [ctx.get_input_tensor(i).data.tolist() for i in range(ctx.get_input_num())]
            with pytest.raises(RuntimeError, match=r"input index 3 out of range: the node has 3 input instance\(s\)"):
                ctx.get_input_tensor(ctx.get_input_num())
            # an output not allocated yet is an error (no longer None)
            with pytest.raises(RuntimeError, match="output 0 is unavailable: allocate it first"):
                ctx.get_output_tensor(0)
            y_out = alloc_like(y)
            seen["out_after"] = ctx.get_output_tensor(0).addr == y_out.addr

    run_execute("Flat", [[f32(1.0), f32(2.0)], f32(3.0)])
    assert seen == {"values": [[1.0], [2.0], [3.0]], "out_after": True}


def test_ctx_ir_indexed_input_getters():
    seen = {}

    @register_op(op_type="IrGet")
    def proto(x: TensorDesc, opt: Optional[TensorDesc], xs: List[TensorDesc]) -> TensorDesc:
        return x

    @register_op_impl(op_type="IrGet")
    class Impl:
        def execute(self, x: Tensor, opt: Optional[Tensor], xs: List[Tensor]) -> None:
            ctx = get_execute_ctx()
            seen["required"] = ctx.get_required_input_tensor(0).data.tolist()
            seen["optional_absent"] = ctx.get_optional_input_tensor(1)
            seen["dynamic_num"] = ctx.get_dynamic_input_num(2)
            seen["dynamic"] = [ctx.get_dynamic_input_tensor(2, i).data.tolist()
                               for i in range(ctx.get_dynamic_input_num(2))]
            with pytest.raises(RuntimeError, match="required input 1 is unavailable"):
                ctx.get_required_input_tensor(1)
            with pytest.raises(RuntimeError, match="dynamic input 2 has no instance 5"):
                ctx.get_dynamic_input_tensor(2, 5)
            alloc_like(x)

    run_execute("IrGet", [f32(1.0), None, [f32(2.0), f32(3.0)]])
    assert seen == {"required": [1.0], "optional_absent": None, "dynamic_num": 2,
                    "dynamic": [[2.0], [3.0]]}


ALL_ATTRS = dict(
    i=-7, f=0.1, b=True, s="héllo", dt=DataType.DT_BF16, li=[1, -2, 3], lf=[0.5, 0.25], lb=[True, False],
    ls=["a", "", "c"], ldt=[DataType.DT_INT8, DataType.DT_DOUBLE], lli=[[1, 2], [], [3]],
)


def _define_all_attrs(seen):
    @register_op(op_type="Attrs")
    def proto(x: TensorDesc, *, i: int, f: float, b: bool, s: str, dt: DataType, li: List[int],
              lf: List[float], lb: List[bool], ls: List[str], ldt: List[DataType], lli: List[List[int]],
              d_i: int = 5, d_f: float = 2.5, d_b: bool = False, d_s: str = "dflt",
              d_dt: DataType = DataType.DT_UINT16, d_li: List[int] = [9], d_lf: List[float] = [1.5],
              d_lb: List[bool] = [False, True], d_ls: List[str] = ["z"],
              d_ldt: List[DataType] = [DataType.DT_BOOL], d_lli: List[List[int]] = [[4], [5, 6]]) -> TensorDesc:
        return x

    @register_op_impl(op_type="Attrs")
    class Impl:
        def execute(self, x: Tensor, *, i: int, f: float, b: bool, s: str, dt: DataType, li: List[int],
                    lf: List[float], lb: List[bool], ls: List[str], ldt: List[DataType], lli: List[List[int]],
                    d_i: int, d_f: float, d_b: bool, d_s: str, d_dt: DataType, d_li: List[int],
                    d_lf: List[float], d_lb: List[bool], d_ls: List[str], d_ldt: List[DataType],
                    d_lli: List[List[int]]) -> None:
            seen.update(locals())
            del seen["self"], seen["x"]
            alloc_like(x)


def test_all_attribute_kinds_are_bound_as_keywords():
    seen = {}
    _define_all_attrs(seen)
    run_execute("Attrs", [f32(0.0)], ALL_ATTRS)
    expected = dict(ALL_ATTRS, f=struct.unpack("f", struct.pack("f", 0.1))[0])  # stored as float32
    for name, value in expected.items():
        assert seen[name] == value, name
    assert type(seen["i"]) is int and type(seen["f"]) is float and type(seen["b"]) is bool
    assert type(seen["s"]) is str
    assert isinstance(seen["dt"], DataType)
    assert all(isinstance(d, DataType) for d in seen["ldt"])
    assert all(type(v) is bool for v in seen["lb"])
    assert all(type(v) is float for v in seen["lf"])
    assert all(type(r) is list for r in seen["lli"])


def test_attribute_defaults_are_applied():
    seen = {}
    _define_all_attrs(seen)
    run_execute("Attrs", [f32(0.0)], ALL_ATTRS)
    assert {k: v for k, v in seen.items() if k.startswith("d_")} == dict(
        d_i=5, d_f=2.5, d_b=False, d_s="dflt", d_dt=DataType.DT_UINT16, d_li=[9], d_lf=[1.5], d_lb=[False, True],
        d_ls=["z"], d_ldt=[DataType.DT_BOOL], d_lli=[[4], [5, 6]])
    assert isinstance(seen["d_dt"], DataType)


def test_given_values_override_defaults():
    seen = {}
    _define_all_attrs(seen)
    run_execute("Attrs", [f32(0.0)], dict(ALL_ATTRS, d_i=-1, d_ls=[], d_lli=[[0]]))
    assert seen["d_i"] == -1 and seen["d_ls"] == [] and seen["d_lli"] == [[0]]


@pytest.mark.parametrize("name,bad", [("i", True), ("i", 1.0), ("f", 1), ("b", 1), ("s", b"x"), ("dt", 0),
                                      ("li", (1, 2)), ("li", [1, "2"]), ("lb", [1]), ("lli", [1])])
def test_attribute_of_the_wrong_type_is_type_error(name, bad):
    _define_all_attrs({})
    with pytest.raises(TypeError):
        run_execute("Attrs", [f32(0.0)], dict(ALL_ATTRS, **{name: bad}))


def test_missing_required_attribute_is_type_error():
    _define_all_attrs({})
    attrs = dict(ALL_ATTRS)
    del attrs["s"]
    with pytest.raises(TypeError):
        run_execute("Attrs", [f32(0.0)], attrs)


def test_execute_returning_non_none_is_type_error():
    def execute(self, x: Tensor) -> None:
        return 42

    define_unary("RetVal", execute)
    with pytest.raises(TypeError) as info:
        run_execute("RetVal", [f32(1.0)])
    assert "execute must return None" in str(info.value)


def test_exception_raised_by_execute_propagates_unchanged():
    class Boom(Exception):
        pass

    def execute(self, x: Tensor) -> None:
        raise Boom("kaboom 17")

    define_unary("Raises", execute)
    with pytest.raises(Boom, match="kaboom 17"):
        run_execute("Raises", [f32(1.0)])


# ---- Tensor.data -----------------------------------------------------------------------------

FORMATS = [
    (DataType.DT_FLOAT, "f", 4), (DataType.DT_FLOAT16, "e", 2), (DataType.DT_DOUBLE, "d", 8),
    (DataType.DT_INT8, "b", 1), (DataType.DT_INT16, "h", 2), (DataType.DT_INT32, "i", 4),
    (DataType.DT_INT64, "q", 8), (DataType.DT_UINT8, "B", 1), (DataType.DT_UINT16, "H", 2),
    (DataType.DT_UINT32, "I", 4), (DataType.DT_UINT64, "Q", 8), (DataType.DT_BOOL, "?", 1),
]


@pytest.mark.parametrize("dtype,fmt,itemsize", FORMATS, ids=lambda v: getattr(v, "name", str(v)))
def test_tensor_data_format_and_shape_per_dtype(dtype, fmt, itemsize):
    seen = {}

    def execute(self, x: Tensor) -> None:
        mv = x.data
        seen.update(type=type(mv), format=mv.format, itemsize=mv.itemsize, shape=mv.shape, ndim=mv.ndim,
                    contiguous=mv.c_contiguous, nbytes=mv.nbytes, size=x.size, readonly=mv.readonly,
                    first=struct.unpack("<" + mv.format, mv.tobytes()[:mv.itemsize])[0])
        get_execute_ctx().malloc_output_tensor(0, x.storage_shape.dims, x.data_type)

    define_unary("Fmt", execute)
    count = 6
    values = [True] * count if dtype == DataType.DT_BOOL else list(range(1, count + 1))
    run_execute("Fmt", [host_tensor(values, dtype, [2, 3])])
    assert seen["type"] is memoryview
    assert seen["format"] == fmt and seen["itemsize"] == itemsize
    assert seen["shape"] == (2, 3) and seen["ndim"] == 2 and seen["contiguous"]
    assert seen["nbytes"] == seen["size"] == count * itemsize
    assert seen["readonly"] is True  # x is not in mutates_args
    assert seen["first"] == (True if dtype == DataType.DT_BOOL else 1)


def test_tensor_data_bfloat16_is_plain_bytes():
    seen = {}

    def execute(self, x: Tensor) -> None:
        mv = x.data
        seen.update(format=mv.format, itemsize=mv.itemsize, shape=mv.shape, raw=mv.tobytes())
        alloc_like(x)

    define_unary("Bf16", execute)
    raw = bytes(range(12))
    run_execute("Bf16", [HostTensor(raw, [2, 3], DataType.DT_BF16)])
    assert seen == {"format": "B", "itemsize": 1, "shape": (2, 6), "raw": raw}


def test_tensor_data_scalar_tensor():
    seen = {}

    def execute(self, x: Tensor) -> None:
        seen.update(shape=x.data.shape, value=x.data.tolist())
        alloc_like(x)

    define_unary("Scalar", execute)
    run_execute("Scalar", [host_tensor([2.5], DataType.DT_FLOAT, [])])
    assert seen == {"shape": (), "value": 2.5}


def test_tensor_data_is_zero_copy():
    seen = {}

    def execute(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.storage_shape.dims, x.data_type)
        a, b = x.data, x.data
        a[1] = 42.0
        seen["shared"] = b[1] == 42.0
        seen["addr"] = ctypes.addressof(ctypes.c_char.from_buffer(a)) == x.addr
        out = y.data
        seen["out_addr"] = ctypes.addressof(ctypes.c_char.from_buffer(out)) == y.addr
        for i, v in enumerate(x.data.tolist()):
            out[i] = v * 2

    define_unary("ZeroCopy", execute, mutates=True)  # x is writable: mutates_args names it
    (y,) = run_execute("ZeroCopy", [f32(1.0, 2.0, 3.0)])
    assert seen == {"shared": True, "addr": True, "out_addr": True}
    assert y.tolist() == [2.0, 84.0, 6.0]
    assert y.shape == [3] and y.data_type == DataType.DT_FLOAT


def test_tensor_metadata():
    seen = {}

    def execute(self, x: Tensor) -> None:
        seen.update(size=x.size, shape_size=x.shape_size, storage=x.storage_shape.dims, origin=x.origin_shape.dims,
                    shape=type(x.shape), data_type=x.data_type, addr=x.addr != 0)
        alloc_like(x)

    define_unary("Meta", execute)
    run_execute("Meta", [host_tensor([1, 2, 3, 4, 5, 6], DataType.DT_INT16, [3, 2])])
    assert seen == dict(size=12, shape_size=6, storage=[3, 2], origin=[3, 2], shape=StorageShape,
                        data_type=DataType.DT_INT16, addr=True)


def test_array_interface_version_3():
    seen = {}

    def execute(self, x: Tensor) -> None:
        seen.update(x.__array_interface__)
        seen["addr"] = x.addr
        alloc_like(x)

    define_unary("ArrIf", execute)
    run_execute("ArrIf", [f32(1.0, 2.0, 3.0, 4.0, shape=[2, 2])])
    assert seen["version"] == 3
    assert tuple(seen["shape"]) == (2, 2)
    assert seen["typestr"] == "<f4"
    assert seen["data"] == (seen["addr"], True)  # read-only: x is not in mutates_args
    assert seen.get("strides") is None
    seen.clear()
    define_unary("ArrIfMut", execute, mutates=True)
    run_execute("ArrIfMut", [f32(1.0, 2.0, 3.0, 4.0, shape=[2, 2])])
    assert seen["data"] == (seen["addr"], False)


# ---- lifetime ---------------------------------------------------------------------------------

def _stash_everything(stash):
    def execute(self, x: Tensor, xs: List[Tensor]) -> None:
        ctx = get_execute_ctx()
        y = ctx.malloc_output_tensor(0, [1], DataType.DT_FLOAT)
        stash.update(x=x, listed=xs[0], shape=x.shape, storage_shape=x.storage_shape, origin=x.origin_shape,
                     format=x.format, ctx=ctx, y=y, data=x.data, ydata=y.data, ws=ctx.malloc_workspace_buffer(8),
                     copied=contextvars.copy_context())
        if stash.get("raise"):
            raise KeyError("after stashing")

    @register_op(op_type="Stash")
    def proto(x: TensorDesc, xs: List[TensorDesc]) -> TensorDesc:
        return TensorDesc([1], DataType.DT_FLOAT)

    register_op_impl(op_type="Stash")(type("Impl", (), {"execute": execute}))


def _assert_all_expired(st):
    expired(lambda: st["x"].data_type)
    expired(lambda: st["x"].size)
    expired(lambda: st["x"].addr)
    expired(lambda: st["x"].data)
    expired(lambda: st["x"].__array_interface__)
    expired(lambda: st["listed"].shape)
    expired(lambda: st["shape"].origin_shape)
    expired(lambda: st["shape"].set_origin_shape([1]))
    expired(lambda: st["storage_shape"].dims)
    expired(lambda: st["storage_shape"].set_dim(0, 1))
    expired(lambda: st["origin"].get_dim(0))
    expired(lambda: st["format"].storage_format)
    expired(lambda: st["ctx"].get_input_num())
    expired(lambda: st["ctx"].get_input_tensor(0))
    expired(lambda: st["ctx"].malloc_output_tensor(0, [1], DataType.DT_FLOAT))
    expired(lambda: st["ctx"].malloc_workspace(4))
    expired(lambda: st["ctx"].malloc_workspace_buffer(4))
    expired(lambda: st["y"].data)
    for key in ("data", "ydata", "ws"):
        with pytest.raises(ValueError, match="released"):
            st[key][0]
    with pytest.raises(RuntimeError):
        st["copied"].run(get_execute_ctx)


def test_every_borrowed_object_expires_after_run_execute_returns():
    st = {}
    _stash_everything(st)
    run_execute("Stash", [f32(1.0, 2.0), [f32(3.0)]])
    _assert_all_expired(st)


def test_borrowed_objects_expire_when_execute_raises():
    st = {"raise": True}
    _stash_everything(st)
    with pytest.raises(KeyError, match="after stashing"):
        run_execute("Stash", [f32(1.0, 2.0), [f32(3.0)]])
    _assert_all_expired(st)


def test_expired_objects_repr_does_not_crash():
    st = {}
    _stash_everything(st)
    run_execute("Stash", [f32(1.0), [f32(2.0)]])
    for key in ("x", "shape", "storage_shape", "ctx"):
        assert isinstance(repr(st[key]), str)


def test_get_execute_ctx_outside_execute_is_runtime_error():
    with pytest.raises(RuntimeError):
        get_execute_ctx()


def test_get_execute_ctx_outside_after_a_run_is_runtime_error():
    def execute(self, x: Tensor) -> None:
        alloc_like(x)

    define_unary("Once", execute)
    run_execute("Once", [f32(1.0)])
    with pytest.raises(RuntimeError):
        get_execute_ctx()


def test_nested_scopes_restore_the_outer_binding():
    seen = {}

    @register_op(op_type="Inner")
    def inner_proto(x: TensorDesc) -> TensorDesc:
        return x

    @register_op_impl(op_type="Inner")
    class Inner:
        def execute(self, x: Tensor) -> None:
            ctx = get_execute_ctx()
            seen["inner_inputs"] = ctx.get_input_num()
            seen["inner_ctx"] = ctx
            alloc_like(x)

    @register_op(op_type="Outer")
    def outer_proto(a: TensorDesc, b: TensorDesc) -> TensorDesc:
        return a

    @register_op_impl(op_type="Outer")
    class Outer:
        def execute(self, a: Tensor, b: Tensor) -> None:
            before = get_execute_ctx()
            run_execute("Inner", [f32(5.0)])
            after = get_execute_ctx()
            seen["outer_inputs_after"] = after.get_input_num()
            seen["same_ctx"] = after is before
            seen["outer_tensor_alive"] = a.data.tolist()
            expired(lambda: seen["inner_ctx"].get_input_num())
            seen["inner_expired_inside_outer"] = True
            alloc_like(a)

    run_execute("Outer", [f32(1.0), f32(2.0)])
    assert seen["inner_inputs"] == 1
    assert seen["outer_inputs_after"] == 2
    assert seen["same_ctx"] is True
    assert seen["outer_tensor_alive"] == [1.0]
    assert seen["inner_expired_inside_outer"] is True
    with pytest.raises(RuntimeError):
        get_execute_ctx()


def test_copied_context_sees_the_binding_only_while_execute_runs():
    seen = {}

    def execute(self, x: Tensor) -> None:
        copied = contextvars.copy_context()
        seen["copied"] = copied
        seen["inside"] = copied.run(lambda: get_execute_ctx().get_input_num())
        alloc_like(x)

    define_unary("Copy", execute)
    run_execute("Copy", [f32(1.0)])
    assert seen["inside"] == 1
    with pytest.raises(RuntimeError):
        seen["copied"].run(get_execute_ctx)


# ---- malloc_output_tensor / make_output_ref_input / malloc_workspace ---------------------------

def test_malloc_output_tensor_index_out_of_range_is_runtime_error():
    seen = {}

    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        with pytest.raises(RuntimeError, match=r"malloc_output_tensor\(1\): output index 1 out of range: "
                                               r"the node has 1 output\(s\)"):
            ctx.malloc_output_tensor(1, [1], DataType.DT_FLOAT)
        with pytest.raises(RuntimeError, match=r"output index 1 out of range: the node has 1 output instance\(s\)"):
            ctx.get_output_tensor(1)
        seen["ok"] = True
        alloc_like(x)

    define_unary("OutIdx", execute)
    run_execute("OutIdx", [f32(1.0)])
    assert seen == {"ok": True}


def test_malloc_output_tensor_twice_is_runtime_error():
    seen = {}

    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        y = ctx.malloc_output_tensor(0, [1], DataType.DT_FLOAT)
        with pytest.raises(RuntimeError):
            ctx.malloc_output_tensor(0, [1], DataType.DT_FLOAT)
        seen["first_still_there"] = ctx.get_output_tensor(0).addr == y.addr

    define_unary("Twice", execute)
    run_execute("Twice", [f32(1.0)])
    assert seen == {"first_still_there": True}


def test_malloc_output_tensor_bad_arguments():
    seen = {}

    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        with pytest.raises(TypeError):
            ctx.malloc_output_tensor(-1, [1], DataType.DT_FLOAT)
        with pytest.raises(TypeError):
            ctx.malloc_output_tensor(0, "1", DataType.DT_FLOAT)
        with pytest.raises(ValueError, match="output shape has 9 dims, more than the maximum dimension count 8"):
            ctx.malloc_output_tensor(0, [1] * 9, DataType.DT_FLOAT)
        with pytest.raises(RuntimeError, match=r"malloc_output_tensor\(0\): output shape \[-2\] has a negative dim"):
            ctx.malloc_output_tensor(0, [-2], DataType.DT_FLOAT)
        with pytest.raises(ValueError, match=r"must be less than DataType.DT_MAX \(29\), got 29"):
            ctx.malloc_output_tensor(0, [1], DataType.DT_MAX)
        y = ctx.malloc_output_tensor(0, StorageShape([2, 2], [4]), DataType.DT_INT8)
        seen.update(storage=y.storage_shape.dims, origin=y.origin_shape.dims, zero=y.data.tobytes())

    define_unary("BadOut", execute, DataType.DT_INT8)
    (out,) = run_execute("BadOut", [f32(1.0, 2.0, 3.0, 4.0)])
    assert seen == {"storage": [4], "origin": [2, 2], "zero": b"\0" * 4}
    assert out.shape == [4]


def test_malloc_output_tensor_with_storage_format():
    seen = {}

    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        fmt = StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_ND, ExpandDimsType("1"))
        y = ctx.malloc_output_tensor(0, [2], fmt, DataType.DT_FLOAT)  # the upstream form
        seen.update(origin_format=y.format.origin_format, storage_format=y.format.storage_format,
                    rule=y.expand_dims_type.rule, dims=y.storage_shape.dims, dtype=y.data_type,
                    same=ctx.get_output_tensor(0).addr == y.addr)

    define_unary("FmtOut", execute)
    (out,) = run_execute("FmtOut", [f32(1.0, 2.0)])
    assert seen == {"origin_format": Format.FORMAT_NCHW, "storage_format": Format.FORMAT_ND, "rule": "1",
                    "dims": [2], "dtype": DataType.DT_FLOAT, "same": True}
    assert out.shape == [2]


def test_output_not_allocated_is_runtime_error_as_in_the_host():
    def execute(self, x: Tensor) -> None:
        pass

    define_unary("NoAlloc", execute)
    with pytest.raises(RuntimeError, match="execute did not allocate output 0"):
        run_execute("NoAlloc", [f32(1.0)])


def test_make_output_ref_input_aliases_the_input():
    seen = {}

    @register_op(op_type="InPlace", mutates_args=("x",))
    def proto(x: TensorDesc) -> TensorDesc:
        return x

    @register_op_impl(op_type="InPlace")
    class Impl:
        def execute(self, x: Tensor) -> None:
            with pytest.raises(RuntimeError, match=r"make_output_ref_input\(0, 5\): input index 5 out of range: "
                                                   r"the node has 1 input\(s\)"):
                get_execute_ctx().make_output_ref_input(0, 5)
            y = get_execute_ctx().make_output_ref_input(0, 0)
            seen["same_addr"] = y.addr == x.addr
            y.data[0] = 8.0
            seen["through_input"] = x.data[0]

    (out,) = run_execute("InPlace", [f32(1.0, 2.0)])
    assert seen == {"same_addr": True, "through_input": 8.0}
    assert out.tolist() == [8.0, 2.0]


def test_malloc_workspace():
    seen = {}

    def execute(self, x: Tensor) -> None:
        ctx = get_execute_ctx()
        addr = ctx.malloc_workspace(32)  # upstream: the address, an int
        seen.update(addr_type=type(addr), addr_zero=ctypes.string_at(addr, 32) == bytes(32))
        ctypes.memmove(addr, b"wxyz", 4)
        seen["addr_back"] = ctypes.string_at(addr, 4)
        ws = ctx.malloc_workspace_buffer(32)  # the writable memoryview form
        seen.update(len=len(ws), readonly=ws.readonly, zero=bytes(ws) == bytes(32))
        ws[:4] = b"abcd"
        seen["back"] = bytes(ws[:4])
        for alloc in (ctx.malloc_workspace, ctx.malloc_workspace_buffer):
            with pytest.raises(ValueError, match="workspace size must be positive, got 0"):
                alloc(0)
            with pytest.raises(TypeError, match="workspace size must be an int, got float"):
                alloc(1.5)
        alloc_like(x)

    define_unary("Ws", execute)
    run_execute("Ws", [f32(1.0)])
    assert seen == {"addr_type": int, "addr_zero": True, "addr_back": b"wxyz",
                    "len": 32, "readonly": False, "zero": True, "back": b"abcd"}


# ---- run_execute checks what the host checks ---------------------------------------------------

def _define_scaled(seen=None):
    @register_op(op_type="Scaled")
    def proto(x: TensorDesc, *, factor: float = 2.0, mode: str = "a") -> TensorDesc:
        if seen is not None:
            seen.append(("infer_meta", factor, mode))
        return TensorDesc(x.shape.storage_shape.dims, x.data_type)

    @register_op_impl(op_type="Scaled")
    class Impl:
        def execute(self, x: Tensor, *, factor: float, mode: str) -> None:
            if seen is not None:
                seen.append(("execute", factor, mode))
            alloc_like(x)


def test_unknown_attribute_names_are_type_error_listing_the_ir_attrs():
    seen = []
    _define_scaled(seen)
    with pytest.raises(TypeError) as info:
        run_execute("Scaled", [f32(1.0)], {"factr": 3.0, "zz": 1, "mode": "b"})
    message = str(info.value)
    assert "'factr'" in message and "'zz'" in message and "'mode'" not in message.split(";")[0]
    assert "the IR's attrs: factor, mode" in message
    assert seen == []


def test_unknown_attribute_of_an_op_without_attrs():
    def execute(self, x: Tensor) -> None:
        alloc_like(x)

    define_unary("NoAttrs", execute)
    with pytest.raises(TypeError, match=r"unknown attribute\(s\) 'alpha'; the IR's attrs: \(none\)"):
        run_execute("NoAttrs", [f32(1.0)], {"alpha": 1})


def test_infer_meta_runs_before_execute_with_defaults_applied():
    seen = []
    _define_scaled(seen)
    run_execute("Scaled", [f32(1.0)], {"mode": "b"})
    assert seen == [("infer_meta", 2.0, "b"), ("execute", 2.0, "b")]


def test_infer_meta_error_propagates_and_execute_does_not_run():
    calls = []

    class Refused(Exception):
        pass

    @register_op(op_type="Picky")
    def proto(x: TensorDesc) -> TensorDesc:
        raise Refused(f"no {x.data_type.name}")

    @register_op_impl(op_type="Picky")
    class Impl:
        def execute(self, x: Tensor) -> None:
            calls.append("execute")

    with pytest.raises(Refused, match="no DT_FLOAT"):
        run_execute("Picky", [f32(1.0)])
    assert calls == []


def test_infer_meta_receives_the_inputs_shapes_and_dtypes():
    seen = []

    @register_op(op_type="SeeDescs")
    def proto(x: TensorDesc, opt: Optional[TensorDesc], xs: List[TensorDesc]) -> TensorDesc:
        seen.append((x, opt, xs))
        return x

    define = register_op_impl(op_type="SeeDescs")

    @define
    class Impl:
        def execute(self, x: Tensor, opt: Optional[Tensor], xs: List[Tensor]) -> None:
            alloc_like(x)

    run_execute("SeeDescs", [host_tensor([1, 2, 3, 4, 5, 6], DataType.DT_INT32, [2, 3]), None,
                             [f32(1.0), host_tensor([1], DataType.DT_INT8, [])]])
    assert seen == [(TensorDesc([2, 3], DataType.DT_INT32), None,
                     [TensorDesc([1], DataType.DT_FLOAT), TensorDesc([], DataType.DT_INT8)])]


def test_output_dtype_differing_from_infer_meta_is_runtime_error():
    def execute(self, x: Tensor) -> None:
        get_execute_ctx().malloc_output_tensor(0, x.storage_shape.dims, DataType.DT_INT32)

    define_unary("WrongDtype", execute)
    with pytest.raises(RuntimeError) as info:
        run_execute("WrongDtype", [f32(1.0)])
    assert "output 0 ('output0') has dtype DT_INT32, expected DT_FLOAT" in str(info.value)


def test_output_shape_differing_from_infer_meta_is_runtime_error():
    def execute(self, x: Tensor) -> None:
        get_execute_ctx().malloc_output_tensor(0, [2, 1], x.data_type)

    define_unary("WrongShape", execute)
    with pytest.raises(RuntimeError) as info:
        run_execute("WrongShape", [f32(1.0, 2.0)])
    assert "output 0 ('output0') has shape [2, 1], expected [2]" in str(info.value)


def test_second_output_not_allocated_names_its_index():
    @register_op(op_type="TwoOuts")
    def proto(x: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
        return x, x

    @register_op_impl(op_type="TwoOuts")
    class Impl:
        def execute(self, x: Tensor) -> None:
            alloc_like(x)

    with pytest.raises(RuntimeError, match="execute did not allocate output 1"):
        run_execute("TwoOuts", [f32(1.0)])


def test_dynamic_outputs_are_sized_by_infer_meta():
    seen = {}

    @register_op(op_type="Split")
    def proto(x: TensorDesc, *, parts: int) -> Tuple[TensorDesc, List[TensorDesc], TensorDesc]:
        one = TensorDesc([1], x.data_type)
        return one, [TensorDesc([i + 1], x.data_type) for i in range(parts)], one

    @register_op_impl(op_type="Split")
    class Impl:
        def execute(self, x: Tensor, *, parts: int) -> None:
            ctx = get_execute_ctx()
            seen["num"] = ctx.get_output_num()
            ctx.malloc_output_tensor(0, [1], x.data_type).data[0] = -1.0
            for i in range(parts):
                ctx.malloc_output_tensor(1 + i, [i + 1], x.data_type).data[0] = float(i)
            ctx.malloc_output_tensor(1 + parts, [1], x.data_type).data[0] = 9.0

    outs = run_execute("Split", [f32(1.0)], {"parts": 3})
    assert seen["num"] == 5
    assert [o.shape for o in outs] == [[1], [1], [2], [3], [1]]
    assert [o.tolist()[0] for o in outs] == [-1.0, 0.0, 1.0, 2.0, 9.0]
    outs = run_execute("Split", [f32(1.0)], {"parts": 0})
    assert seen["num"] == 2 and [o.tolist() for o in outs] == [[-1.0], [9.0]]


def test_dynamic_output_instance_not_allocated_is_named():
    @register_op(op_type="DynMissing")
    def proto(x: TensorDesc) -> List[TensorDesc]:
        return [x, x]

    @register_op_impl(op_type="DynMissing")
    class Impl:
        def execute(self, x: Tensor) -> None:
            alloc_like(x)

    with pytest.raises(RuntimeError) as info:
        run_execute("DynMissing", [f32(1.0)])
    assert "execute did not allocate output 1 ('output0'[1])" in str(info.value)
