"""Schema-bound compile through ge.testing.run_compile (the host's dispatch code):
reflection, binding, signature checks, get_compile_ctx / get_compile_platform_info
and their errors, read-only borrowing, lifetimes, platform values against the
shipped ini files (share/docs/compile.md). Plain python3, no host."""
import configparser
import contextvars
import os
import struct
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

import ge.custom_op
from ge.custom_op import (CompilePlatformInfo, OpCompileContext, get_compile_ctx, get_compile_platform_info,
                          get_execute_ctx, register_op, register_op_impl)
from ge.graph import DataType, Format
from ge.runtime import ExpandDimsType, Tensor, TensorDesc
from ge.testing import host_tensor, run_compile, run_execute
from ge_test_helpers import EXPIRED, desc, expect, expired

READ_ONLY = "borrowed object is read-only"
OUTSIDE = "only available inside schema-bound compile"
PLATFORM_FAILED = "Failed to get platform infos"

PLATFORM_DIR = Path(__file__).resolve().parents[2] / "share" / "platform"
SHIPPED_SOCS = sorted(p.stem for p in PLATFORM_DIR.glob("*.ini"))
PLATFORM_METHODS = ("get_platform_resource", "get_platform_resource_group", "get_core_num", "get_soc_version",
                    "get_ai_core_num")


def define_unary(op_type, compile_fn, execute_fn=None):
    """op_type(x: TensorDesc) -> TensorDesc (same shape/dtype), with ``compile_fn(self, x, y)``."""
    @register_op(op_type=op_type)
    def proto(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape.storage_shape.dims, x.data_type)

    body = {"compile": compile_fn}
    if execute_fn is not None:
        body["execute"] = execute_fn
    return register_op_impl(op_type=op_type)(type("Impl", (), body))


def read_ini(soc):
    cp = configparser.ConfigParser(interpolation=None)
    cp.optionxform = str  # keys are case-sensitive (ai_core_cnt, AICPUSyncBySW)
    assert cp.read(PLATFORM_DIR / f"{soc}.ini") == [str(PLATFORM_DIR / f"{soc}.ini")]
    return cp


# ---- reflection ---------------------------------------------------------------------------

def test_capability_reflection_order_is_fixed():
    @register_op_impl(op_type="Order")
    class Impl:
        def declare_launch_args(self) -> None:
            pass

        def compile(self) -> None:
            pass

        def execute(self) -> None:
            pass

    assert Impl.__ge_op_impl_descriptor__.interfaces == ("eager_execute", "compilable", "annotated_args")

    @register_op_impl(op_type="OnlyCompile")
    class OnlyCompile:
        def compile(self) -> None:
            pass

    assert OnlyCompile.__ge_op_impl_descriptor__.interfaces == ("compilable",)


def test_inherited_compile_is_reflected_and_called():
    calls = []

    @register_op(op_type="Inh")
    def proto(x: TensorDesc) -> TensorDesc:
        return x

    class Base:
        def compile(self, x: Tensor, y: Tensor) -> None:
            calls.append((type(self).__name__, x.storage_shape.dims, y.storage_shape.dims))

    @register_op_impl(op_type="Inh")
    class Impl(Base):
        pass

    assert Impl.__ge_op_impl_descriptor__.interfaces == ("compilable",)
    obj = run_compile("Inh", [desc([2, 3])])
    assert isinstance(obj, Impl)
    assert calls == [("Impl", [2, 3], [2, 3])]


def test_staticmethod_compile_is_reflected_and_called():
    calls = []

    @register_op(op_type="Static")
    def proto(x: TensorDesc) -> TensorDesc:
        return x

    @register_op_impl(op_type="Static")
    class Impl:
        @staticmethod
        def compile(x: Tensor, y: Tensor) -> None:
            calls.append((x.storage_shape.dims, get_compile_ctx().get_option("k")))

    assert Impl.__ge_op_impl_descriptor__.interfaces == ("compilable",)
    run_compile("Static", [desc([4])], options={"k": "v"})
    assert calls == [([4], "v")]


def test_classmethod_compile_is_reflected_and_called():
    calls = []

    @register_op(op_type="ClsM")
    def proto(x: TensorDesc) -> TensorDesc:
        return x

    @register_op_impl(op_type="ClsM")
    class Impl:
        @classmethod
        def compile(cls, x: Tensor, y: Tensor) -> None:
            calls.append((cls, x.storage_shape.dims))

    assert Impl.__ge_op_impl_descriptor__.interfaces == ("compilable",)
    run_compile("ClsM", [desc([5])])
    assert calls == [(Impl, [5])]


@pytest.mark.parametrize("value", [None, 1], ids=["none", "int"])
def test_non_callable_compile_is_rejected_at_registration(value):
    Impl = type("Impl", (), {"execute": lambda self: None, "compile": value})
    expect(TypeError, lambda: register_op_impl(op_type="NotCallable")(Impl), "compile must be callable")
    assert ge.custom_op.get_registered_op_impls() == []


# ---- context scoping ------------------------------------------------------------------------

def test_getters_fail_outside_compile():
    expect(RuntimeError, get_compile_ctx, OUTSIDE)
    expect(RuntimeError, get_compile_platform_info, OUTSIDE)


def test_getters_fail_after_a_compile_and_inside_execute():
    seen = {}

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        seen["ctx"] = get_compile_ctx()

    def execute_fn(self, x: Tensor) -> None:
        for getter in (get_compile_ctx, get_compile_platform_info):
            with pytest.raises(RuntimeError) as info:
                getter()
            seen.setdefault("in_execute", []).append(OUTSIDE in str(info.value))
        get_execute_ctx().malloc_output_tensor(0, x.storage_shape.dims, x.data_type)

    define_unary("Outside", compile_fn, execute_fn)
    obj = run_compile("Outside", [desc([1])])
    assert isinstance(seen["ctx"], OpCompileContext)
    expect(RuntimeError, get_compile_ctx, OUTSIDE)
    expect(RuntimeError, get_compile_platform_info, OUTSIDE)
    run_execute("Outside", [host_tensor([1.0], DataType.DT_FLOAT)], instance=obj)
    assert seen["in_execute"] == [True, True]


def test_stale_context_and_platform_getters_all_fail_after_compile():
    st = {}

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        st["ctx"], st["plat"] = get_compile_ctx(), get_compile_platform_info()
        st["inside"] = (st["ctx"].get_option("a"), st["plat"].get_soc_version())

    define_unary("Stale", compile_fn)
    run_compile("Stale", [desc([1])], options={"a": "b"})
    assert st["inside"] == ("b", "host")
    expired(lambda: st["ctx"].get_option("a"))
    expired(lambda: st["plat"].get_platform_resource("version", "SoC_version"))
    expired(lambda: st["plat"].get_platform_resource_group("version"))
    expired(lambda: st["plat"].get_core_num())
    expired(lambda: st["plat"].get_core_num("AiCore"))
    expired(lambda: st["plat"].get_soc_version())
    expired(lambda: st["plat"].get_ai_core_num())
    # an expired object says so whatever the arguments (no argument error instead)
    expired(lambda: st["ctx"].get_option(1))
    expired(lambda: st["plat"].get_platform_resource(1, ""))
    expired(lambda: st["plat"].get_platform_resource_group(""))
    expired(lambda: st["plat"].get_core_num(5))


def test_platform_object_is_separate_from_the_context():
    seen = {}

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        ctx, plat = get_compile_ctx(), get_compile_platform_info()
        seen.update(ctx_type=type(ctx), plat_type=type(plat), same=ctx is plat,
                    ctx_has=[m for m in PLATFORM_METHODS if hasattr(ctx, m)],
                    plat_has_option=hasattr(plat, "get_option"),
                    plat_again=get_compile_platform_info() is plat)

    define_unary("Sep", compile_fn)
    run_compile("Sep", [desc([1])])
    assert seen == dict(ctx_type=OpCompileContext, plat_type=CompilePlatformInfo, same=False, ctx_has=[],
                        plat_has_option=False, plat_again=True)
    assert ge.custom_op.OpCompileContext is OpCompileContext
    assert ge.custom_op.CompilePlatformInfo is CompilePlatformInfo
    for m in PLATFORM_METHODS:
        assert not hasattr(OpCompileContext, m), m
        assert callable(getattr(CompilePlatformInfo, m)), m


def test_native_compile_classes_cannot_be_constructed():
    expect(TypeError, OpCompileContext)
    expect(TypeError, CompilePlatformInfo)


def test_nested_scopes_restore_the_outer_binding():
    seen = {}

    @register_op(op_type="InnerC")
    def inner_proto(x: TensorDesc) -> TensorDesc:
        return x

    @register_op_impl(op_type="InnerC")
    class Inner:
        def compile(self, x: Tensor, y: Tensor) -> None:
            seen["inner_ctx"], seen["inner_plat"] = get_compile_ctx(), get_compile_platform_info()
            seen["inner"] = (get_compile_ctx().get_option("who"), get_compile_platform_info().get_soc_version())

    @register_op(op_type="OuterC")
    def outer_proto(a: TensorDesc, b: TensorDesc) -> TensorDesc:
        return a

    @register_op_impl(op_type="OuterC")
    class Outer:
        def compile(self, a: Tensor, b: Tensor, y: Tensor) -> None:
            ctx, plat = get_compile_ctx(), get_compile_platform_info()
            run_compile("InnerC", [desc([7])], options={"who": "inner"}, soc="Ascend310P3")
            seen["same_after"] = (get_compile_ctx() is ctx, get_compile_platform_info() is plat)
            seen["outer_after"] = (get_compile_ctx().get_option("who"), get_compile_platform_info().get_soc_version(),
                                   a.storage_shape.dims)
            expired(lambda: seen["inner_ctx"].get_option("who"))
            expired(lambda: seen["inner_plat"].get_soc_version())
            seen["inner_expired_inside_outer"] = True

    run_compile("OuterC", [desc([1, 2]), desc([1, 2])], options={"who": "outer"}, soc="Ascend910B1")
    assert seen["inner"] == ("inner", "Ascend310P3")
    assert seen["same_after"] == (True, True)
    assert seen["outer_after"] == ("outer", "Ascend910B1", [1, 2])
    assert seen["inner_expired_inside_outer"] is True
    expect(RuntimeError, get_compile_ctx, OUTSIDE)


def test_copied_context_sees_the_binding_only_while_compile_runs():
    seen = {}

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        copied = contextvars.copy_context()
        seen["copied"] = copied
        seen["inside"] = copied.run(lambda: (get_compile_ctx().get_option("o"),
                                             get_compile_platform_info().get_soc_version()))

    define_unary("CopyC", compile_fn)
    run_compile("CopyC", [desc([1])], options={"o": "1"})
    assert seen["inside"] == ("1", "host")
    expect(RuntimeError, lambda: seen["copied"].run(get_compile_ctx), OUTSIDE)
    expect(RuntimeError, lambda: seen["copied"].run(get_compile_platform_info), OUTSIDE)


# ---- binding --------------------------------------------------------------------------------

def _define_binding(seen):
    @register_op(op_type="BindC")
    def proto(x: TensorDesc, opt: Optional[TensorDesc], xs: List[TensorDesc]) -> Tuple[TensorDesc, List[TensorDesc]]:
        return TensorDesc(x.shape.storage_shape.dims, DataType.DT_INT32), [TensorDesc([i + 1], DataType.DT_INT8)
                                                                           for i in range(len(xs))]

    @register_op_impl(op_type="BindC")
    class Impl:
        def compile(self, x: Tensor, opt: Optional[Tensor], xs: List[Tensor], y: Tensor, ys: List[Tensor]) -> None:
            def meta(t):
                return type(t), t.storage_shape.dims, t.data_type

            seen.append(dict(x=meta(x), opt=None if opt is None else meta(opt), xs_type=type(xs),
                             xs=[meta(t) for t in xs], y=meta(y), ys_type=type(ys), ys=[meta(t) for t in ys]))


def test_required_optional_dynamic_inputs_and_required_dynamic_outputs_are_bound():
    seen = []
    _define_binding(seen)
    run_compile("BindC", [desc([2, 3]), None, [desc([1], DataType.DT_INT64), desc([4], DataType.DT_FLOAT16)]])
    run_compile("BindC", [desc([5]), desc([6], DataType.DT_DOUBLE), []])
    f, i32, i8 = DataType.DT_FLOAT, DataType.DT_INT32, DataType.DT_INT8
    assert seen == [
        dict(x=(Tensor, [2, 3], f), opt=None, xs_type=list,
             xs=[(Tensor, [1], DataType.DT_INT64), (Tensor, [4], DataType.DT_FLOAT16)],
             y=(Tensor, [2, 3], i32), ys_type=list, ys=[(Tensor, [1], i8), (Tensor, [2], i8)]),
        dict(x=(Tensor, [5], f), opt=(Tensor, [6], DataType.DT_DOUBLE), xs_type=list, xs=[],
             y=(Tensor, [5], i32), ys_type=list, ys=[]),
    ]


def test_explicit_outputs_are_bound_as_given():
    seen = []
    _define_binding(seen)
    run_compile("BindC", [desc([1]), None, [desc([1])]],
                outputs=[desc([9, 9], DataType.DT_BOOL), [desc([3]), desc([4]), desc([5])]])
    assert seen[0]["y"] == (Tensor, [9, 9], DataType.DT_BOOL)
    assert [d for _, d, _ in seen[0]["ys"]] == [[3], [4], [5]]


ALL_ATTRS = dict(
    i=-7, f=0.1, b=True, s="héllo", dt=DataType.DT_BF16, li=[1, -2, 3], lf=[0.5, 0.25], lb=[True, False],
    ls=["a", "", "c"], ldt=[DataType.DT_INT8, DataType.DT_DOUBLE], lli=[[1, 2], [], [3]],
)


def test_all_attribute_kinds_from_python_are_bound_as_keywords():
    """The 11 kinds a Python value can give (VT_TENSOR comes from a graph: test/e2e)."""
    seen = {}

    @register_op(op_type="AttrsC")
    def proto(x: TensorDesc, *, i: int, f: float, b: bool, s: str, dt: DataType, li: List[int],
              lf: List[float], lb: List[bool], ls: List[str], ldt: List[DataType], lli: List[List[int]],
              d_i: int = 5, d_ls: List[str] = ["z"]) -> TensorDesc:
        return x

    @register_op_impl(op_type="AttrsC")
    class Impl:
        def compile(self, x: Tensor, y: Tensor, *, i: int, f: float, b: bool, s: str, dt: DataType,
                    li: List[int], lf: List[float], lb: List[bool], ls: List[str], ldt: List[DataType],
                    lli: List[List[int]], d_i: int, d_ls: List[str]) -> None:
            seen.update({k: v for k, v in locals().items() if k not in ("self", "x", "y", "seen")})

    run_compile("AttrsC", [desc([1])], attrs=ALL_ATTRS)
    expected = dict(ALL_ATTRS, f=struct.unpack("f", struct.pack("f", 0.1))[0], d_i=5, d_ls=["z"])
    assert seen == expected
    assert type(seen["i"]) is int and type(seen["f"]) is float and type(seen["b"]) is bool
    assert isinstance(seen["dt"], DataType) and all(isinstance(d, DataType) for d in seen["ldt"])
    assert all(type(v) is bool for v in seen["lb"]) and all(type(r) is list for r in seen["lli"])


# ---- signature validation -------------------------------------------------------------------

BAD_SIGNATURES = {
    "count": "def compile(self, x: Tensor) -> None: pass",
    "attr_not_keyword_only": "def compile(self, x: Tensor, y: Tensor, alpha: int) -> None: pass",
    "wrong_attr_name": "def compile(self, x: Tensor, y: Tensor, *, beta: int) -> None: pass",
    "variadic": "def compile(self, x: Tensor, y: Tensor, *args, alpha: int) -> None: pass",
    "return_annotation": "def compile(self, x: Tensor, y: Tensor, *, alpha: int) -> int: pass",
}


@pytest.mark.parametrize("case", sorted(BAD_SIGNATURES))
def test_invalid_compile_signature(case):
    @register_op(op_type="SigBad")
    def proto(x: TensorDesc, *, alpha: int = 1) -> TensorDesc:
        return x

    ns = {"Tensor": Tensor}
    exec(BAD_SIGNATURES[case], ns)
    register_op_impl(op_type="SigBad")(type("Impl", (), {"compile": ns["compile"]}))
    err = expect(TypeError, lambda: run_compile("SigBad", [desc([1])]), "SigBad", "compile", "expected", "actual")
    assert ":Impl:SigBad" in str(err)  # the descriptor key


def test_invalid_signature_does_not_run_compile():
    ran = []

    @register_op(op_type="SigNoRun")
    def proto(x: TensorDesc) -> TensorDesc:
        return x

    @register_op_impl(op_type="SigNoRun")
    class Impl:
        def compile(self, x: Tensor) -> None:
            ran.append(True)

    expect(TypeError, lambda: run_compile("SigNoRun", [desc([1])]), "expected 2 positional", "actual")
    assert ran == []


def test_missing_ir_is_runtime_error():
    @register_op_impl(op_type="NoIr")
    class Impl:
        def compile(self) -> None:
            pass

    expect(RuntimeError, lambda: run_compile("NoIr", []), "canonical IR not found for schema-bound compile")


def test_non_none_return_is_type_error():
    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        return 1

    define_unary("RetC", compile_fn)
    expect(TypeError, lambda: run_compile("RetC", [desc([1])]), "compile must return None")


def test_legacy_compile_with_a_ctx_parameter_fails():
    ran = []

    @register_op(op_type="Legacy")
    def proto() -> None:
        return None

    @register_op_impl(op_type="Legacy")
    class Impl:
        def compile(self, ctx) -> None:
            ran.append(ctx)

    expect(TypeError, lambda: run_compile("Legacy", []), "expected 0 positional", "Legacy", "compile")
    assert ran == []


def test_compile_changed_after_a_good_compile_fails_validation_at_the_next_call():
    """A class whose compile changes after a first good compile fails the next one
    (the host's own per-call check: test/cpp/test_compile.cc, plugins/testing/compile/swap)."""
    ran = []

    @register_op(op_type="Reval")
    def proto() -> None:
        return None

    @register_op_impl(op_type="Reval")
    class Impl:
        def compile(self) -> None:
            ran.append("good")

    obj = run_compile("Reval", [])

    def legacy(self, ctx) -> None:
        ran.append("legacy")

    Impl.compile = legacy
    expect(TypeError, lambda: run_compile("Reval", [], instance=obj), "expected 0 positional")
    assert ran == ["good"]


# ---- exceptions and lifetimes -------------------------------------------------------------

def _define_stash(st):
    @register_op(op_type="StashC")
    def proto(x: TensorDesc, xs: List[TensorDesc], *, li: List[int] = [1, 2]) -> TensorDesc:
        return x

    @register_op_impl(op_type="StashC")
    class Impl:
        def compile(self, x: Tensor, xs: List[Tensor], y: Tensor, *, li: List[int]) -> None:
            ctx, plat = get_compile_ctx(), get_compile_platform_info()
            st.update(x=x, listed=xs[0], y=y, shape=x.shape, storage=x.storage_shape, origin=x.origin_shape,
                      format=x.format, ctx=ctx, plat=plat, copied=contextvars.copy_context(), li=li,
                      option=ctx.get_option("k"), group=plat.get_platform_resource_group("SoCInfo"),
                      soc=plat.get_soc_version(), cores=plat.get_core_num(),
                      resource=plat.get_platform_resource("version", "SoC_version"))
            if st.get("raise"):
                raise KeyError("after stashing")


def _assert_all_expired(st):
    expired(lambda: st["x"].data_type)
    expired(lambda: st["x"].shape)
    expired(lambda: st["listed"].storage_shape)
    expired(lambda: st["y"].data_type)
    expired(lambda: st["shape"].origin_shape)
    expired(lambda: st["storage"].dims)
    expired(lambda: st["origin"].get_dim(0))
    expired(lambda: st["format"].storage_format)
    expired(lambda: st["ctx"].get_option("k"))
    expired(lambda: st["plat"].get_soc_version())
    expired(lambda: st["plat"].get_core_num())
    expect(RuntimeError, lambda: st["copied"].run(get_compile_ctx), OUTSIDE)
    expect(RuntimeError, lambda: st["copied"].run(get_compile_platform_info), OUTSIDE)


def test_every_borrowed_object_expires_after_compile_returns():
    st = {}
    _define_stash(st)
    run_compile("StashC", [desc([2]), [desc([3])]], options={"k": "v"})
    _assert_all_expired(st)


def test_an_exception_inside_compile_propagates_and_still_expires_everything():
    st = {"raise": True}
    _define_stash(st)
    with pytest.raises(KeyError, match="after stashing"):
        run_compile("StashC", [desc([2]), [desc([3])]], options={"k": "v"})
    _assert_all_expired(st)
    expect(RuntimeError, get_compile_ctx, OUTSIDE)


def test_strings_ints_lists_and_dicts_are_copies_that_outlive_the_callback():
    st = {}
    _define_stash(st)
    obj = run_compile("StashC", [desc([2]), [desc([3])]], options={"k": "v"})
    assert st["option"] == "v" and type(st["option"]) is str
    assert st["soc"] == "host" and st["resource"] == "host"
    assert type(st["cores"]) is int and st["cores"] >= 1
    assert type(st["group"]) is dict and st["group"]["ai_core_cnt"] == str(st["cores"])
    st["group"]["ai_core_cnt"] = "mutated"  # a copy: changing it changes nothing in the host
    assert st["li"] == [1, 2] and type(st["li"]) is list
    seen = {}

    def again(self, x: Tensor, xs: List[Tensor], y: Tensor, *, li: List[int]) -> None:
        seen["group"] = get_compile_platform_info().get_platform_resource_group("SoCInfo")

    type(obj).compile = again
    run_compile("StashC", [desc([2]), [desc([3])]], options={"k": "v"})
    assert seen["group"]["ai_core_cnt"] == str(st["cores"])


def test_objects_kept_by_the_instance_expire_in_a_later_compile():
    results = []

    @register_op(op_type="Keep")
    def proto(x: TensorDesc) -> TensorDesc:
        return x

    @register_op_impl(op_type="Keep")
    class Impl:
        def __init__(self):
            self.kept = None

        def compile(self, x: Tensor, y: Tensor) -> None:
            if self.kept is None:
                self.kept = dict(x=x, y=y, shape=x.storage_shape, fmt=x.format, ctx=get_compile_ctx(),
                                 plat=get_compile_platform_info())
                results.append("first")
                return
            touched = {}
            for name, fn in (("x", lambda k: k["x"].data_type), ("y", lambda k: k["y"].storage_shape),
                             ("shape", lambda k: k["shape"].dims), ("fmt", lambda k: k["fmt"].origin_format),
                             ("ctx", lambda k: k["ctx"].get_option("k")),
                             ("plat", lambda k: k["plat"].get_soc_version())):
                try:
                    fn(self.kept)
                    touched[name] = "alive"
                except RuntimeError as e:
                    touched[name] = "expired" if EXPIRED in str(e) else str(e)
            results.append(touched)
            # the new call's own objects work
            results.append((x.storage_shape.dims, get_compile_ctx().get_option("k")))

    obj = run_compile("Keep", [desc([3])], options={"k": "1"})
    run_compile("Keep", [desc([4])], options={"k": "2"}, instance=obj)
    assert results == ["first", {n: "expired" for n in ("x", "y", "shape", "fmt", "ctx", "plat")}, ([4], "2")]


# ---- get_option errors -------------------------------------------------------------------

def test_get_option_values_and_errors():
    seen = {}

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        ctx = get_compile_ctx()
        seen["value"] = ctx.get_option("ge.some.option")
        seen["empty_value"] = ctx.get_option("blank")
        seen["kw"] = ctx.get_option(key="ge.some.option")
        for bad in (1, None, b"ge.some.option"):
            expect(TypeError, lambda: ctx.get_option(bad))
        expect(ValueError, lambda: ctx.get_option(""))
        err = expect(KeyError, lambda: ctx.get_option("missing.key"), "missing.key")
        seen["ok"] = isinstance(err, LookupError)

    define_unary("Opt", compile_fn)
    run_compile("Opt", [desc([1])], options={"ge.some.option": "ümlaut value", "blank": ""})
    assert seen == {"value": "ümlaut value", "empty_value": "", "kw": "ümlaut value", "ok": True}


def test_no_options_means_every_key_is_missing():
    seen = []

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        expect(KeyError, lambda: get_compile_ctx().get_option("ge.coreType"), "ge.coreType")
        seen.append(True)

    define_unary("NoOpt", compile_fn)
    run_compile("NoOpt", [desc([1])])
    assert seen == [True]


# ---- platform errors ----------------------------------------------------------------------

def test_platform_argument_errors():
    seen = []

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        p = get_compile_platform_info()
        expect(TypeError, lambda: p.get_platform_resource(1, "SoC_version"))
        expect(TypeError, lambda: p.get_platform_resource("version", None))
        expect(ValueError, lambda: p.get_platform_resource("", "SoC_version"))
        expect(ValueError, lambda: p.get_platform_resource("version", ""))
        expect(KeyError, lambda: p.get_platform_resource("NoGroup", "SoC_version"), "NoGroup:SoC_version")
        expect(KeyError, lambda: p.get_platform_resource("version", "no_key"), "version:no_key")
        expect(TypeError, lambda: p.get_platform_resource_group(3))
        expect(ValueError, lambda: p.get_platform_resource_group(""))
        expect(KeyError, lambda: p.get_platform_resource_group("NoGroup"), "NoGroup")
        expect(TypeError, lambda: p.get_core_num(1), "core_type must be a string or None")
        expect(TypeError, lambda: p.get_core_num(b"AiCore"), "core_type must be a string or None")
        expect(ValueError, lambda: p.get_core_num(""))
        expect(KeyError, lambda: p.get_core_num("NoSuchCore"))
        seen.append(p.get_core_num("AiCore"))

    define_unary("PlatErr", compile_fn)
    run_compile("PlatErr", [desc([1])], soc="Ascend910B1")
    assert seen == [24]


def _every_platform_call_fails(p):
    calls = [lambda: p.get_platform_resource("version", "SoC_version"), lambda: p.get_platform_resource_group("version"),
             lambda: p.get_core_num(), lambda: p.get_core_num("AiCore"), lambda: p.get_soc_version(),
             lambda: p.get_ai_core_num()]
    for call in calls + calls:  # twice: the failure is sticky
        expect(RuntimeError, call, PLATFORM_FAILED)


def test_unknown_soc_fails_every_platform_call_but_not_the_context():
    seen = []

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        _every_platform_call_fails(get_compile_platform_info())
        seen.append(get_compile_ctx().get_option("k"))

    define_unary("NoSoc", compile_fn)
    run_compile("NoSoc", [desc([1])], soc="NoSuchSoc", options={"k": "still works"})
    assert seen == ["still works"]


def test_platform_is_read_lazily():
    """A compile that never reads the platform succeeds even when it is missing."""
    seen = []

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        seen.append(type(get_compile_platform_info()))

    define_unary("Lazy", compile_fn)
    run_compile("Lazy", [desc([1])], soc="NoSuchSoc")
    assert seen == [CompilePlatformInfo]


BROKEN_INIS = {
    "malformed": "[version\nSoC_version=Broken\n",
    "no_soc_version": "[version]\nShort_SoC_version=Broken\n[SoCInfo]\nai_core_cnt=2\n",
    "key_outside_section": "ai_core_cnt=2\n[version]\nSoC_version=Broken\n",
    "empty": "",
}


@pytest.mark.parametrize("case", sorted(BROKEN_INIS))
def test_broken_ini_fails_every_platform_call(tmp_path, case):
    (tmp_path / "Broken.ini").write_text(BROKEN_INIS[case])
    seen = []

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        _every_platform_call_fails(get_compile_platform_info())
        seen.append(True)

    define_unary("BrokenIni", compile_fn)
    run_compile("BrokenIni", [desc([1])], soc="Broken", platform_dir=str(tmp_path))
    assert seen == [True]


def test_platform_is_read_once_per_callback(tmp_path):
    ini = tmp_path / "Mine.ini"
    ini.write_text("[version]\nSoC_version=First\n[SoCInfo]\nai_core_cnt=3\n")
    seen = []

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        p = get_compile_platform_info()
        before = p.get_soc_version()
        ini.write_text("[version]\nSoC_version=Second\n[SoCInfo]\nai_core_cnt=5\n")
        seen.append((before, p.get_soc_version(), p.get_core_num("AiCore")))

    define_unary("Once", compile_fn)
    run_compile("Once", [desc([1])], soc="Mine", platform_dir=str(tmp_path))
    run_compile("Once", [desc([1])], soc="Mine", platform_dir=str(tmp_path))
    assert seen == [("First", "First", 3), ("Second", "Second", 5)]


def test_platform_failure_is_sticky_within_a_callback(tmp_path):
    ini = tmp_path / "Late.ini"
    seen = []

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        p = get_compile_platform_info()
        expect(RuntimeError, p.get_soc_version, PLATFORM_FAILED)
        ini.write_text("[version]\nSoC_version=Late\n")  # appears only after the failed read
        expect(RuntimeError, p.get_soc_version, PLATFORM_FAILED)
        seen.append(True)

    define_unary("Sticky", compile_fn)
    run_compile("Sticky", [desc([1])], soc="Late", platform_dir=str(tmp_path))
    assert seen == [True]
    ini.unlink()


# ---- core numbers and options --------------------------------------------------------------

def _core_probe(seen):
    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        p = get_compile_platform_info()
        seen.append((p.get_core_num(), p.get_ai_core_num()))

    define_unary("Cores", compile_fn)


def test_get_core_num_default_type_and_ge_core_type_option():
    seen = []
    _core_probe(seen)
    ini = read_ini("Ascend910B1")
    ai, vec = int(ini["SoCInfo"]["ai_core_cnt"]), int(ini["SoCInfo"]["vector_core_cnt"])
    assert ai != vec  # the test tells the two apart
    run_compile("Cores", [desc([1])], soc="Ascend910B1")
    run_compile("Cores", [desc([1])], soc="Ascend910B1", options={"ge.coreType": "VectorCore"})
    run_compile("Cores", [desc([1])], soc="Ascend910B1", options={"ge.coreType": "AiCore"})
    assert [c for c, _ in seen] == [ai, vec, ai]


def test_get_ai_core_num_honours_ge_aicore_num():
    seen = []
    _core_probe(seen)
    ai = int(read_ini("Ascend910B1")["SoCInfo"]["ai_core_cnt"])
    run_compile("Cores", [desc([1])], soc="Ascend910B1")
    run_compile("Cores", [desc([1])], soc="Ascend910B1", options={"ge.aicoreNum": "4"})
    run_compile("Cores", [desc([1])], soc="Ascend910B1", options={"ge.aicoreNum": str(ai + 100)})
    assert [a for _, a in seen] == [ai, 4, ai]
    assert [c for c, _ in seen] == [ai, ai, ai]  # the limit is for get_ai_core_num only


@pytest.mark.parametrize("soc", SHIPPED_SOCS)
def test_values_read_from_a_shipped_ini_match_the_file(soc):
    assert len(SHIPPED_SOCS) >= 4
    ini = read_ini(soc)
    seen = {}

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        p = get_compile_platform_info()
        seen["soc"] = p.get_soc_version()
        seen["groups"] = {g: p.get_platform_resource_group(g) for g in ini.sections()}
        seen["values"] = {(g, k): p.get_platform_resource(g, k) for g in ini.sections() for k in ini[g]}
        seen["cores"] = {t: p.get_core_num(t) for t in ("AiCore", "VectorCore", "CubeCore", "AiCpu")}
        seen["default"] = p.get_core_num()
        seen["ai"] = p.get_ai_core_num()

    define_unary("Ini", compile_fn)
    run_compile("Ini", [desc([1])], soc=soc)
    assert seen["soc"] == ini["version"]["SoC_version"] == soc
    assert seen["groups"] == {g: dict(ini[g]) for g in ini.sections()}
    assert seen["values"] == {(g, k): ini[g][k] for g in ini.sections() for k in ini[g]}
    s = ini["SoCInfo"]
    assert seen["cores"] == {"AiCore": int(s["ai_core_cnt"]), "VectorCore": int(s["vector_core_cnt"]),
                             "CubeCore": int(s["cube_core_cnt"]), "AiCpu": int(s["ai_cpu_cnt"])}
    default_type = s["core_type_list"].split(",")[0]
    assert seen["default"] == seen["cores"][default_type]
    assert seen["ai"] == int(s["ai_core_cnt"])


def test_host_platform_is_measured():
    seen = {}

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        p = get_compile_platform_info()
        seen.update(soc=p.get_soc_version(), ai=p.get_core_num("AiCore"), default=p.get_core_num(),
                    ai_num=p.get_ai_core_num(), mem=int(p.get_platform_resource("SoCInfo", "memory_size")))

    define_unary("Host", compile_fn)
    run_compile("Host", [desc([1])])
    cores = len(os.sched_getaffinity(0))
    assert seen["soc"] == "host"
    assert seen["ai"] == seen["default"] == seen["ai_num"] == cores
    assert seen["mem"] == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


# ---- read-only views ------------------------------------------------------------------------

def _setters(t):
    """(name, call) for every setter reachable from a compile-time tensor."""
    return [
        ("shape.set_origin_shape", lambda: t.shape.set_origin_shape([9])),
        ("shape.set_storage_shape", lambda: t.shape.set_storage_shape([9])),
        ("shape.origin_shape.set_dim", lambda: t.shape.origin_shape.set_dim(0, 9)),
        ("shape.storage_shape.append_dim", lambda: t.shape.storage_shape.append_dim(9)),
        ("storage_shape.set_dim", lambda: t.storage_shape.set_dim(0, 9)),
        ("storage_shape.append_dim", lambda: t.storage_shape.append_dim(9)),
        ("storage_shape.set_scalar", lambda: t.storage_shape.set_scalar()),
        ("origin_shape.set_dim", lambda: t.origin_shape.set_dim(0, 9)),
        ("origin_shape.append_dim", lambda: t.origin_shape.append_dim(9)),
        ("origin_shape.set_scalar", lambda: t.origin_shape.set_scalar()),
        ("format.set_origin_format", lambda: t.format.set_origin_format(Format.FORMAT_NHWC)),
        ("format.set_storage_format", lambda: t.format.set_storage_format(Format.FORMAT_NHWC)),
        ("format.set_expand_dims_type", lambda: t.format.set_expand_dims_type(ExpandDimsType("1"))),
        ("expand_dims_type.set_expand_index", lambda: t.expand_dims_type.set_expand_index(0)),
        ("format.expand_dims_type.set_expand_index", lambda: t.format.expand_dims_type.set_expand_index(0)),
    ]


def _snapshot(t):
    return (t.storage_shape.dims, t.origin_shape.dims, t.format.origin_format, t.format.storage_format,
            t.expand_dims_type.rule, t.data_type)


def test_every_setter_on_compile_views_is_read_only():
    seen = {}

    @register_op(op_type="RoC")
    def proto(x: TensorDesc, xs: List[TensorDesc]) -> Tuple[TensorDesc, List[TensorDesc]]:
        return x, list(xs)

    @register_op_impl(op_type="RoC")
    class Impl:
        def compile(self, x: Tensor, xs: List[Tensor], y: Tensor, ys: List[Tensor]) -> None:
            for label, t in (("x", x), ("xs0", xs[0]), ("y", y), ("ys0", ys[0])):
                before = _snapshot(t)
                for name, call in _setters(t):
                    try:
                        call()
                        seen[f"{label}.{name}"] = "accepted"
                    except RuntimeError as e:
                        seen[f"{label}.{name}"] = "read-only" if READ_ONLY in str(e) else f"RuntimeError: {e}"
                    except Exception as e:  # noqa: BLE001 - reported below
                        seen[f"{label}.{name}"] = f"{type(e).__name__}: {e}"
                seen[f"{label}.unchanged"] = _snapshot(t) == before

    run_compile("RoC", [desc([2, 3]), [desc([4])]])
    names = [n for n, _ in _setters(None)]
    expected = {}
    for label in ("x", "xs0", "y", "ys0"):
        expected.update({f"{label}.{n}": "read-only" for n in names})
        expected[f"{label}.unchanged"] = True
    assert seen == expected


def test_the_same_setters_work_in_execute():
    seen = {}

    def execute_fn(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, [1], DataType.DT_FLOAT)
        y.format.set_origin_format(Format.FORMAT_NHWC)
        y.origin_shape.set_dim(0, 7)
        seen.update(fmt=y.format.origin_format, origin=y.origin_shape.dims)
        try:  # x is an input the op does not declare as mutated: read-only
            x.origin_shape.set_dim(0, 7)
        except RuntimeError as exc:
            seen["input"] = str(exc)

    define_unary("RwE", lambda self, x, y: None, execute_fn)
    run_execute("RwE", [host_tensor([1.0], DataType.DT_FLOAT)])
    assert seen == {"fmt": Format.FORMAT_NHWC, "origin": [7], "input": "borrowed object is read-only"}


def test_tensor_data_in_compile_is_a_clear_runtime_error():
    seen = {}

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        for label, t in (("x", x), ("y", y)):
            try:
                t.data
                seen[label] = "returned data"
            except RuntimeError:
                seen[label] = "RuntimeError"
        seen["meta"] = (x.storage_shape.dims, x.data_type, x.shape_size)

    define_unary("NoData", compile_fn)
    run_compile("NoData", [desc([2, 2], DataType.DT_INT16)])
    assert seen == {"x": "RuntimeError", "y": "RuntimeError", "meta": ([2, 2], DataType.DT_INT16, 4)}


def test_expand_dims_read_is_a_read_only_view():
    seen = {}
    d = desc([3, 4])
    d.format.set_expand_dims_type(ExpandDimsType("1010"))
    d.format.set_origin_format(Format.FORMAT_NCHW)

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        seen["edt"] = x.expand_dims_type
        seen["via_format"] = x.format.expand_dims_type
        seen["fmt"] = x.format
        for key in ("edt", "via_format"):
            edt = seen[key]
            seen[f"{key}.inside"] = (isinstance(edt, ExpandDimsType), edt.rule, edt == ExpandDimsType("1010"),
                                     edt.full_size, edt.is_expand_index(0), edt.is_expand_index(1))
            try:
                edt.set_expand_index(1)
                seen[f"{key}.set"] = "accepted"
            except RuntimeError as e:
                seen[f"{key}.set"] = "read-only" if READ_ONLY in str(e) else f"RuntimeError: {e}"
        seen["rule_after_set"] = x.expand_dims_type.rule

    define_unary("Edt", compile_fn)
    run_compile("Edt", [d], outputs=[desc([3, 4])])
    for key in ("edt", "via_format"):
        assert seen[f"{key}.inside"] == (True, "1010", True, 4, True, False)
        assert seen[f"{key}.set"] == "read-only"
    assert seen["rule_after_set"] == "1010"
    # views (not snapshots): they expire with the callback
    expired(lambda: seen["edt"].rule)
    expired(lambda: seen["via_format"].rule)
    expired(lambda: seen["fmt"].expand_dims_type)
    assert d.format.expand_dims_type.rule == "1010"


def test_input_descs_are_not_changed_by_compile():
    d = desc([2, 3])

    def compile_fn(self, x: Tensor, y: Tensor) -> None:
        try:
            x.storage_shape.set_dim(0, 99)
        except RuntimeError:
            pass

    define_unary("NoChange", compile_fn)
    run_compile("NoChange", [d])
    assert d.shape.storage_shape.dims == [2, 3]


# ---- compile prepares state for execute ------------------------------------------------------

def test_state_prepared_by_compile_is_used_by_execute():
    @register_op(op_type="Scale")
    def proto(x: TensorDesc) -> TensorDesc:
        return x

    @register_op_impl(op_type="Scale")
    class Impl:
        factor = None

        def compile(self, x: Tensor, y: Tensor) -> None:
            self.factor = float(get_compile_platform_info().get_core_num("AiCore"))

        def execute(self, x: Tensor) -> None:
            y = get_execute_ctx().malloc_output_tensor(0, x.storage_shape.dims, x.data_type)
            for i, v in enumerate(x.data.tolist()):
                y.data[i] = v * self.factor

    obj = run_compile("Scale", [desc([2])], soc="Ascend310P3")
    (y,) = run_execute("Scale", [host_tensor([1.0, 2.0], DataType.DT_FLOAT)], instance=obj)
    ai = float(read_ini("Ascend310P3")["SoCInfo"]["ai_core_cnt"])
    assert y.tolist() == [ai, 2 * ai]
