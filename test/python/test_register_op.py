"""register_op and the prototype registry (share/docs/plugin-authors.md, "The prototype")."""
import dataclasses
import functools
from typing import List, Optional, Tuple, Union

import pytest

import ge.custom_op
from ge.custom_op import register_op
from ge.custom_op import proto as proto_mod
from ge.custom_op._proto import canonical_ir
from ge.custom_op.proto import InputType, OutputType
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc

P = "register_op op_type 'Op' failed: "


def protos():
    return proto_mod.get_registered_op_protos()


# --------------------------------------------------------------------------- op_type

@pytest.mark.parametrize("bad", [None, 5, b"Op", "", ["Op"]])
def test_bad_op_type_is_type_error_before_any_function(raises, bad):
    with raises(TypeError, f"register_op op_type must be a non-empty string, got {bad!r}"):
        register_op(op_type=bad)  # no function involved yet
    assert protos() == []


def test_op_type_is_keyword_only_and_required(raises):
    with pytest.raises(TypeError):
        register_op("Op")
    with pytest.raises(TypeError):
        register_op()


# --------------------------------------------------------------------------- not a function

class _Callable:
    def __call__(self, x: TensorDesc) -> TensorDesc:
        return x


def _plain(x: TensorDesc) -> TensorDesc:
    return x


@pytest.mark.parametrize("target", [
    _Callable, _Callable(), len, functools.partial(_plain), staticmethod(_plain), 42, None,
], ids=["class", "instance", "builtin", "partial", "staticmethod", "int", "none"])
def test_not_a_function(raises, target):
    with raises(TypeError, P + f"register_op expects a Python function, got {type(target).__name__}"):
        register_op(op_type="Op")(target)
    assert protos() == []


def test_generator_function_rejected(raises):
    def gen(x: TensorDesc) -> TensorDesc:
        yield x

    with raises(TypeError, P + "register_op expects a Python function, got the generator or "
                "coroutine function"):
        register_op(op_type="Op")(gen)


def test_lambda_is_a_function():
    f = lambda x: x  # noqa: E731
    f.__annotations__ = {"x": TensorDesc, "return": TensorDesc}
    register_op(op_type="Op")(f)
    assert proto_mod.get_registered_op_proto_by_op_type("Op").infer_func is f


# --------------------------------------------------------------------------- variadic / annotations

def test_var_positional_rejected(raises):
    def f(x: TensorDesc, *args: TensorDesc) -> TensorDesc:
        return x

    with raises(TypeError, P + "register_op does not support variadic parameter 'args'"):
        register_op(op_type="Op")(f)
    assert protos() == []


def test_var_keyword_rejected(raises):
    def f(x: TensorDesc, **kwargs: int) -> TensorDesc:
        return x

    with raises(TypeError, P + "register_op does not support variadic parameter 'kwargs'"):
        register_op(op_type="Op")(f)


def test_missing_input_annotation(raises):
    def f(x, y: TensorDesc) -> TensorDesc:
        return y

    with raises(TypeError, P + "input 'x' must have a type annotation"):
        register_op(op_type="Op")(f)


def test_missing_attr_annotation(raises):
    def f(x: TensorDesc, *, alpha=1) -> TensorDesc:
        return x

    with raises(TypeError, P + "attr 'alpha' must have a type annotation"):
        register_op(op_type="Op")(f)


def test_missing_return_annotation(raises):
    def f(x: TensorDesc):
        return x

    with raises(TypeError, P + "register_op return type annotation is required ("):
        register_op(op_type="Op")(f)


@pytest.mark.parametrize("ann", [
    int, Tensor, Optional[List[TensorDesc]], List, list, Union[TensorDesc, int],
    Tuple[TensorDesc], "TensorDesc | int",
], ids=str)
def test_unsupported_input_annotation(raises, ann):
    def f(x) -> None:
        pass

    f.__annotations__ = {"x": ann, "return": None}
    with raises(TypeError, P + "unsupported input annotation for 'x': "):
        register_op(op_type="Op")(f)


@pytest.mark.parametrize("ann", [
    dict, Optional[int], List, list, Tuple[int], List[Tensor], TensorDesc, List[List[float]],
    Union[int, float], bytes, complex,
], ids=str)
def test_unsupported_attr_annotation(raises, ann):
    def f(*, a) -> None:
        pass

    f.__annotations__ = {"a": ann, "return": None}
    with raises(TypeError, P + "unsupported attr annotation for 'a': "):
        register_op(op_type="Op")(f)


@pytest.mark.parametrize("ann,fragment", [
    (int, "unsupported return annotation: int"),
    (Tensor, "unsupported return annotation: Tensor"),
    (Optional[TensorDesc], "unsupported return annotation: Optional["),
    (Tuple[()], "unsupported return annotation: Tuple[()]"),
    (Tuple[TensorDesc, ...], "unsupported return annotation: Tuple["),
    (Tuple[TensorDesc, int], "unsupported return annotation at output index 1: int"),
    (list, "unsupported return annotation: list"),
    (tuple, "unsupported return annotation: tuple"),
    (List[Optional[TensorDesc]], "unsupported return annotation: List[Optional["),
], ids=lambda v: str(v) if not isinstance(v, str) else "")
def test_unsupported_return_annotation(raises, ann, fragment):
    def f(x: TensorDesc):
        return x

    f.__annotations__["return"] = ann
    with raises(TypeError, P + fragment):
        register_op(op_type="Op")(f)


# --------------------------------------------------------------------------- inputs

def test_input_kinds_all_spellings():
    @register_op(op_type="Op")
    def f(a: TensorDesc, b: Optional[TensorDesc], c: "TensorDesc | None",
          d: Union[None, TensorDesc], e: List[TensorDesc], g: list[TensorDesc],
          /, h: TensorDesc) -> None:
        pass

    p = proto_mod.get_registered_op_proto_by_op_type("Op")
    R, O, D = InputType.REQUIRED, InputType.OPTIONAL, InputType.DYNAMIC
    assert [(i.name, i.index, i.kind) for i in p.inputs] == [
        ("a", 0, R), ("b", 1, O), ("c", 2, O), ("d", 3, O), ("e", 4, D), ("g", 5, D), ("h", 6, R)]
    assert all(type(i.kind) is InputType for i in p.inputs)
    assert p.attrs == () and p.outputs == ()
    assert canonical_ir(p).return_form == "none"
    assert [(i.name, i.kind) for i in canonical_ir(p).inputs] == [
        ("a", "required"), ("b", "optional"), ("c", "optional"), ("d", "optional"),
        ("e", "dynamic"), ("g", "dynamic"), ("h", "required")]


@pytest.mark.parametrize("ann,default", [
    (TensorDesc, None), (Optional[TensorDesc], None), (Optional[TensorDesc], 0),
    (List[TensorDesc], []),
], ids=["required", "optional-none", "optional-non-none", "dynamic"])
def test_input_defaults_rejected(raises, ann, default):
    # Upstream rule: any default on an input is rejected, Optional[...] = None included.
    def f(x=default) -> None:
        pass

    f.__annotations__ = {"x": ann, "return": None}
    with raises(TypeError, P + "input 'x' must not have a default value"):
        register_op(op_type="Op")(f)
    assert protos() == []


# --------------------------------------------------------------------------- attrs (section 6)

ATTR_TABLE = [
    (int, "VT_INT", 3),
    (float, "VT_FLOAT", 1.5),
    (bool, "VT_BOOL", True),
    (str, "VT_STRING", "s"),
    (DataType, "VT_DATA_TYPE", DataType.DT_INT32),
    (Tensor, "VT_TENSOR", None),
    (List[int], "VT_LIST_INT", [1, 2]),
    (list[int], "VT_LIST_INT", []),
    (List[float], "VT_LIST_FLOAT", [0.5]),
    (List[bool], "VT_LIST_BOOL", [True, False]),
    (List[str], "VT_LIST_STRING", ["a"]),
    (List[DataType], "VT_LIST_DATA_TYPE", [DataType.DT_FLOAT16]),
    (List[List[int]], "VT_LIST_LIST_INT", [[1, 2], []]),
    (list[list[int]], "VT_LIST_LIST_INT", [[3]]),
]


@pytest.mark.parametrize("ann,vt,default", ATTR_TABLE, ids=[str(r[0]) for r in ATTR_TABLE])
def test_attr_types_required(ann, vt, default):
    def f(x: TensorDesc, *, a) -> TensorDesc:
        return x

    f.__annotations__["a"] = ann
    register_op(op_type="Op")(f)
    (attr,) = proto_mod.get_registered_op_proto_by_op_type("Op").attrs
    assert isinstance(attr, proto_mod.OpAttr)
    assert (attr.name, attr.index, attr.type, attr.is_required, attr.default) == ("a", 0, vt, True, None)


@pytest.mark.parametrize("ann,vt,default",
                         [r for r in ATTR_TABLE if r[1] != "VT_TENSOR"],
                         ids=[str(r[0]) for r in ATTR_TABLE if r[1] != "VT_TENSOR"])
def test_attr_types_with_default(ann, vt, default):
    def f(x: TensorDesc, *, a=default) -> TensorDesc:
        return x

    f.__annotations__["a"] = ann
    register_op(op_type="Op")(f)
    d = proto_mod.get_registered_op_proto_dict_by_op_type("Op")
    assert d["attrs"] == [{"name": "a", "type": vt, "is_required": False, "default": default}]
    assert type(d["attrs"][0]["default"]) is type(default)


BAD_DEFAULTS = [
    (int, True), (int, 1.0), (int, "1"), (int, DataType.DT_INT32), (int, 1 << 63),
    (float, 1), (float, True), (bool, 1), (bool, 0), (str, b"x"),
    (DataType, 1), (DataType, DataType.DT_MAX), (DataType, "DT_FLOAT"),
    (List[int], (1, 2)), (List[int], [1, True]), (List[int], [1.0]),
    (List[float], [1]), (List[bool], [1]), (List[str], [b"a"]), (List[str], "ab"),
    (List[DataType], [0]), (List[List[int]], [(1,)]), (List[List[int]], [1]),
    (List[List[int]], ((1,),)),
]


# The type text of "default value for attr 'a' must be <text>[ in the int64 range]".
DEFAULT_TEXT = {
    int: "int in the int64 range", float: "float", bool: "bool", str: "str",
    DataType: "DataType", List[int]: "List[int] in the int64 range", List[float]: "List[float]",
    List[bool]: "List[bool]", List[str]: "List[str]", List[DataType]: "List[DataType]",
    List[List[int]]: "List[List[int]] in the int64 range",
}


# Scalar annotations whose default has another type get GE's own wording
# ("must be int, got bool"); values of the right type out of range, and lists,
# get ours with the value.
SCALARS = {int: "int", float: "float", bool: "bool", str: "str"}


def bad_default_message(ann, default):
    if ann in SCALARS and type(default) is not ann:
        return P + f"default value for attr 'a' must be {SCALARS[ann]}, got {type(default).__name__}"
    return (P + f"default value for attr 'a' must be {DEFAULT_TEXT[ann]}, "
            f"got {default!r} ({type(default).__name__})")


@pytest.mark.parametrize("ann,default", BAD_DEFAULTS, ids=[f"{a}={d!r}" for a, d in BAD_DEFAULTS])
def test_bad_attr_default(raises, ann, default):
    def f(*, a=default) -> None:
        pass

    f.__annotations__ = {"a": ann, "return": None}
    with raises(TypeError, bad_default_message(ann, default)):
        register_op(op_type="Op")(f)
    assert protos() == []


@pytest.mark.parametrize("ann", [int, float, bool, str, DataType, List[int]], ids=str)
def test_none_default_rejected(raises, ann):
    def f(*, a=None) -> None:
        pass

    f.__annotations__ = {"a": ann, "return": None}
    with raises(TypeError, bad_default_message(ann, None)):
        register_op(op_type="Op")(f)
    assert protos() == []


@pytest.mark.parametrize("ann", [int, float, bool, str, DataType, List[int]], ids=str)
def test_optional_attr_none_default_is_unwrapped_then_rejected(raises, ann):
    # Optional[X] = None names the attr type X; None is then not a valid X default.
    def f(*, a=None) -> None:
        pass

    f.__annotations__ = {"a": Optional[ann], "return": None}
    with raises(TypeError, bad_default_message(ann, None)):
        register_op(op_type="Op")(f)
    assert protos() == []


@pytest.mark.parametrize("default", [None, object()], ids=["none", "object"])
def test_tensor_attr_default_rejected(raises, default):
    def f(*, t: Tensor = default) -> None:
        pass

    with raises(TypeError, P + "Tensor attr 't' does not support a default value"):
        register_op(op_type="Op")(f)
    assert protos() == []


def test_datatype_default_stays_datatype_in_dict():
    @register_op(op_type="Op")
    def f(*, dt: DataType = DataType.DT_BF16, dts: List[DataType] = [DataType.DT_INT8]) -> None:
        pass

    attrs = proto_mod.get_registered_op_proto_dicts()[0]["attrs"]
    assert attrs[0]["default"] is DataType.DT_BF16
    assert type(attrs[1]["default"][0]) is DataType


def test_list_default_is_copied_and_immutable_in_record():
    default = [[1, 2]]

    @register_op(op_type="Op")
    def f(*, a: List[List[int]] = default) -> None:
        pass

    default[0].append(3)
    p = proto_mod.get_registered_op_proto_by_op_type("Op")
    assert p.attrs[0].default == ((1, 2),)
    assert p.to_bridge_dict()["attrs"][0]["default"] == [[1, 2]]
    assert canonical_ir(p).to_dict()["attrs"][0]["default"] == [[1, 2]]


# --------------------------------------------------------------------------- outputs / return forms

@pytest.mark.parametrize("ann,form,kinds", [
    (None, "none", []),
    (TensorDesc, "single", ["required"]),
    (List[TensorDesc], "list", ["dynamic"]),
    (list[TensorDesc], "list", ["dynamic"]),
    (Tuple[TensorDesc], "single", ["required"]),  # the form follows the outputs
    (tuple[TensorDesc, List[TensorDesc], TensorDesc], "tuple", ["required", "dynamic", "required"]),
], ids=str)
def test_return_forms(ann, form, kinds):
    def f(x: TensorDesc):
        return x

    f.__annotations__["return"] = ann
    register_op(op_type="Op")(f)
    p = proto_mod.get_registered_op_proto_by_op_type("Op")
    assert [o.kind for o in p.outputs] == [OutputType[k.upper()] for k in kinds]
    assert [o.index for o in p.outputs] == list(range(len(kinds)))
    assert [o.name for o in p.outputs] == [f"output{i}" for i in range(len(kinds))]
    ir = canonical_ir(p)
    assert [o.kind for o in ir.outputs] == kinds
    # canonical_ir derives the host's return form from the outputs (not the annotation).
    assert ir.return_form == form


# --------------------------------------------------------------------------- mutates_args

def test_mutates_names_form():
    @register_op(op_type="Op", mutates_args=("ref", "acc"))
    def f(ref: TensorDesc, acc: TensorDesc, x: TensorDesc) -> Tuple[TensorDesc, TensorDesc, TensorDesc]:
        return ref, acc, x

    p = proto_mod.get_registered_op_proto_by_op_type("Op")
    assert [o.name for o in p.outputs] == ["ref", "acc", "output2"]
    assert canonical_ir(p).mutates == (("ref", 0), ("acc", 1))


def test_mutates_pairs_form_sorted_by_output_index():
    @register_op(op_type="Op", mutates_args=[("b", 2), ["a", 0]])
    def f(a: TensorDesc, b: List[TensorDesc]) -> Tuple[TensorDesc, TensorDesc, List[TensorDesc]]:
        return a, a, b

    p = proto_mod.get_registered_op_proto_by_op_type("Op")
    assert [o.name for o in p.outputs] == ["a", "output1", "b"]
    assert canonical_ir(p).to_dict()["mutates"] == [["a", 0], ["b", 2]]


def test_output_name_clash_appends_suffix():
    # Only input names (and earlier output names) count as clashes, not attr names.
    @register_op(op_type="Op")
    def f(output0: TensorDesc, output0_1: TensorDesc, *, output1: int = 1) -> Tuple[TensorDesc, TensorDesc]:
        return output0, output0_1

    names = [o.name for o in proto_mod.get_registered_op_proto_by_op_type("Op").outputs]
    assert names == ["output0_2", "output1"]


def test_output_name_clash_with_aliased_name():
    @register_op(op_type="Op", mutates_args=[("output1", 0)])
    def f(output1: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
        return output1, output1

    names = [o.name for o in proto_mod.get_registered_op_proto_by_op_type("Op").outputs]
    assert names == ["output1", "output1_1"]


def test_mutates_none_means_no_alias():
    @register_op(op_type="Op", mutates_args=None)
    def f(x: TensorDesc) -> TensorDesc:
        return x

    p = proto_mod.get_registered_op_proto_by_op_type("Op")
    assert [o.name for o in p.outputs] == ["output0"]
    assert canonical_ir(p).mutates == ()


NOT_A_SEQUENCE = ("mutates_args must be a list or tuple of input names or of "
                  "(input_name, output_index) pairs, got ")
BAD_PAIR = "mutates_args explicit entries must be (input_name, output_index), got "
BAD_PAIR_TYPES = "mutates_args explicit entries must be (str, int), got "
MIXED = "mutates_args sequential and explicit forms cannot be mixed"


@pytest.mark.parametrize("bad,fragment", [
    ("x", NOT_A_SEQUENCE + "str"),
    (b"x", NOT_A_SEQUENCE + "bytes"),
    (5, NOT_A_SEQUENCE + "int"),
    ({"x"}, NOT_A_SEQUENCE + "set"),
    ([1], BAD_PAIR + "1"),
    ([("x",)], BAD_PAIR + "('x',)"),
    ([("x", "0")], BAD_PAIR_TYPES + "('x', '0')"),
    ([("x", 0, 1)], BAD_PAIR + "('x', 0, 1)"),
    ([("x", True)], BAD_PAIR_TYPES + "('x', True)"),
    ([(0, "x")], BAD_PAIR_TYPES + "(0, 'x')"),
    (["x", ("y", 1)], MIXED),
    ([None], BAD_PAIR + "None"),
], ids=lambda v: "" if isinstance(v, str) and v.startswith("mutates_args") else repr(v))
def test_mutates_bad_shape_is_type_error_when_decorating(raises, bad, fragment):
    decorator = register_op(op_type="Op", mutates_args=bad)  # shape checked when decorating

    def f(x: TensorDesc, y: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
        return x, y

    with raises(TypeError, P + fragment):
        decorator(f)
    assert protos() == []
    assert not hasattr(f, "__ge_op_proto_descriptor__")


def test_mutates_mixed_forms_message(raises):
    def f(x: TensorDesc, y: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
        return x, y

    with raises(TypeError, P + MIXED):
        register_op(op_type="Op", mutates_args=["x", ("y", 1)])(f)


@pytest.mark.parametrize("mutates,fragment", [
    (["nope"], "mutates_args input does not exist: 'nope'"),
    ([("nope", 0)], "mutates_args input does not exist: 'nope'"),
    ([("x", 2)], "mutates_args output index out of range: 2"),
    ([("x", -1)], "mutates_args output index out of range: -1"),
    (["x", "y", "x"], "mutates_args has more entries (3) than outputs (2)"),
    (["x", "x"], "mutates_args input is duplicated: 'x'"),
    ([("x", 0), ("y", 0)], "mutates_args output index is duplicated: 0"),
    ([("opt", 0)], "mutates_args output 0 (required) cannot alias optional input 'opt'"),
    ([("dyn", 0)], "mutates_args output 0 (required) cannot alias dynamic input 'dyn'"),
    ([("x", 1)], "mutates_args output 1 (dynamic) cannot alias required input 'x'"),
    ([], None),
], ids=repr)
def test_mutates_bad_names_or_indices_are_value_errors(raises, mutates, fragment):
    def f(x: TensorDesc, y: TensorDesc, opt: Optional[TensorDesc],
          dyn: List[TensorDesc]) -> Tuple[TensorDesc, List[TensorDesc]]:
        return x, dyn

    if fragment is None:
        register_op(op_type="Op", mutates_args=mutates)(f)
        return
    with raises(ValueError, P + fragment):
        register_op(op_type="Op", mutates_args=mutates)(f)
    assert protos() == []


def test_mutates_on_no_outputs_is_value_error(raises):
    def f(x: TensorDesc) -> None:
        pass

    with raises(ValueError, P + "mutates_args has more entries (1) than outputs (0)"):
        register_op(op_type="Op", mutates_args=["x"])(f)


# --------------------------------------------------------------------------- registration semantics

def test_decorator_returns_function_and_does_not_call_it():
    calls = []

    def f(x: TensorDesc) -> TensorDesc:
        calls.append(x)
        raise AssertionError("must not be called")

    assert register_op(op_type="Op")(f) is f
    assert calls == []


def test_reregistering_same_function_is_noop():
    def f(x: TensorDesc, *, a: int = 1) -> TensorDesc:
        return x

    register_op(op_type="Op")(f)
    first = proto_mod.get_registered_op_proto_by_op_type("Op")
    assert register_op(op_type="Op")(f) is f
    assert protos() == [first]
    assert proto_mod.get_registered_op_proto_by_op_type("Op") is first


SRC = """
from ge.custom_op import register_op
from ge.runtime import TensorDesc

@register_op(op_type="Op")
def proto(x: TensorDesc, *, a: int = {default}) -> TensorDesc:
    return {body}
"""


def test_reexecuting_same_source_is_noop(exec_plugin):
    first = exec_plugin(SRC.format(default=1, body="x"))["proto"]
    exec_plugin(SRC.format(default=1, body="x"))
    assert [p.infer_func for p in protos()] == [first]


SOURCES = ("existing source: module_name.func_name 'plugin_mod.proto', descriptor_key "
           "'plugin_mod:proto:Op'; current source: module_name.func_name 'plugin_mod.proto', "
           "descriptor_key 'plugin_mod:proto:Op'")


def test_changed_signature_is_value_error(exec_plugin, raises):
    exec_plugin(SRC.format(default=1, body="x"))
    with raises(ValueError, P + "python op proto descriptor content changed for descriptor_key "
                "'plugin_mod:proto:Op'; " + SOURCES):
        exec_plugin(SRC.format(default=2, body="x"))
    assert protos()[0].attrs[0].default == 1


def test_changed_body_same_definition_is_noop(exec_plugin):
    # Only the definition (inputs/attrs/outputs/defaults) is compared, not the body.
    first = exec_plugin(SRC.format(default=1, body="x"))["proto"]
    second = exec_plugin(SRC.format(default=1, body="None"))["proto"]
    assert second is not first
    assert [p.infer_func for p in protos()] == [first]
    assert second.__ge_op_proto_descriptor__ is protos()[0]


def test_nan_default_reregistration_is_noop(exec_plugin):
    src = SRC.replace("a: int", "a: float")
    first = exec_plugin(src.format(default="float('nan')", body="x"))["proto"]
    exec_plugin(src.format(default="float('nan')", body="x"))
    assert [p.infer_func for p in protos()] == [first]


def test_changed_mutates_is_value_error(raises):
    def f(x: TensorDesc) -> TensorDesc:
        return x

    register_op(op_type="Op")(f)
    key = f"{__name__}:{f.__qualname__}:Op"
    with raises(ValueError, P + f"python op proto descriptor content changed for descriptor_key "
                f"'{key}'; existing source: ", "; current source: "):
        register_op(op_type="Op", mutates_args=["x"])(f)


def test_same_op_type_from_another_function_is_value_error(raises):
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> TensorDesc:
        return x

    def g(x: TensorDesc) -> TensorDesc:
        return x

    f_key, g_key = f"{__name__}:{f.__qualname__}:Op", f"{__name__}:{g.__qualname__}:Op"
    with raises(ValueError, P + f"python op proto op type 'Op' already registered by '{f_key}'; "
                f"existing source: module_name.func_name '{__name__}.{f.__qualname__}', "
                f"descriptor_key '{f_key}'; current source: module_name.func_name "
                f"'{__name__}.{g.__qualname__}', descriptor_key '{g_key}'"):
        register_op(op_type="Op")(g)
    assert proto_mod.get_registered_op_proto_by_op_type("Op").infer_func is f


def test_one_function_may_serve_two_op_types():
    def f(x: TensorDesc) -> TensorDesc:
        return x

    register_op(op_type="A")(f)
    register_op(op_type="B")(f)
    assert [p.op_type for p in protos()] == ["A", "B"]


# --------------------------------------------------------------------------- records and registry

def test_record_fields_and_to_dict():
    @register_op(op_type="MyOp", mutates_args=["x"])
    def my_proto(x: TensorDesc, b: Optional[TensorDesc], xs: List[TensorDesc], *,
                 alpha: float, dt: DataType = DataType.DT_FLOAT,
                 shape: List[List[int]] = [[1, 2]]) -> Tuple[TensorDesc, List[TensorDesc]]:
        return x, xs

    qualname = "test_record_fields_and_to_dict.<locals>.my_proto"
    key = f"{__name__}:{qualname}:MyOp"
    p = proto_mod.get_registered_op_proto_by_op_type("MyOp")
    assert isinstance(p, proto_mod.OpProtoDescriptor)
    assert my_proto.__ge_op_proto_descriptor__ is p
    assert proto_mod.get_registered_op_proto_by_descriptor_key(key) is p
    assert p.infer_func is my_proto
    assert p.descriptor_key == key
    assert p.op_type == "MyOp"
    assert p.module_name == __name__
    assert p.func_name == qualname
    assert p.inputs == (proto_mod.OpInput("x", 0, InputType.REQUIRED),
                        proto_mod.OpInput("b", 1, InputType.OPTIONAL),
                        proto_mod.OpInput("xs", 2, InputType.DYNAMIC))
    assert p.outputs == (proto_mod.OpOutput("x", 0, OutputType.REQUIRED),
                         proto_mod.OpOutput("output1", 1, OutputType.DYNAMIC))
    assert p.attrs[0] == proto_mod.OpAttr("alpha", 0, "VT_FLOAT", True, None)
    assert p.attrs[2] == proto_mod.OpAttr("shape", 2, "VT_LIST_LIST_INT", False, [[1, 2]])
    assert p.to_bridge_dict() == {
        "descriptor_key": key,
        "op_type": "MyOp",
        "module_name": __name__,
        "func_name": qualname,
        "inputs": [{"name": "x", "kind": 0}, {"name": "b", "kind": 1}, {"name": "xs", "kind": 2}],
        "attrs": [
            {"name": "alpha", "type": "VT_FLOAT", "is_required": True, "default": None},
            {"name": "dt", "type": "VT_DATA_TYPE", "is_required": False, "default": DataType.DT_FLOAT},
            {"name": "shape", "type": "VT_LIST_LIST_INT", "is_required": False, "default": [[1, 2]]},
        ],
        "outputs": [{"name": "x", "kind": 0}, {"name": "output1", "kind": 1}],
    }
    assert proto_mod.get_registered_op_proto_dict_by_op_type("MyOp") == p.to_bridge_dict()
    # The host's internal canonical IR (the old record format), derived from the descriptor.
    internal = ge.custom_op._proto
    ir = canonical_ir(p)
    assert isinstance(ir, internal.OpProto)
    assert ir.func is my_proto
    assert ir.qualname == qualname
    assert ir.inputs == (internal.IrInput("x", "required"), internal.IrInput("b", "optional"),
                         internal.IrInput("xs", "dynamic"))
    assert ir.outputs == (internal.IrOutput("x", "required"),
                          internal.IrOutput("output1", "dynamic"))
    assert ir.attrs[0] == internal.IrAttr("alpha", "VT_FLOAT", True, None)
    assert ir.to_dict() == {
        "op_type": "MyOp",
        "module_name": __name__,
        "qualname": "test_record_fields_and_to_dict.<locals>.my_proto",
        "inputs": [{"name": "x", "kind": "required"}, {"name": "b", "kind": "optional"},
                   {"name": "xs", "kind": "dynamic"}],
        "outputs": [{"name": "x", "kind": "required"}, {"name": "output1", "kind": "dynamic"}],
        "attrs": [
            {"name": "alpha", "type": "VT_FLOAT", "required": True, "default": None},
            {"name": "dt", "type": "VT_DATA_TYPE", "required": False, "default": DataType.DT_FLOAT},
            {"name": "shape", "type": "VT_LIST_LIST_INT", "required": False, "default": [[1, 2]]},
        ],
        "mutates": [["x", 0]],
        "return_form": "tuple",
    }


def test_record_is_frozen():
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> TensorDesc:
        return x

    p = protos()[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.op_type = "Other"
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.inputs[0].name = "y"


def test_registry_sorted_lookup_and_clear(raises):
    def f() -> None:
        pass

    for op_type in ["Zeta", "Alpha", "Mid"]:
        register_op(op_type=op_type)(f)
    assert [p.op_type for p in proto_mod.get_registered_op_protos()] == ["Alpha", "Mid", "Zeta"]
    assert [d["op_type"] for d in proto_mod.get_registered_op_proto_dicts()] == ["Alpha", "Mid", "Zeta"]
    assert proto_mod.get_registered_op_proto_by_op_type("Mid").op_type == "Mid"
    assert proto_mod.get_registered_op_proto_by_op_type("Absent") is None
    assert proto_mod.get_registered_op_proto_dict_by_op_type("Absent") is None
    with raises(TypeError, "op_type must be a str"):
        proto_mod.get_registered_op_proto_by_op_type(1)
    proto_mod.clear_registered_op_protos()
    assert proto_mod.get_registered_op_protos() == []
    assert proto_mod.get_registered_op_proto_dicts() == []


def test_lambda_without_annotations_needs_return_annotation(raises):
    with raises(TypeError, P + "register_op return type annotation is required ("):
        register_op(op_type="Op")(lambda: None)


def test_failed_registration_registers_nothing(raises):
    def f(x: TensorDesc, *, a: int = True) -> TensorDesc:
        return x

    with raises(TypeError, P + "default value for attr 'a' must be int, got bool"):
        register_op(op_type="Op")(f)
    assert proto_mod.get_registered_op_proto_by_op_type("Op") is None
    assert not hasattr(f, "__ge_op_proto_descriptor__")


def test_proto_module_is_public():
    assert ge.custom_op.proto is proto_mod
    for name in ["get_registered_op_protos", "get_registered_op_proto_by_op_type",
                 "clear_registered_op_protos", "get_registered_op_proto_dicts"]:
        assert callable(getattr(proto_mod, name))
    assert proto_mod.register_op is register_op
    for name in ["InputType", "OutputType", "OpInput", "OpAttr", "OpOutput", "OpProtoDescriptor"]:
        assert name in proto_mod.__all__ and hasattr(proto_mod, name)
    for name in ["OpProto", "IrInput", "IrOutput", "IrAttr"]:
        assert not hasattr(proto_mod, name)
    assert [(m.name, int(m)) for m in InputType] == [("REQUIRED", 0), ("OPTIONAL", 1), ("DYNAMIC", 2)]
    assert [(m.name, int(m)) for m in OutputType] == [("REQUIRED", 0), ("DYNAMIC", 1)]


# --------------------------------------------------------------------------- string annotations

FUTURE_SRC = """
from __future__ import annotations
from typing import List, Optional, Tuple
from ge.custom_op import register_op
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc

@register_op(op_type="Op", mutates_args=["x"])
def proto(x: TensorDesc, b: TensorDesc | None, xs: list[TensorDesc], *,
          dt: DataType = DataType.DT_INT8, t: Tensor, ks: List[List[int]] = [[1]]
          ) -> Tuple[TensorDesc, List[TensorDesc]]:
    return x, xs
"""


def test_future_annotations_resolve(exec_plugin):
    exec_plugin(FUTURE_SRC)
    d = proto_mod.get_registered_op_proto_dict_by_op_type("Op")
    assert [i["kind"] for i in d["inputs"]] == [0, 1, 2]
    assert [(a["name"], a["type"]) for a in d["attrs"]] == [
        ("dt", "VT_DATA_TYPE"), ("t", "VT_TENSOR"), ("ks", "VT_LIST_LIST_INT")]
    assert [(o["name"], o["kind"]) for o in d["outputs"]] == [("x", 0), ("output1", 1)]
    assert canonical_ir(proto_mod.get_registered_op_proto_by_op_type("Op")).return_form == "tuple"


def test_future_annotation_unresolvable_is_type_error(exec_plugin, raises):
    src = FUTURE_SRC.replace("xs: list[TensorDesc]", "xs: list[NoSuchDesc]")
    with raises(TypeError, P + "failed to resolve annotations for 'proto': input 'xs': ",
                "NoSuchDesc"):
        exec_plugin(src)
    assert protos() == []


def test_future_annotation_unresolvable_return(exec_plugin, raises):
    src = FUTURE_SRC.replace("-> Tuple[TensorDesc, List[TensorDesc]]", "-> Missing")
    with raises(TypeError, P + "failed to resolve annotations for 'proto': the return annotation: ",
                "'Missing'"):
        exec_plugin(src)
