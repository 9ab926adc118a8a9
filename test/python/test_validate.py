"""Callback signature validation against the canonical IR (share/docs/plugin-authors.md, "The implementation"),
and the host's all-or-nothing collection of a plugin's registrations (_host)."""
import textwrap
from typing import List, Optional, Tuple

import pytest

from ge.custom_op import _host, _proto, register_op, register_op_impl
from ge.custom_op import proto as proto_mod
from ge.custom_op._validate import ImplRules, validate_descriptor, validate_impl
from ge.custom_op import clear_registered_op_impls, get_registered_op_impls
from ge.graph import DataType
from ge.runtime import TensorDesc

METHODS = ["execute", "compile", "declare_launch_args"]
KEY = "impl_mod:Impl:Op"

INPUTS = "x: Tensor, opt: Optional[Tensor], xs: List[Tensor]"
OUTPUTS = "y: Tensor, ys: List[Tensor]"
ATTRS = "alpha: int, names: List[str]"


def register_ir():
    """The IR used by most tests: 3 inputs (required, optional, dynamic), 2 outputs
    (required, dynamic), 2 attrs (VT_INT required, VT_LIST_STRING with default)."""

    @register_op(op_type="Op")
    def proto(x: TensorDesc, opt: Optional[TensorDesc], xs: List[TensorDesc], *,
              alpha: int, names: List[str] = []) -> Tuple[TensorDesc, List[TensorDesc]]:
        return x, xs

    return proto_mod.get_registered_op_proto_by_op_type("Op")


def params(method, inputs=INPUTS, outputs=OUTPUTS, attrs=ATTRS, receiver="self"):
    parts = [receiver] if receiver else []
    parts += [inputs] if inputs else []
    if method != "execute" and outputs:
        parts.append(outputs)
    if attrs:
        parts += ["*", attrs]
    return ", ".join(parts)


@pytest.fixture
def make_impl(exec_plugin):
    """Define class ``Impl`` with one callback in module ``impl_mod``, register it
    for ``op_type`` and return its descriptor."""

    def _make(method, signature, ret=" -> None", decorator="", future=False, op_type="Op",
              extra=""):
        clear_registered_op_impls()  # one Impl at a time
        src = ("from __future__ import annotations\n" if future else "") + textwrap.dedent(f"""\
            from typing import List, Optional, Union
            from ge.custom_op import register_op_impl
            from ge.graph import DataType
            from ge.runtime import Tensor, TensorDesc
            {extra}

            @register_op_impl(op_type={op_type!r})
            class Impl:
                def __init__(self):
                    raise AssertionError("validation must not instantiate the class")

                {decorator}
                def {method}({signature}){ret}:
                    return None
            """)
        return exec_plugin(src, "impl_mod")["Impl"].__ge_op_impl_descriptor__

    return _make


def where_fragments(method):
    """GE's wording: "invalid <m> signature for op type <T>, descriptor key <K>, method <m>: expected ..., actual ..."."""
    return (f"invalid {method} signature for op type Op, descriptor key {KEY}, method {method}: "
            "expected ", ", actual ")


# --------------------------------------------------------------------------- accepted forms

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("future", [False, True], ids=["eager-ann", "future-ann"])
def test_matching_signature_annotated(make_impl, method, future):
    ir = register_ir()
    d = make_impl(method, params(method), future=future)
    assert validate_impl(d, method, ir) is None


@pytest.mark.parametrize("method", METHODS)
def test_matching_signature_unannotated_params(make_impl, method):
    ir = register_ir()
    d = make_impl(method, params(method, inputs="a, b, c", outputs="d, e",
                                 attrs="alpha, names=()"))
    validate_impl(d, method, ir)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("inputs,outputs", [
    ("x: Tensor, opt: Tensor | None, xs: list[Tensor]", "y: Tensor, ys: list[Tensor]"),
    ("x: Tensor, opt: Union[Tensor, None], xs: List[Tensor]", "y: Tensor, ys: List[Tensor]"),
    ("x: Tensor, opt: Union[None, Tensor], xs: List[Tensor]", "y: Tensor, ys: List[Tensor]"),
    ("x: Tensor, opt: 'Optional[Tensor]', xs: 'List[Tensor]'", "y: 'Tensor', ys: List['Tensor']"),
], ids=["pep604-builtin-list", "union", "union-none-first", "strings"])
def test_equivalent_spellings(make_impl, method, inputs, outputs):
    ir = register_ir()
    validate_impl(make_impl(method, params(method, inputs, outputs)), method, ir)


@pytest.mark.parametrize("method", METHODS)
def test_positional_only_and_attr_defaults(make_impl, method):
    ir = register_ir()
    sig = params(method, attrs="alpha: int = 3, names: List[str] = []")
    sig = sig.replace(", *,", ", /, *,")
    validate_impl(make_impl(method, sig), method, ir)


@pytest.mark.parametrize("method", METHODS)
def test_staticmethod_has_no_self(make_impl, method, raises):
    ir = register_ir()
    validate_impl(make_impl(method, params(method, receiver=""), decorator="@staticmethod"),
                  method, ir)


@pytest.mark.parametrize("method", METHODS)
def test_staticmethod_with_self_is_one_too_many(make_impl, method, raises):
    ir = register_ir()
    d = make_impl(method, params(method), decorator="@staticmethod")
    n = 3 if method == "execute" else 5
    with raises(TypeError, *where_fragments(method), f"expected {n} positional",
                f"actual {n + 3} parameters"):
        validate_impl(d, method, ir)


@pytest.mark.parametrize("method", METHODS)
def test_classmethod_skips_cls(make_impl, method):
    ir = register_ir()
    validate_impl(make_impl(method, params(method, receiver="cls"), decorator="@classmethod"),
                  method, ir)


def test_inherited_method_is_validated(exec_plugin, raises):
    ir = register_ir()
    ns = exec_plugin(textwrap.dedent("""\
        from ge.custom_op import register_op_impl
        from ge.runtime import Tensor

        class Base:
            def execute(self, a, b, c, *, alpha, names: int) -> None:
                pass

        @register_op_impl(op_type="Op")
        class Impl(Base):
            pass
        """), "impl_mod")
    with raises(TypeError, *where_fragments("execute"),
                "expected attr parameter names annotation List[str] (VT_LIST_STRING), actual int"):
        validate_impl(ns["Impl"].__ge_op_impl_descriptor__, "execute", ir)


def test_decorated_method_inspected_through_wrapped(make_impl):
    ir = register_ir()
    extra = textwrap.dedent("""\
        import functools
        def deco(fn):
            @functools.wraps(fn)
            def inner(*args, **kwargs):
                return fn(*args, **kwargs)
            return inner
        """).replace("\n", "\n            ")
    d = make_impl("execute", params("execute"), decorator="@deco", extra=extra)
    validate_impl(d, "execute", ir)


# --------------------------------------------------------------------------- missing IR

@pytest.mark.parametrize("method", METHODS)
def test_no_ir_is_runtime_error(make_impl, method, raises):
    d = make_impl(method, params(method))
    with raises(RuntimeError, f"canonical IR not found for schema-bound {method}: Op "
                              f"(descriptor key {KEY})", "expected", "actual"):
        validate_impl(d, method, None)


# --------------------------------------------------------------------------- variadic

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("variadic", ["*args", "**kwargs"])
def test_variadic_rejected(make_impl, method, variadic, raises):
    ir = register_ir()
    sig = f"self, {variadic}" if variadic == "*args" else "self, x, opt, xs, **kwargs"
    d = make_impl(method, sig)
    with raises(TypeError, *where_fragments(method),
                f"expected no variadic parameters, actual variadic parameter {variadic.lstrip('*')}"):
        validate_impl(d, method, ir)


@pytest.mark.parametrize("method", METHODS)
def test_only_variadic_args_no_self(make_impl, method, raises):
    ir = register_ir()
    d = make_impl(method, "*args, **kwargs")
    with raises(TypeError, "variadic", *where_fragments(method)):
        validate_impl(d, method, ir)


# --------------------------------------------------------------------------- counts

COUNT_CASES = {
    "missing-input": (dict(inputs="x: Tensor, opt: Optional[Tensor]"), -1, 0),
    "extra-input": (dict(inputs=INPUTS + ", extra: Tensor"), +1, 0),
    "missing-attr": (dict(attrs="alpha: int"), 0, -1),
    "extra-attr": (dict(attrs=ATTRS + ", beta: float"), 0, +1),
}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", list(COUNT_CASES))
def test_wrong_count(make_impl, method, case, raises):
    ir = register_ir()
    kwargs, dpos, dattr = COUNT_CASES[case]
    d = make_impl(method, params(method, **kwargs))
    n = 3 if method == "execute" else 5
    what = "input" if method == "execute" else "input/output"
    actual = n + dpos + 2 + dattr
    with raises(TypeError, *where_fragments(method),
                f"expected {n} positional {what} parameters followed by 2 keyword-only attrs, "
                f"actual {actual} parameters"):
        validate_impl(d, method, ir)


@pytest.mark.parametrize("method", METHODS)
def test_attrs_not_keyword_only(make_impl, method, raises):
    # The total count matches (GE counts all parameters), so the first attr
    # fails its per-position keyword-only check.
    ir = register_ir()
    sig = params(method).replace(", *,", ",")
    with raises(TypeError, *where_fragments(method),
                "expected keyword-only attr parameter alpha, "
                "actual parameter alpha kind POSITIONAL_OR_KEYWORD"):
        validate_impl(make_impl(method, sig), method, ir)


@pytest.mark.parametrize("method", ["compile", "declare_launch_args"])
def test_outputs_missing_from_compile_like(make_impl, method, raises):
    ir = register_ir()
    d = make_impl(method, params("execute"))
    with raises(TypeError, "expected 5 positional input/output parameters followed by 2 "
                           "keyword-only attrs, actual 5 parameters"):
        validate_impl(d, method, ir)


def test_execute_with_outputs_is_too_many(make_impl, raises):
    ir = register_ir()
    d = make_impl("execute", params("compile"))
    with raises(TypeError, "expected 3 positional input parameters followed by 2 keyword-only "
                           "attrs, actual 7 parameters"):
        validate_impl(d, "execute", ir)


def test_legacy_compile_ctx(make_impl, raises):
    @register_op(op_type="Op")
    def proto() -> None:
        pass

    d = make_impl("compile", "self, ctx")
    with raises(TypeError, "expected 0 positional", *where_fragments("compile"),
                "actual 1 parameters"):
        validate_impl(d, "compile", proto_mod.get_registered_op_proto_by_op_type("Op"))


def test_empty_ir_accepts_bare_self(make_impl):
    @register_op(op_type="Op")
    def proto() -> None:
        pass

    for method in METHODS:
        validate_impl(make_impl(method, "self"), method,
                      proto_mod.get_registered_op_proto_by_op_type("Op"))


@pytest.mark.parametrize("method", METHODS)
def test_plain_function_without_self(make_impl, method, raises):
    @register_op(op_type="Op")
    def proto() -> None:
        pass

    d = make_impl(method, "")
    with raises(TypeError, *where_fragments(method), "leading positional 'self'",
                "no parameters"):
        validate_impl(d, method, proto_mod.get_registered_op_proto_by_op_type("Op"))


# --------------------------------------------------------------------------- tensor annotations

INPUT_MISMATCHES = [
    ("x: Optional[Tensor], opt: Optional[Tensor], xs: List[Tensor]", "x", "Tensor"),
    ("x: List[Tensor], opt: Optional[Tensor], xs: List[Tensor]", "x", "Tensor"),
    ("x: TensorDesc, opt: Optional[Tensor], xs: List[Tensor]", "x", "Tensor"),
    ("x: Tensor, opt: Tensor, xs: List[Tensor]", "opt", "Optional[Tensor]"),
    ("x: Tensor, opt: List[Tensor], xs: List[Tensor]", "opt", "Optional[Tensor]"),
    ("x: Tensor, opt: Optional[TensorDesc], xs: List[Tensor]", "opt", "Optional[Tensor]"),
    ("x: Tensor, opt: Optional[Tensor], xs: Tensor", "xs", "List[Tensor]"),
    ("x: Tensor, opt: Optional[Tensor], xs: Optional[List[Tensor]]", "xs", "List[Tensor]"),
    ("x: Tensor, opt: Optional[Tensor], xs: list", "xs", "List[Tensor]"),
    ("x: int, opt: Optional[Tensor], xs: List[Tensor]", "x", "Tensor"),
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("inputs,bad,expected", INPUT_MISMATCHES,
                         ids=[c[0] for c in INPUT_MISMATCHES])
def test_input_annotation_mismatch(make_impl, method, inputs, bad, expected, raises):
    ir = register_ir()
    d = make_impl(method, params(method, inputs=inputs))
    index = ["x", "opt", "xs"].index(bad)
    with raises(TypeError, *where_fragments(method),
                f"expected input parameter at index {index} annotation {expected}, actual "):
        validate_impl(d, method, ir)


@pytest.mark.parametrize("method", ["compile", "declare_launch_args"])
@pytest.mark.parametrize("outputs,bad,expected", [
    ("y: Optional[Tensor], ys: List[Tensor]", "y", "Tensor"),
    ("y: List[Tensor], ys: List[Tensor]", "y", "Tensor"),
    ("y: Tensor, ys: Tensor", "ys", "List[Tensor]"),
    ("y: Tensor, ys: List[TensorDesc]", "ys", "List[Tensor]"),
])
def test_output_annotation_mismatch(make_impl, method, outputs, bad, expected, raises):
    ir = register_ir()
    d = make_impl(method, params(method, outputs=outputs))
    index = ["y", "ys"].index(bad)
    with raises(TypeError, *where_fragments(method),
                f"expected output parameter at index {index} annotation {expected}, actual "):
        validate_impl(d, method, ir)


def test_output_names_free_but_reported_by_ir_index(make_impl, raises):
    ir = register_ir()
    d = make_impl("compile", params("compile", outputs="out_a: Tensor, out_b: Tensor"))
    with raises(TypeError, *where_fragments("compile"),
                "expected output parameter at index 1 annotation List[Tensor], actual Tensor"):
        validate_impl(d, "compile", ir)


# --------------------------------------------------------------------------- attrs

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("attrs,expected,actual", [
    ("beta: int, names: List[str]", "alpha", "beta"),
    ("names: List[str], alpha: int", "alpha", "names"),
    ("alpha: int, name: List[str]", "names", "name"),
], ids=["renamed", "swapped", "renamed-second"])
def test_attr_name_or_order(make_impl, method, attrs, expected, actual, raises):
    ir = register_ir()
    d = make_impl(method, params(method, attrs=attrs))
    with raises(TypeError, *where_fragments(method), f"expected attr name {expected}",
                f"actual attr name {actual}"):
        validate_impl(d, method, ir)


ATTR_ANNOTATIONS = [
    ("int", "VT_INT", "int", "bool"),
    ("float", "VT_FLOAT", "float", "int"),
    ("bool", "VT_BOOL", "bool", "int"),
    ("str", "VT_STRING", "str", "bytes"),
    ("DataType", "VT_DATA_TYPE", "DataType", "int"),
    ("Tensor", "VT_TENSOR", "Tensor", "TensorDesc"),
    ("List[int]", "VT_LIST_INT", "list[int]", "List[float]"),
    ("List[float]", "VT_LIST_FLOAT", "List[float]", "List[int]"),
    ("List[bool]", "VT_LIST_BOOL", "list[bool]", "bool"),
    ("List[str]", "VT_LIST_STRING", "List[str]", "str"),
    ("List[DataType]", "VT_LIST_DATA_TYPE", "List[DataType]", "List[int]"),
    ("List[List[int]]", "VT_LIST_LIST_INT", "list[list[int]]", "List[int]"),
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("ir_ann,vt,good,bad", ATTR_ANNOTATIONS, ids=[a[1] for a in ATTR_ANNOTATIONS])
def test_attr_annotations(make_impl, exec_plugin, method, ir_ann, vt, good, bad, raises):
    exec_plugin(textwrap.dedent(f"""\
        from typing import List
        from ge.custom_op import register_op
        from ge.graph import DataType
        from ge.runtime import Tensor, TensorDesc

        @register_op(op_type="Op")
        def proto(*, a: {ir_ann}) -> None:
            pass
        """), "proto_mod")
    ir = proto_mod.get_registered_op_proto_by_op_type("Op")
    assert ir.attrs[0].type == vt
    validate_impl(make_impl(method, f"self, *, a: {good}"), method, ir)
    validate_impl(make_impl(method, "self, *, a"), method, ir)
    d = make_impl(method, f"self, *, a: {bad}")
    with raises(TypeError, *where_fragments(method),
                f"expected attr parameter a annotation {ir_ann} ({vt}), actual {bad}"):
        validate_impl(d, method, ir)


# --------------------------------------------------------------------------- return annotation

@pytest.mark.parametrize("method", METHODS)
def test_return_annotation_required(make_impl, method, raises):
    ir = register_ir()
    d = make_impl(method, params(method), ret="")
    if method == "execute":
        # Loads (the earlier releases' own example has none); the newest GE's rules refuse it.
        validate_impl(d, method, ir)
        assert "missing return annotation" in validate_descriptor(d, ir).newest_refusal
    with raises(TypeError, *where_fragments(method),
                "expected None return annotation, actual missing return annotation"):
        validate_impl(d, method, ir, newest=True)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("ret,actual", [(" -> int", "actual int"),
                                        (" -> Tensor", "actual Tensor"),
                                        (" -> Optional[Tensor]", "actual")])
def test_return_annotation_must_be_none(make_impl, method, ret, actual, raises):
    ir = register_ir()
    d = make_impl(method, params(method), ret=ret)
    with raises(TypeError, *where_fragments(method), "expected None return annotation", actual):
        validate_impl(d, method, ir)


@pytest.mark.parametrize("method", METHODS)
def test_return_none_as_string(make_impl, method):
    ir = register_ir()
    validate_impl(make_impl(method, params(method), ret=" -> 'None'"), method, ir)


# --------------------------------------------------------------------------- string annotations

@pytest.mark.parametrize("method", METHODS)
def test_unresolvable_string_annotation(make_impl, method, raises):
    ir = register_ir()
    d = make_impl(method, params(method, inputs="x: Tensr, opt, xs"), future=True)
    with raises(TypeError, *where_fragments(method), "'Tensr'", "resolvable"):
        validate_impl(d, method, ir)


def test_unresolvable_attr_annotation(make_impl, raises):
    ir = register_ir()
    d = make_impl("execute", params("execute", attrs="alpha: Int64, names"), future=True)
    with raises(TypeError, *where_fragments("execute"), "expected resolvable type annotations",
                "actual type hint resolution failed for attr alpha", "'Int64'"):
        validate_impl(d, "execute", ir)


# --------------------------------------------------------------------------- misc

def test_unknown_method_and_wrong_ir(make_impl, raises):
    ir = register_ir()
    d = make_impl("execute", params("execute"), op_type="Other")
    with raises(ValueError, "unknown schema-bound method 'run'"):
        validate_impl(d, "run", ir)
    with raises(ValueError, "expected the canonical IR of 'Other'", "actual the IR of 'Op'"):
        validate_impl(d, "execute", ir)


def test_method_not_on_class(make_impl, raises):
    ir = register_ir()
    d = make_impl("execute", params("execute"))
    with raises(TypeError, *where_fragments("compile"), "expected a callable 'compile'"):
        validate_impl(d, "compile", ir)


def test_callable_object_has_its_own_signature(exec_plugin, raises):
    ir = register_ir()
    ns = exec_plugin(textwrap.dedent("""\
        from typing import List, Optional
        from ge.custom_op import register_op_impl
        from ge.runtime import Tensor

        class Kernel:
            def __call__(self, x: Tensor, opt: Optional[Tensor], xs: List[Tensor], *,
                         alpha: int, names: List[str]) -> None:
                pass

        @register_op_impl(op_type="Op")
        class Impl:
            execute = Kernel()
        """), "impl_mod")
    validate_impl(ns["Impl"].__ge_op_impl_descriptor__, "execute", ir)


def test_validate_descriptor_checks_every_capability(exec_plugin, raises):
    ir = register_ir()
    ns = exec_plugin(textwrap.dedent(f"""\
        from typing import List, Optional
        from ge.custom_op import register_op_impl
        from ge.runtime import Tensor

        @register_op_impl(op_type="Op")
        class Impl:
            def execute(self, {INPUTS}, *, {ATTRS}) -> None:
                pass

            def compile(self, {INPUTS}, {OUTPUTS}, *, {ATTRS}) -> None:
                pass

            def declare_launch_args(self, {INPUTS}, *, {ATTRS}) -> None:
                pass
        """), "impl_mod")
    d = ns["Impl"].__ge_op_impl_descriptor__
    validate_impl(d, "execute", ir)
    validate_impl(d, "compile", ir)
    with raises(TypeError, *where_fragments("declare_launch_args"),
                "expected 5 positional input/output parameters"):
        validate_descriptor(d, ir)
    with raises(RuntimeError, "canonical IR not found for schema-bound execute"):
        validate_descriptor(d, None)


def test_validate_descriptor_ok(make_impl):
    ir = register_ir()
    decided = validate_descriptor(make_impl("compile", params("compile")), ir)
    # A class without execute follows the newest rules; nothing to warn about.
    assert (decided.rules, decided.call, decided.needs_ir, decided.warnings, decided.newest_refusal) == (
        "newest", "schema", True, (), "")


# --------------------------------------------------------------------------- host collection

PLUGIN = textwrap.dedent("""\
    from typing import List, Optional
    from ge.custom_op import register_op, register_op_impl
    from ge.graph import DataType
    from ge.runtime import Tensor, TensorDesc

    @register_op(op_type="PluginOp", mutates_args=["x"])
    def plugin_proto(x: TensorDesc, *, k: int = 1, dt: DataType = DataType.DT_INT8) -> TensorDesc:
        return x

    @register_op(op_type="ProtoOnly")
    def proto_only() -> None:
        pass

    @register_op_impl(op_type="PluginOp")
    class PluginImpl:
        def execute(self, x: Tensor, *, k: int, dt: DataType) -> None:
            pass

        def compile(self, x: Tensor, out: Tensor, *, k: int, dt: DataType) -> None:
            pass
    """)


def register_pre_existing():
    @register_op(op_type="Before")
    def before(x: TensorDesc) -> TensorDesc:
        return x

    @register_op_impl(op_type="Before")
    class BeforeImpl:
        def execute(self, x) -> None:
            pass

    return before, BeforeImpl


def test_snapshot_format():
    register_pre_existing()
    assert _host.snapshot() == (frozenset({"Before"}),
                                frozenset({f"{__name__}:BeforeImpl:Before"}))


def test_collect_returns_new_registrations(exec_plugin):
    register_pre_existing()
    before = _host.snapshot()
    ns = exec_plugin(PLUGIN, "my_plugin")
    result = _host.collect(before)
    assert set(result) == {"protos", "impls"}
    assert [p["op_type"] for p in result["protos"]] == ["PluginOp", "ProtoOnly"]
    assert result["protos"][0] == dict(
        _proto.canonical_ir(proto_mod.get_registered_op_proto_by_op_type("PluginOp")).to_dict(),
        func=ns["plugin_proto"])
    assert result["protos"][0]["attrs"][1]["default"] is DataType.DT_INT8
    assert result["protos"][0]["mutates"] == [["x", 0]]
    assert result["impls"] == [{
        "descriptor_key": "my_plugin:PluginImpl:PluginOp",
        "op_type": "PluginOp",
        "module_name": "my_plugin",
        "class_name": "PluginImpl",
        "interfaces": ["eager_execute", "compilable"],
        "cls": ns["PluginImpl"],
        "rules": ImplRules("newest", "schema", True, (), ""),
    }]
    assert _host.collect(_host.snapshot()) == {"protos": [], "impls": []}


def test_collect_all_or_nothing_on_validation_error(exec_plugin, raises):
    before_func, before_cls = register_pre_existing()
    before = _host.snapshot()
    bad = PLUGIN.replace("def execute(self, x: Tensor, *, k: int, dt: DataType)",
                         "def execute(self, x: Tensor, *, dt: DataType, k: int)")
    assert bad != PLUGIN
    ns = exec_plugin(bad, "my_plugin")
    with raises(TypeError, "invalid execute signature for op type PluginOp, descriptor key "
                "my_plugin:PluginImpl:PluginOp, method execute: ",
                "expected attr name k at index 0 (IR attrs in order: k, dt), actual attr name dt") as info:
        _host.collect(before)
    line = bad.splitlines().index("    def execute(self, x: Tensor, *, dt: DataType, k: int) -> None:") + 1
    assert str(info.value).endswith(f" (at <my_plugin>:{line})")
    assert _host.snapshot() == before
    assert [p.infer_func for p in proto_mod.get_registered_op_protos()] == [before_func]
    assert [d.cls for d in get_registered_op_impls()] == [before_cls]
    assert "__ge_op_impl_descriptor__" not in vars(ns["PluginImpl"])
    assert "__ge_op_impl_descriptor__" in vars(before_cls)


def test_collect_reraises_original_exception_object(exec_plugin, monkeypatch):
    before = _host.snapshot()
    exec_plugin(PLUGIN, "my_plugin")
    boom = RuntimeError("boom")

    def failing(descriptor, proto):
        raise boom

    monkeypatch.setattr(_host, "validate_descriptor", failing)
    with pytest.raises(RuntimeError) as info:
        _host.collect(before)
    assert info.value is boom
    assert _host.snapshot() == before


def line_of(source, text):
    """1-based line number of the only line of ``source`` that contains ``text``."""
    hits = [n for n, line in enumerate(source.splitlines(), 1) if text in line]
    assert len(hits) == 1, hits
    return hits[0]


def test_collect_error_names_the_file_and_line_of_the_method(tmp_path):
    path = tmp_path / "plug_file.py"
    source = PLUGIN.replace("def compile(self, x: Tensor, out: Tensor, *, k: int, dt: DataType) -> None:",
                            "def compile(self, x: Tensor, out: Tensor, *, k: int, dt: DataType) -> int:")
    assert source != PLUGIN
    path.write_text(source)
    before = _host.snapshot()
    exec(compile(source, str(path), "exec"), {"__name__": "plug_file"})
    with pytest.raises(TypeError) as info:
        _host.collect(before)
    message = str(info.value)
    assert ("invalid compile signature for op type PluginOp, descriptor key "
            "plug_file:PluginImpl:PluginOp, method compile: "
            "expected None return annotation, actual int (at ") in message
    assert message.endswith(f" (at {path}:{line_of(source, 'def compile(')})"), message
    assert _host.snapshot() == before


@pytest.mark.parametrize("decorator, receiver", [("@staticmethod", ""), ("@classmethod", "cls, ")])
def test_collect_error_location_unwraps_static_and_class_methods(exec_plugin, decorator, receiver):
    source = textwrap.dedent(f"""\
        from ge.custom_op import register_op, register_op_impl
        from ge.runtime import Tensor, TensorDesc

        @register_op(op_type="WrapOp")
        def proto(x: TensorDesc) -> TensorDesc:
            return x

        @register_op_impl(op_type="WrapOp")
        class Impl:
            {decorator}
            def execute({receiver}x: Tensor, extra: Tensor) -> None:
                pass
        """)
    before = _host.snapshot()
    exec_plugin(source, "wrap_plugin")
    with pytest.raises(TypeError) as info:
        _host.collect(before)
    assert "expected 1 positional input parameters" in str(info.value)
    # co_firstlineno of a decorated function is the line of its first decorator.
    assert str(info.value).endswith(f" (at <wrap_plugin>:{line_of(source, decorator)})"), info.value
    assert _host.snapshot() == before


def test_collect_error_location_follows_wrapped_and_inheritance(exec_plugin):
    source = textwrap.dedent("""\
        import functools
        from ge.custom_op import register_op, register_op_impl
        from ge.runtime import Tensor, TensorDesc

        def logged(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)
            return wrapper

        @register_op(op_type="InhOp")
        def proto(x: TensorDesc, *, a: int = 1) -> TensorDesc:
            return x

        class Base:
            @logged
            def execute(self, x: Tensor, *, b: int) -> None:
                pass

        @register_op_impl(op_type="InhOp")
        class Impl(Base):
            pass
        """)
    before = _host.snapshot()
    exec_plugin(source, "inh_plugin")
    with pytest.raises(TypeError) as info:
        _host.collect(before)
    assert "expected attr name a" in str(info.value)
    assert str(info.value).endswith(f" (at <inh_plugin>:{line_of(source, '    @logged')})"), info.value


def test_collect_error_location_for_a_second_impl_in_the_plugin(exec_plugin):
    source = PLUGIN + textwrap.dedent("""\

        @register_op(op_type="Second")
        def second(x: TensorDesc) -> TensorDesc:
            return x

        @register_op_impl(op_type="Second")
        class SecondImpl:
            def execute(self, x: Tensor, y: Tensor) -> None:
                pass
        """)
    before = _host.snapshot()
    exec_plugin(source, "two_impls")
    with pytest.raises(TypeError) as info:
        _host.collect(before)
    assert ("invalid execute signature for op type Second, descriptor key "
            "two_impls:SecondImpl:Second, method execute: ") in str(info.value)
    assert str(info.value).endswith(f" (at <two_impls>:{line_of(source, 'def execute(self, x: Tensor, y: Tensor)')})")
    assert _host.snapshot() == before


def test_collect_impl_without_ir(exec_plugin, raises):
    before = _host.snapshot()
    bad = PLUGIN.replace('op_type="PluginOp", mutates', 'op_type="Renamed", mutates')
    assert bad != PLUGIN
    exec_plugin(bad, "my_plugin")
    with raises(RuntimeError, "canonical IR not found for schema-bound execute", "PluginOp") as info:
        _host.collect(before)
    line = line_of(bad, "def execute(")
    assert str(info.value).endswith(f" (at <my_plugin>:{line})")
    assert _host.snapshot() == before == (frozenset(), frozenset())


def test_collect_impl_against_earlier_ir(exec_plugin):
    register_ir()
    before = _host.snapshot()
    ns = exec_plugin(textwrap.dedent(f"""\
        from typing import List, Optional
        from ge.custom_op import register_op_impl
        from ge.runtime import Tensor

        @register_op_impl(op_type="Op")
        class Impl:
            def execute(self, {INPUTS}, *, {ATTRS}) -> None:
                pass
        """), "impl_mod")
    result = _host.collect(before)
    assert result["protos"] == [] and result["impls"][0]["cls"] is ns["Impl"]


def test_discard(exec_plugin):
    register_pre_existing()
    before = _host.snapshot()
    exec_plugin(PLUGIN, "my_plugin")
    assert len(_host.snapshot()[0]) == 3
    _host.discard(before)
    assert _host.snapshot() == before


@pytest.mark.parametrize("bad", [None, (), (frozenset(),), ("a", "b"), [frozenset(), frozenset()]])
def test_bad_snapshot_argument(raises, bad):
    with raises(TypeError, "snapshot()"):
        _host.collect(bad)
    with raises(TypeError, "snapshot()"):
        _host.discard(bad)
