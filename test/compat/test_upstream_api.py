"""Compatibility with GE's public Python custom-op API: one test per behaviour.

Each test states, in our words, a behaviour of GE's ``ge.custom_op`` /
``ge.runtime`` API that a plugin or its tests rely on (names, argument order,
exception types, message fragments), and checks that our package has it. The
behaviours were read from GE's public stubs, API pages and unit tests; no code
of GE is used here.
"""
import gc
import math
from abc import ABC, abstractmethod
import re
from typing import List, Optional, Tuple

import pytest

import ge.custom_op as custom_op
from ge.custom_op import _proto, proto
from ge.custom_op._validate import validate_descriptor
from ge.graph import DataType, Format
from ge.runtime import ExpandDimsType, StorageShape, Tensor, TensorDesc


def _dims(ss):
    return ss.origin_shape.dims, ss.storage_shape.dims


# ---- ge.custom_op.proto ------------------------------------------------------------

def test_proto_module_exposes_register_op_as_the_same_object():
    assert proto.register_op is custom_op.register_op
    assert "register_op" in proto.__all__ and "register_op" in custom_op.__all__


def test_input_and_output_kind_enums_use_ge_numbering():
    assert [(m.name, int(m)) for m in proto.InputType] == [("REQUIRED", 0), ("OPTIONAL", 1), ("DYNAMIC", 2)]
    assert [(m.name, int(m)) for m in proto.OutputType] == [("REQUIRED", 0), ("DYNAMIC", 1)]


def test_register_op_sets_a_descriptor_with_indexed_kinds_and_frozen_defaults():
    @proto.register_op(op_type="CompatAll", mutates_args=("x",))
    def infer(x: TensorDesc, maybe: Optional[TensorDesc], many: List[TensorDesc], *, t: Tensor,
              axes: List[List[int]] = [[1, 2], [3]], scale: float = 0.5) -> Tuple[TensorDesc, List[TensorDesc]]:
        return x, []

    d = infer.__ge_op_proto_descriptor__
    assert isinstance(d, proto.OpProtoDescriptor)
    assert (d.descriptor_key, d.op_type, d.func_name) == (
        f"{__name__}:test_register_op_sets_a_descriptor_with_indexed_kinds_and_frozen_defaults.<locals>.infer:CompatAll",
        "CompatAll", "test_register_op_sets_a_descriptor_with_indexed_kinds_and_frozen_defaults.<locals>.infer")
    assert d.infer_func is infer
    assert [(i.name, i.index, i.kind) for i in d.inputs] == [
        ("x", 0, proto.InputType.REQUIRED), ("maybe", 1, proto.InputType.OPTIONAL), ("many", 2, proto.InputType.DYNAMIC)]
    assert [(a.name, a.index, a.type, a.is_required, a.default) for a in d.attrs] == [
        ("t", 0, "VT_TENSOR", True, None), ("axes", 1, "VT_LIST_LIST_INT", False, ((1, 2), (3,))),
        ("scale", 2, "VT_FLOAT", False, 0.5)]
    # The aliasing output takes the input's name; the other one is output<i>.
    assert [(o.name, o.index, o.kind) for o in d.outputs] == [
        ("x", 0, proto.OutputType.REQUIRED), ("output1", 1, proto.OutputType.DYNAMIC)]
    bridge = d.to_bridge_dict()
    assert bridge["attrs"][1] == {"name": "axes", "type": "VT_LIST_LIST_INT", "is_required": False,
                                  "default": [[1, 2], [3]]}
    assert bridge["outputs"] == [{"name": "x", "kind": 0}, {"name": "output1", "kind": 1}]
    bridge["attrs"][1]["default"][0][0] = 99  # a copy: the record is untouched
    assert d.to_bridge_dict()["attrs"][1]["default"] == [[1, 2], [3]]
    assert proto.get_registered_op_proto_dicts() == [d.to_bridge_dict()]


def test_records_are_constructible_and_copy_sequences_into_tuples():
    default = [[1], [2, 3]]
    attr = proto.OpAttr("axes", 0, "VT_LIST_LIST_INT", False, default)
    inputs = [proto.OpInput("x", 0, proto.InputType.REQUIRED)]
    d = proto.OpProtoDescriptor(descriptor_key="m:f:T", op_type="T", module_name="m", func_name="f",
                                inputs=inputs, attrs=[attr], outputs=[], infer_func=lambda: None)
    default[0].append(9)
    inputs.clear()
    assert attr.default == ((1,), (2, 3))
    assert d.inputs == (proto.OpInput("x", 0, proto.InputType.REQUIRED),) and d.outputs == ()
    with pytest.raises(AttributeError):
        d.op_type = "Other"


def test_fresh_output_names_skip_input_names():
    @proto.register_op(op_type="CompatNames", mutates_args=(("state", 2),))
    def infer(output0: TensorDesc, state: TensorDesc) -> Tuple[TensorDesc, List[TensorDesc], TensorDesc]:
        return output0, [], state

    assert [o.name for o in infer.__ge_op_proto_descriptor__.outputs] == ["output0_1", "output1", "state"]


@pytest.mark.parametrize("op_type", [None, "", 3])
def test_register_op_bad_op_type_message(op_type):
    with pytest.raises(TypeError) as info:
        proto.register_op(op_type=op_type)
    assert "register_op op_type must be a non-empty string" in str(info.value)
    assert repr(op_type) in str(info.value)


@pytest.mark.parametrize(("define", "exc", "fragment"), [
    (lambda: object(), TypeError, "register_op expects a Python function"),
    (lambda: _fn("def f(x) -> TensorDesc: pass"), TypeError, "input 'x' must have a type annotation"),
    (lambda: _fn("def f(x: int) -> TensorDesc: pass"), TypeError, "unsupported input annotation for 'x'"),
    (lambda: _fn("def f(x: Optional[TensorDesc] = None) -> None: pass"), TypeError,
     "input 'x' must not have a default value"),
    (lambda: _fn("def f(*, x: TensorDesc) -> None: pass"), TypeError, "unsupported attr annotation for 'x'"),
    (lambda: _fn("def f(*xs: TensorDesc) -> None: pass"), TypeError, "does not support variadic parameter 'xs'"),
    (lambda: _fn("def f(x: TensorDesc): pass"), TypeError, "return type annotation is required"),
    (lambda: _fn("def f(x: TensorDesc) -> Optional[TensorDesc]: pass"), TypeError, "unsupported return annotation"),
    (lambda: _fn("def f(x: TensorDesc) -> Tuple[TensorDesc, int]: pass"), TypeError, "output index 1"),
    (lambda: _fn("def f(*, v: int = True) -> None: pass"), TypeError, "default value for attr 'v'"),
    (lambda: _fn("def f(*, v: List[int] = (1,)) -> None: pass"), TypeError, "default value for attr 'v'"),
    (lambda: _fn("def f(*, v: int = None) -> None: pass"), TypeError, "default value for attr 'v'"),
    (lambda: _fn("def f(*, v: Tensor = None) -> None: pass"), TypeError, "Tensor attr 'v' does not support a default"),
])
def test_register_op_error_types_and_messages(define, exc, fragment):
    with pytest.raises(exc) as info:
        proto.register_op(op_type="CompatBad")(define())
    assert str(info.value).startswith("register_op op_type 'CompatBad' failed: ")
    assert fragment in str(info.value)


def _fn(src):
    ns = {"TensorDesc": TensorDesc, "Tensor": Tensor, "Optional": Optional, "List": List, "Tuple": Tuple}
    exec(src, ns)
    return ns["f"]


@pytest.mark.parametrize(("mutates", "exc"), [
    ("x", TypeError), (("x", ("y", 1)), TypeError), (("missing",), ValueError), (("x", "x"), ValueError),
    ((("x", 2),), ValueError), ((("x", True),), TypeError),
])
def test_bad_mutates_args_name_mutates_args(mutates, exc):
    with pytest.raises(exc, match="mutates_args"):
        proto.register_op(op_type="CompatMut", mutates_args=mutates)(
            _fn("def f(x: TensorDesc, y: TensorDesc) -> Tuple[TensorDesc, TensorDesc]: pass"))


def _same_source(module, annotation=TensorDesc, default=1.0):
    def infer_meta(x: TensorDesc, *, v: float = default) -> TensorDesc:
        return x

    infer_meta.__module__ = module
    infer_meta.__qualname__ = "infer_meta"
    infer_meta.__annotations__["return"] = annotation
    return infer_meta


def test_same_definition_again_is_a_no_op_even_with_nan_defaults():
    first, second = _same_source("src", default=math.nan), _same_source("src", default=math.nan)
    proto.register_op(op_type="CompatNan")(first)
    proto.register_op(op_type="CompatNan")(second)
    assert len(proto.get_registered_op_protos()) == 1
    assert second.__ge_op_proto_descriptor__ is first.__ge_op_proto_descriptor__
    assert proto.get_registered_op_protos()[0].infer_func is first


def test_changed_definition_and_other_source_are_value_errors_naming_both_sources():
    proto.register_op(op_type="CompatConflict")(_same_source("first"))
    with pytest.raises(ValueError) as changed:
        proto.register_op(op_type="CompatConflict")(_same_source("first", List[TensorDesc]))
    src = "module_name.func_name 'first.infer_meta', descriptor_key 'first:infer_meta:CompatConflict'"
    assert "descriptor content changed" in str(changed.value)
    assert f"existing source: {src}" in str(changed.value) and f"current source: {src}" in str(changed.value)
    with pytest.raises(ValueError) as other:
        proto.register_op(op_type="CompatConflict")(_same_source("second"))
    assert "op type 'CompatConflict' already registered" in str(other.value)
    assert "current source: module_name.func_name 'second.infer_meta'" in str(other.value)


def test_proto_lookups_return_none_when_absent():
    assert proto.get_registered_op_proto_by_op_type("Nope") is None
    assert proto.get_registered_op_proto_by_descriptor_key("m:f:Nope") is None


# ---- infer_meta results ---------------------------------------------------------------

def _infer(fn_src, op_type, inputs, counts=None):
    f = _fn(fn_src)
    proto.register_op(op_type=op_type)(f)
    return _proto.call_infer_meta(proto.get_registered_op_proto_by_op_type(op_type), inputs, {}, counts)


def test_several_outputs_may_come_as_a_list_or_a_tuple():
    x = TensorDesc([2], DataType.DT_FLOAT)
    as_list = _infer("def f(x: TensorDesc) -> Tuple[TensorDesc, TensorDesc]: return [x, x]", "CompatL", [x])
    as_tuple = _infer("def f(x: TensorDesc) -> Tuple[List[TensorDesc], TensorDesc]: return ((x, x), x)", "CompatT",
                      [x], {0: 2})
    assert [i for i, _ in as_list] == [0, 1] and [i for i, _ in as_tuple] == [0, 0, 1]


@pytest.mark.parametrize(("src", "counts", "fragment"), [
    ("def f(x: TensorDesc) -> TensorDesc: return 42", None, "must be TensorDesc"),
    ("def f(x: TensorDesc) -> Tuple[TensorDesc, TensorDesc]: return x", None,
     "must return list/tuple for multiple outputs"),
    ("def f(x: TensorDesc) -> List[TensorDesc]: return [x, x, x]", {0: 2}, "instance count mismatch"),
])
def test_bad_infer_meta_results_are_type_errors(src, counts, fragment):
    with pytest.raises(TypeError, match=fragment):
        _infer(src, "CompatBadResult", [TensorDesc([1], DataType.DT_FLOAT)], counts)


# ---- register_op_impl ---------------------------------------------------------------------

def test_interfaces_compare_equal_to_lists_and_stay_immutable():
    @custom_op.register_op_impl(op_type="CompatBoth")
    class Both:
        def execute(self) -> None: ...

        def declare_launch_args(self) -> None: ...

    d = Both.__ge_op_impl_descriptor__
    assert d.interfaces == ["eager_execute", "annotated_args"]
    assert d.to_bridge_dict() == custom_op.get_registered_op_impl_dicts()[0]
    assert d.to_bridge_dict()["interfaces"] == ["eager_execute", "annotated_args"]
    with pytest.raises(AttributeError):
        d.interfaces.append("compilable")


def test_non_callable_execute_or_declare_is_ignored_but_compile_must_be_callable():
    @custom_op.register_op_impl(op_type="CompatIgnored")
    class Ignored:
        declare_launch_args = 1

        def execute(self) -> None: ...

    assert Ignored.__ge_op_impl_descriptor__.interfaces == ["eager_execute"]
    with pytest.raises(TypeError, match="must implement at least one supported method"):
        custom_op.register_op_impl(op_type="CompatNothing")(type("Nothing", (), {"execute": None}))
    with pytest.raises(TypeError, match="compile must be callable"):
        custom_op.register_op_impl(op_type="CompatCompile")(type("C", (), {"compile": 1}))


def test_register_op_impl_messages():
    with pytest.raises(TypeError, match="non-empty string"):
        custom_op.register_op_impl(op_type="")
    with pytest.raises(TypeError, match="register_op_impl expects a class"):
        custom_op.register_op_impl(op_type="CompatFn")(lambda: None)

    class Abstract(ABC):
        @abstractmethod
        def execute(self) -> None: ...

    with pytest.raises(TypeError, match="register_op_impl expects a concrete class"):
        custom_op.register_op_impl(op_type="CompatAbstract")(Abstract)
    with pytest.raises(TypeError, match=r"Empty' must implement at least one supported method: execute, compile, "
                                        r"declare_launch_args"):
        custom_op.register_op_impl(op_type="CompatEmpty")(type("Empty", (), {}))
    custom_op.register_op_impl(op_type="CompatDup")(type("A", (), {"execute": lambda self: None}))
    with pytest.raises(ValueError, match="op impl type already exists"):
        custom_op.register_op_impl(op_type="CompatDup")(type("B", (), {"execute": lambda self: None}))


# ---- signature validation ---------------------------------------------------------------------

@pytest.mark.parametrize(("method", "fragment"), [
    ("def execute(self, x, *, beta) -> None: pass", r"expected attr name alpha.*actual attr name beta"),
    ("def execute(self, x: list[Tensor], *, alpha) -> None: pass", "input parameter at index 0 annotation"),
    ("def execute(self, x, *, alpha) -> int: pass", "None return annotation"),
    ("def execute(self, x, alpha) -> None: pass", "keyword-only"),
    ("def execute(self, *args, alpha) -> None: pass", "variadic"),
    ("def execute(self, *, alpha) -> None: pass", "expected 1 positional input parameters"),
])
def test_signature_errors_use_ge_wording(method, fragment):
    @proto.register_op(op_type="CompatSig")
    def infer(x: TensorDesc, *, alpha: float) -> TensorDesc:
        return x

    impl = custom_op.register_op_impl(op_type="CompatSig")(type("Sig", (), {"execute": _fn_with_tensor(method)}))
    with pytest.raises(TypeError, match=r"invalid execute signature for op type CompatSig, descriptor key "
                                        rf"{__name__}:Sig:CompatSig, method execute: .*{fragment}"):
        validate_descriptor(impl.__ge_op_impl_descriptor__, proto.get_registered_op_proto_by_op_type("CompatSig"))


def test_a_missing_return_annotation_is_a_warning_on_a_plain_class():
    """The newest GE refuses it, the earlier releases' own example plugin has none:
    it loads, and the newest refusal is kept in GE's wording (the host and
    --check warn with it)."""
    @proto.register_op(op_type="CompatNoRet")
    def infer(x: TensorDesc, *, alpha: float) -> TensorDesc:
        return x

    impl = custom_op.register_op_impl(op_type="CompatNoRet")(
        type("NoRet", (), {"execute": _fn_with_tensor("def execute(self, x, *, alpha): pass")}))
    decided = validate_descriptor(impl.__ge_op_impl_descriptor__, proto.get_registered_op_proto_by_op_type("CompatNoRet"))
    assert decided.rules == "newest" and decided.warnings == ()
    assert re.search(r"invalid execute signature for op type CompatNoRet, .*expected None return annotation, "
                     r"actual missing return annotation", decided.newest_refusal)


def _fn_with_tensor(src):
    ns = {"Tensor": Tensor}
    exec(src, ns)
    return next(v for k, v in ns.items() if k in ("execute", "compile", "declare_launch_args"))


def test_missing_ir_is_a_runtime_error_naming_the_method_and_op_type():
    impl = custom_op.register_op_impl(op_type="CompatNoIr")(type("N", (), {"execute": lambda self: None}))
    with pytest.raises(RuntimeError, match="canonical IR not found for schema-bound execute: CompatNoIr"):
        validate_descriptor(impl.__ge_op_impl_descriptor__, None)


def test_declare_launch_args_ctx_outside_its_callback():
    with pytest.raises(RuntimeError, match="only available inside declare_launch_args"):
        custom_op.get_declare_launch_args_ctx()
    with pytest.raises(RuntimeError, match="only available inside schema-bound execute"):
        custom_op.get_execute_ctx()
    with pytest.raises(RuntimeError, match="only available inside schema-bound compile"):
        custom_op.get_compile_ctx()


# ---- ge.runtime ---------------------------------------------------------------------------------

def test_tensor_desc_shape_is_settable_and_copied():
    src = StorageShape([1, 2], [1, 1, 2])
    desc = TensorDesc(src, DataType.DT_FLOAT16)
    src.origin_shape.set_dim(0, 9)
    assert _dims(desc.shape) == ([1, 2], [1, 1, 2])
    desc.shape = [3, -1]
    assert _dims(desc.shape) == ([3, -1], [3, -1])
    desc.shape = None
    assert _dims(desc.shape) == ([], [])


@pytest.mark.parametrize(("shape", "dtype", "exc", "fragment"), [
    ((1, 2), DataType.DT_FLOAT, TypeError, "StorageShape, list of integers, or None"),
    ([True], DataType.DT_FLOAT, TypeError, "StorageShape, list of integers, or None"),
    ([1.0], DataType.DT_FLOAT, TypeError, "StorageShape, list of integers, or None"),
    ([1] * 9, DataType.DT_FLOAT, ValueError, "maximum dimension count"),
    (None, 0, TypeError, "data_type must be a DataType"),
    (None, Format.FORMAT_NCHW, TypeError, "data_type must be a DataType"),
    (None, DataType.DT_MAX, ValueError, "less than DataType.DT_MAX"),
])
def test_tensor_desc_constructor_errors(shape, dtype, exc, fragment):
    with pytest.raises(exc, match=fragment):
        TensorDesc(shape, dtype)


def test_a_view_of_a_tensor_desc_expires_with_it():
    desc = TensorDesc([1], DataType.DT_FLOAT)
    shape = desc.shape
    assert shape.origin_shape.dims == [1]
    del desc
    gc.collect()
    with pytest.raises(RuntimeError, match="handle has expired"):
        shape.origin_shape.dims


def test_expand_dims_type_full_size_and_set_expand_index():
    rule = ExpandDimsType("100")
    assert rule.full_size == 3 and not rule.is_expand_index(2)
    rule.set_expand_index(2)
    assert rule.is_expand_index(2) and rule.rule == "101"
    with pytest.raises(ValueError, match="full_size"):
        rule.set_expand_index(3)


@pytest.mark.parametrize(("args", "exc"), [
    ((0, 2**40), ValueError), ((-1,), ValueError), ((DataType.DT_INT32,), TypeError),
])
def test_storage_format_refuses_out_of_range_formats_and_other_enums(args, exc):
    from ge.runtime import StorageFormat
    with pytest.raises(exc, match="format"):
        StorageFormat(*args)
