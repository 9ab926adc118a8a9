"""register_op and the prototype registry (API.md sections 2 and 6)."""
import dataclasses
import functools
from typing import List, Optional, Tuple, Union

import pytest

import ge.custom_op
from ge.custom_op import register_op
from ge.custom_op import proto as proto_mod
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc

P = "register_op op_type 'Op' failed:"


def protos():
    return proto_mod.get_registered_op_protos()


# --------------------------------------------------------------------------- op_type

@pytest.mark.parametrize("bad", [None, 5, b"Op", "", ["Op"]])
def test_bad_op_type_is_type_error_before_any_function(raises, bad):
    with raises(TypeError, "op_type", "non-empty str"):
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
    with raises(TypeError, P, "function"):
        register_op(op_type="Op")(target)
    assert protos() == []


def test_generator_function_rejected(raises):
    def gen(x: TensorDesc) -> TensorDesc:
        yield x

    with raises(TypeError, P, "generator"):
        register_op(op_type="Op")(gen)


def test_lambda_is_a_function():
    f = lambda x: x  # noqa: E731
    f.__annotations__ = {"x": TensorDesc, "return": TensorDesc}
    register_op(op_type="Op")(f)
    assert proto_mod.get_registered_op_proto_by_op_type("Op").func is f


# --------------------------------------------------------------------------- variadic / annotations

def test_var_positional_rejected(raises):
    def f(x: TensorDesc, *args: TensorDesc) -> TensorDesc:
        return x

    with raises(TypeError, P, "*args"):
        register_op(op_type="Op")(f)
    assert protos() == []


def test_var_keyword_rejected(raises):
    def f(x: TensorDesc, **kwargs: int) -> TensorDesc:
        return x

    with raises(TypeError, P, "**kwargs"):
        register_op(op_type="Op")(f)


def test_missing_input_annotation(raises):
    def f(x, y: TensorDesc) -> TensorDesc:
        return y

    with raises(TypeError, P, "'x'", "missing an annotation"):
        register_op(op_type="Op")(f)


def test_missing_attr_annotation(raises):
    def f(x: TensorDesc, *, alpha=1) -> TensorDesc:
        return x

    with raises(TypeError, P, "'alpha'", "missing an annotation"):
        register_op(op_type="Op")(f)


def test_missing_return_annotation(raises):
    def f(x: TensorDesc):
        return x

    with raises(TypeError, P, "missing return annotation"):
        register_op(op_type="Op")(f)


@pytest.mark.parametrize("ann", [
    int, Tensor, Optional[List[TensorDesc]], List, list, Union[TensorDesc, int],
    Tuple[TensorDesc], "TensorDesc | int",
], ids=str)
def test_unsupported_input_annotation(raises, ann):
    def f(x) -> None:
        pass

    f.__annotations__ = {"x": ann, "return": None}
    with raises(TypeError, P, "unsupported annotation", "input 'x'"):
        register_op(op_type="Op")(f)


@pytest.mark.parametrize("ann", [
    dict, Optional[int], List, list, Tuple[int], List[Tensor], TensorDesc, List[List[float]],
    Union[int, float], bytes, complex,
], ids=str)
def test_unsupported_attr_annotation(raises, ann):
    def f(*, a) -> None:
        pass

    f.__annotations__ = {"a": ann, "return": None}
    with raises(TypeError, P, "unsupported annotation", "attr 'a'"):
        register_op(op_type="Op")(f)


@pytest.mark.parametrize("ann", [
    int, Tensor, Optional[TensorDesc], Tuple[()], Tuple[TensorDesc, ...],
    Tuple[TensorDesc, int], list, tuple, List[Optional[TensorDesc]],
], ids=str)
def test_unsupported_return_annotation(raises, ann):
    def f(x: TensorDesc):
        return x

    f.__annotations__["return"] = ann
    with raises(TypeError, P, "unsupported return annotation"):
        register_op(op_type="Op")(f)


# --------------------------------------------------------------------------- inputs

def test_input_kinds_all_spellings():
    @register_op(op_type="Op")
    def f(a: TensorDesc, b: Optional[TensorDesc], c: "TensorDesc | None",
          d: Union[None, TensorDesc], e: List[TensorDesc], g: list[TensorDesc],
          /, h: TensorDesc) -> None:
        pass

    p = proto_mod.get_registered_op_proto_by_op_type("Op")
    assert [(i.name, i.kind) for i in p.inputs] == [
        ("a", "required"), ("b", "optional"), ("c", "optional"), ("d", "optional"),
        ("e", "dynamic"), ("g", "dynamic"), ("h", "required")]
    assert p.attrs == () and p.outputs == () and p.return_form == "none"


def test_optional_input_may_default_to_none():
    @register_op(op_type="Op")
    def f(x: TensorDesc, bias: Optional[TensorDesc] = None) -> TensorDesc:
        return x

    assert proto_mod.get_registered_op_proto_by_op_type("Op").inputs[1].kind == "optional"


@pytest.mark.parametrize("ann,default", [
    (TensorDesc, None), (Optional[TensorDesc], 0), (List[TensorDesc], []),
], ids=["required", "optional-non-none", "dynamic"])
def test_other_input_defaults_rejected(raises, ann, default):
    def f(x=default) -> None:
        pass

    f.__annotations__ = {"x": ann, "return": None}
    with raises(TypeError, P, "bad default", "input 'x'"):
        register_op(op_type="Op")(f)


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
    assert (attr.name, attr.type, attr.required, attr.default) == ("a", vt, True, None)


@pytest.mark.parametrize("ann,vt,default",
                         [r for r in ATTR_TABLE if r[1] != "VT_TENSOR"],
                         ids=[str(r[0]) for r in ATTR_TABLE if r[1] != "VT_TENSOR"])
def test_attr_types_with_default(ann, vt, default):
    def f(x: TensorDesc, *, a=default) -> TensorDesc:
        return x

    f.__annotations__["a"] = ann
    register_op(op_type="Op")(f)
    d = proto_mod.get_registered_op_proto_dict_by_op_type("Op")
    assert d["attrs"] == [{"name": "a", "type": vt, "required": False, "default": default}]
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


@pytest.mark.parametrize("ann,default", BAD_DEFAULTS, ids=[f"{a}={d!r}" for a, d in BAD_DEFAULTS])
def test_bad_attr_default(raises, ann, default):
    def f(*, a=default) -> None:
        pass

    f.__annotations__ = {"a": ann, "return": None}
    with raises(TypeError, P, "bad default", "attr 'a'"):
        register_op(op_type="Op")(f)
    assert protos() == []


@pytest.mark.parametrize("ann", [int, float, bool, str, DataType, List[int], Tensor], ids=str)
def test_none_default_rejected(raises, ann):
    def f(*, a=None) -> None:
        pass

    f.__annotations__ = {"a": ann, "return": None}
    with raises(TypeError, P, "bad default", "None"):
        register_op(op_type="Op")(f)


def test_tensor_attr_default_rejected(raises):
    sentinel = object()

    def f(*, t: Tensor = sentinel) -> None:
        pass

    with raises(TypeError, P, "bad default", "Tensor attr"):
        register_op(op_type="Op")(f)


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
    assert p.to_dict()["attrs"][0]["default"] == [[1, 2]]


# --------------------------------------------------------------------------- outputs / return forms

@pytest.mark.parametrize("ann,form,kinds", [
    (None, "none", []),
    (TensorDesc, "single", ["required"]),
    (List[TensorDesc], "list", ["dynamic"]),
    (list[TensorDesc], "list", ["dynamic"]),
    (Tuple[TensorDesc], "tuple", ["required"]),
    (tuple[TensorDesc, List[TensorDesc], TensorDesc], "tuple", ["required", "dynamic", "required"]),
], ids=str)
def test_return_forms(ann, form, kinds):
    def f(x: TensorDesc):
        return x

    f.__annotations__["return"] = ann
    register_op(op_type="Op")(f)
    p = proto_mod.get_registered_op_proto_by_op_type("Op")
    assert p.return_form == form
    assert [o.kind for o in p.outputs] == kinds
    assert [o.name for o in p.outputs] == [f"output{i}" for i in range(len(kinds))]


# --------------------------------------------------------------------------- mutates_args

def test_mutates_names_form():
    @register_op(op_type="Op", mutates_args=("ref", "acc"))
    def f(ref: TensorDesc, acc: TensorDesc, x: TensorDesc) -> Tuple[TensorDesc, TensorDesc, TensorDesc]:
        return ref, acc, x

    p = proto_mod.get_registered_op_proto_by_op_type("Op")
    assert [o.name for o in p.outputs] == ["ref", "acc", "output2"]
    assert p.mutates == (("ref", 0), ("acc", 1))


def test_mutates_pairs_form_sorted_by_output_index():
    @register_op(op_type="Op", mutates_args=[("b", 2), ["a", 0]])
    def f(a: TensorDesc, b: List[TensorDesc]) -> Tuple[TensorDesc, TensorDesc, List[TensorDesc]]:
        return a, a, b

    p = proto_mod.get_registered_op_proto_by_op_type("Op")
    assert [o.name for o in p.outputs] == ["a", "output1", "b"]
    assert p.to_dict()["mutates"] == [["a", 0], ["b", 2]]


def test_output_name_clash_appends_suffix():
    @register_op(op_type="Op")
    def f(output0: TensorDesc, output0_1: TensorDesc, *, output1: int = 1) -> Tuple[TensorDesc, TensorDesc]:
        return output0, output0_1

    names = [o.name for o in proto_mod.get_registered_op_proto_by_op_type("Op").outputs]
    assert names == ["output0_2", "output1_1"]


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

    assert proto_mod.get_registered_op_proto_by_op_type("Op").mutates == ()


@pytest.mark.parametrize("bad", [
    "x", b"x", 5, {"x"}, [1], [("x",)], [("x", "0")], [("x", 0, 1)], [("x", True)],
    [(0, "x")], ["x", ("y", 1)], [None],
], ids=repr)
def test_mutates_bad_shape_is_type_error_before_function(raises, bad):
    with raises(TypeError, "register_op op_type 'Op' failed:", "mutates_args"):
        register_op(op_type="Op", mutates_args=bad)


def test_mutates_mixed_forms_message(raises):
    with raises(TypeError, "cannot mix"):
        register_op(op_type="Op", mutates_args=["x", ("y", 1)])


@pytest.mark.parametrize("mutates,fragment", [
    (["nope"], "unknown input 'nope'"),
    ([("nope", 0)], "unknown input 'nope'"),
    ([("x", 2)], "out of range"),
    ([("x", -1)], "out of range"),
    (["x", "y", "x"], "2 output(s)"),
    (["x", "x"], "more than once"),
    ([("x", 0), ("y", 0)], "output index 0 more than once"),
    ([("opt", 0)], "cannot alias optional input"),
    ([("dyn", 0)], "cannot alias dynamic input"),
    ([("x", 1)], "cannot alias required input"),
    ([], None),
], ids=repr)
def test_mutates_bad_names_or_indices_are_value_errors(raises, mutates, fragment):
    def f(x: TensorDesc, y: TensorDesc, opt: Optional[TensorDesc],
          dyn: List[TensorDesc]) -> Tuple[TensorDesc, List[TensorDesc]]:
        return x, dyn

    if fragment is None:
        register_op(op_type="Op", mutates_args=mutates)(f)
        return
    with raises(ValueError, P, fragment):
        register_op(op_type="Op", mutates_args=mutates)(f)
    assert protos() == []


def test_mutates_on_no_outputs_is_value_error(raises):
    def f(x: TensorDesc) -> None:
        pass

    with raises(ValueError, P, "0 output(s)"):
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
    assert [p.func for p in protos()] == [first]


def test_changed_signature_is_value_error(exec_plugin, raises):
    exec_plugin(SRC.format(default=1, body="x"))
    with raises(ValueError, P, "plugin_mod:proto:Op", "different content"):
        exec_plugin(SRC.format(default=2, body="x"))
    assert protos()[0].attrs[0].default == 1


def test_changed_body_is_value_error(exec_plugin, raises):
    exec_plugin(SRC.format(default=1, body="x"))
    with raises(ValueError, P, "different content"):
        exec_plugin(SRC.format(default=1, body="None"))


def test_changed_mutates_is_value_error(raises):
    def f(x: TensorDesc) -> TensorDesc:
        return x

    register_op(op_type="Op")(f)
    with raises(ValueError, P, "different content"):
        register_op(op_type="Op", mutates_args=["x"])(f)


def test_same_op_type_from_another_function_is_value_error(raises):
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> TensorDesc:
        return x

    def g(x: TensorDesc) -> TensorDesc:
        return x

    with raises(ValueError, P, "already registered by", f"{__name__}:{f.__qualname__}",
                "cannot be registered again by", f"{__name__}:{g.__qualname__}"):
        register_op(op_type="Op")(g)
    assert proto_mod.get_registered_op_proto_by_op_type("Op").func is f


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

    p = proto_mod.get_registered_op_proto_by_op_type("MyOp")
    assert isinstance(p, proto_mod.OpProto)
    assert p.func is my_proto
    assert p.module_name == __name__
    assert p.qualname == "test_record_fields_and_to_dict.<locals>.my_proto"
    assert p.inputs == (proto_mod.IrInput("x", "required"), proto_mod.IrInput("b", "optional"),
                        proto_mod.IrInput("xs", "dynamic"))
    assert p.outputs == (proto_mod.IrOutput("x", "required"),
                         proto_mod.IrOutput("output1", "dynamic"))
    assert p.attrs[0] == proto_mod.IrAttr("alpha", "VT_FLOAT", True, None)
    assert p.to_dict() == {
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
    with raises(TypeError, P, "missing return annotation"):
        register_op(op_type="Op")(lambda: None)


def test_failed_registration_registers_nothing(raises):
    def f(x: TensorDesc, *, a: int = True) -> TensorDesc:
        return x

    with raises(TypeError, P):
        register_op(op_type="Op")(f)
    assert proto_mod.get_registered_op_proto_by_op_type("Op") is None


def test_proto_module_is_public():
    assert ge.custom_op.proto is proto_mod
    for name in ["get_registered_op_protos", "get_registered_op_proto_by_op_type",
                 "clear_registered_op_protos", "get_registered_op_proto_dicts"]:
        assert callable(getattr(proto_mod, name))


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
    assert [i["kind"] for i in d["inputs"]] == ["required", "optional", "dynamic"]
    assert [(a["name"], a["type"]) for a in d["attrs"]] == [
        ("dt", "VT_DATA_TYPE"), ("t", "VT_TENSOR"), ("ks", "VT_LIST_LIST_INT")]
    assert d["return_form"] == "tuple"
    assert [o["kind"] for o in d["outputs"]] == ["required", "dynamic"]


def test_future_annotation_unresolvable_is_type_error(exec_plugin, raises):
    src = FUTURE_SRC.replace("xs: list[TensorDesc]", "xs: list[NoSuchDesc]")
    with raises(TypeError, P, "NoSuchDesc", "cannot resolve annotation"):
        exec_plugin(src)
    assert protos() == []


def test_future_annotation_unresolvable_return(exec_plugin, raises):
    src = FUTURE_SRC.replace("-> Tuple[TensorDesc, List[TensorDesc]]", "-> Missing")
    with raises(TypeError, P, "'Missing'", "return value"):
        exec_plugin(src)
