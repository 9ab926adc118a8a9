"""A prototype called as infer_meta (share/docs/plugin-authors.md, "The prototype"): call_infer_meta."""
from typing import List, Optional, Tuple

import pytest

from ge.custom_op import register_op
from ge.custom_op import proto as proto_mod
from ge.custom_op._proto import call_infer_meta, canonical_ir
from ge.graph import DataType
from ge.runtime import TensorDesc


def td(*dims, dt=DataType.DT_FLOAT):
    return TensorDesc(list(dims), dt)


def get(op_type="Op"):
    return proto_mod.get_registered_op_proto_by_op_type(op_type)


def test_inputs_positional_attrs_keywords():
    seen = {}

    @register_op(op_type="Op")
    def f(x: TensorDesc, opt: Optional[TensorDesc], xs: List[TensorDesc], *,
          alpha: int, beta: float = 0.5) -> TensorDesc:
        seen.update(x=x, opt=opt, xs=xs, alpha=alpha, beta=beta)
        return x

    x, a, b = td(2), td(3), td(4)
    assert call_infer_meta(get(), [x, None, [a, b]], {"alpha": 7}) == [(0, x)]
    assert seen == {"x": x, "opt": None, "xs": [a, b], "alpha": 7, "beta": 0.5}


def test_no_outputs_returns_empty_list():
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> None:
        return None

    assert call_infer_meta(get(), (td(1),), {}) == []


def test_dynamic_output_flattened():
    a, b, c = td(1), td(2), td(3)

    @register_op(op_type="Op")
    def f(xs: List[TensorDesc]) -> List[TensorDesc]:
        return list(xs)

    assert call_infer_meta(get(), [[a, b, c]], {}) == [(0, a), (0, b), (0, c)]
    assert call_infer_meta(get(), [[]], {}) == []


def test_tuple_outputs_flattened_with_ir_indices():
    a, b, c, d = td(1), td(2), td(3), td(4)

    @register_op(op_type="Op")
    def f(x: TensorDesc) -> Tuple[TensorDesc, List[TensorDesc], TensorDesc]:
        return a, [b, c], d

    assert call_infer_meta(get(), [td(0)], {}) == [(0, a), (1, b), (1, c), (2, d)]


def test_single_wrong_type(raises):
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> TensorDesc:
        return [x]

    with raises(TypeError, "infer_meta output[0] must be TensorDesc, got list "
                "(op_type 'Op', output 'output0')"):
        call_infer_meta(get(), [td(1)], {})


def test_single_returning_none(raises):
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> TensorDesc:
        return None

    with raises(TypeError, "infer_meta output[0] must be TensorDesc, got NoneType "
                "(op_type 'Op', output 'output0')"):
        call_infer_meta(get(), [td(1)], {})


def test_none_form_returning_value(raises):
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> None:
        return x

    with raises(TypeError, "infer_meta of op_type 'Op' has no outputs and must return None, "
                "got TensorDesc"):
        call_infer_meta(get(), [td(1)], {})


def test_dynamic_output_may_be_a_tuple():
    a, b = td(1), td(2)

    @register_op(op_type="Op")
    def f(x: TensorDesc) -> List[TensorDesc]:
        return (a, b)

    assert call_infer_meta(get(), [td(1)], {}) == [(0, a), (0, b)]


def test_dynamic_not_a_list(raises):
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> List[TensorDesc]:
        return x

    with raises(TypeError, "infer_meta output[0] is dynamic, must return list, got TensorDesc "
                "(op_type 'Op', output 'output0')"):
        call_infer_meta(get(), [td(1)], {})


def test_dynamic_item_wrong_type(raises):
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> List[TensorDesc]:
        return [x, 3]

    with raises(TypeError, "infer_meta output[0] must be TensorDesc, got int at instance 1 "
                "(op_type 'Op', dynamic output 'output0')"):
        call_infer_meta(get(), [td(1)], {})


def test_multiple_outputs_may_be_a_list():
    a, b = td(1), td(2)

    @register_op(op_type="Op")
    def f(x: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
        return [a, b]

    assert call_infer_meta(get(), [td(1)], {}) == [(0, a), (1, b)]


def test_tuple_form_wrong_container(raises):
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
        return x

    with raises(TypeError, "infer_meta must return list/tuple for multiple outputs, got "
                "TensorDesc (op_type 'Op' has 2 outputs: output0, output1)"):
        call_infer_meta(get(), [td(1)], {})


@pytest.mark.parametrize("count", [1, 3])
def test_tuple_wrong_count(raises, count):
    @register_op(op_type="Op", mutates_args=["x"])
    def f(x: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
        return (x,) * count

    with raises(TypeError, f"infer_meta return count {count} != output count 2 "
                "(op_type 'Op': x, output1)"):
        call_infer_meta(get(), [td(1)], {})


def test_tuple_element_wrong_type_names_output(raises):
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> Tuple[TensorDesc, List[TensorDesc]]:
        return x, x

    with raises(TypeError, "infer_meta output[1] is dynamic, must return list, got TensorDesc "
                "(op_type 'Op', output 'output1')"):
        call_infer_meta(get(), [td(1)], {})


@pytest.mark.parametrize("key", ["ys", 1])
def test_wrong_dynamic_instance_count(raises, key):
    @register_op(op_type="Op", mutates_args=[("x", 0), ("ys", 1)])
    def f(x: TensorDesc, ys: List[TensorDesc]) -> Tuple[TensorDesc, List[TensorDesc]]:
        return x, ys[:1]

    y1, y2 = td(1), td(2)
    with raises(TypeError, "infer_meta output[1] instance count mismatch: expected 2, actual 1 "
                "(op_type 'Op', dynamic output 'ys')"):
        call_infer_meta(get(), [td(0), [y1, y2]], {}, dynamic_output_counts={key: 2})
    assert call_infer_meta(get(), [td(0), [y1]], {}, dynamic_output_counts={key: 1})[1] == (1, y1)


def test_unknown_dynamic_output_key(raises):
    @register_op(op_type="Op")
    def f(x: TensorDesc) -> List[TensorDesc]:
        return [x]

    with raises(ValueError, "op_type 'Op'", "unknown output 'nope'"):
        call_infer_meta(get(), [td(0)], {}, dynamic_output_counts={"nope": 1})


def test_wrong_input_count(raises):
    @register_op(op_type="Op")
    def f(x: TensorDesc, y: TensorDesc) -> TensorDesc:
        return x

    with raises(TypeError, "op_type 'Op'", "expected 2 inputs", "actual 1"):
        call_infer_meta(get(), [td(0)], {})


def test_prototype_exception_propagates_unchanged():
    class Boom(Exception):
        pass

    @register_op(op_type="Op")
    def f(x: TensorDesc) -> TensorDesc:
        raise Boom("bad shape")

    with pytest.raises(Boom, match="bad shape"):
        call_infer_meta(get(), [td(0)], {})


def test_registered_function_is_directly_callable():
    @register_op(op_type="Op")
    def f(x: TensorDesc, *, k: int = 2) -> TensorDesc:
        return TensorDesc([k], DataType.DT_INT64)

    out = f(td(0), k=5)
    assert isinstance(out, TensorDesc)


def test_accepts_descriptor_or_canonical_ir():
    a = td(1)

    @register_op(op_type="Op")
    def f(x: TensorDesc) -> TensorDesc:
        return x

    assert call_infer_meta(get(), [a], {}) == [(0, a)]
    assert call_infer_meta(canonical_ir(get()), [a], {}) == [(0, a)]
