"""IR binding through ge-run: dynamic and optional inputs, attributes, dtypes."""
import numpy as np
import pytest

from e2e_helpers import assert_failed_cleanly, f32, node

A, B, C, BIAS = [1.0, 2.0], [10.0, 20.0], [100.0, 200.0], [0.5, -0.5]


def _sum_graph(write_graph, xs, bias, attrs=None):
    inputs = [f32("a", A), f32("b", B), f32("c", C), f32("bias", BIAS)]
    return write_graph([node("s", "E2eSum", [xs, bias], attrs)], ["s:0"], inputs=inputs)


@pytest.mark.parametrize("xs,bias,expected", [
    (["a"], None, [(1.0) * 2 + 3, (2.0) * 2 + 3]),
    (["a", "b", "c"], None, [111.0 * 2 + 3, 222.0 * 2 + 3]),
    (["a"], "bias", [1.5 * 2 + 3, 1.5 * 2 + 3]),
    (["a", "b", "c"], "bias", [111.5 * 2 + 3, 221.5 * 2 + 3]),
])
def test_dynamic_and_optional_inputs_with_attr_defaults(ge_run, write_graph, xs, bias, expected):
    res = ge_run(_sum_graph(write_graph, xs, bias))
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("s_0.npy"), np.array(expected, np.float32))


def test_given_attributes_override_defaults(ge_run, write_graph):
    res = ge_run(_sum_graph(write_graph, ["a", "b"], "bias", {"scale": 0.5, "offset": -1}))
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("s_0.npy"), np.array([11.5 * 0.5 - 1, 21.5 * 0.5 - 1], np.float32))


def test_float_attribute_accepts_a_json_integer(ge_run, write_graph):
    res = ge_run(_sum_graph(write_graph, ["a"], None, {"scale": 3}))
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("s_0.npy"), np.array([6.0, 9.0], np.float32))


def test_dynamic_input_given_a_single_reference_is_an_error(ge_run, write_graph):
    res = ge_run(_sum_graph(write_graph, "a", None))
    assert res.returncode == 1
    assert "'s'" in res.stderr and "dynamic" in res.stderr
    assert res.outputs() == []


# DataType codes (GE numbering)
DT_FLOAT, DT_FLOAT16, DT_INT8, DT_INT64, DT_DOUBLE = 0, 1, 2, 9, 11


def _attr_dump(ge_run, write_graph, attrs):
    g = write_graph([node("d", "E2eAttrDump", ["x"], attrs)], ["d:0"], inputs=[f32("x", [0.0])])
    res = ge_run(g)
    assert res.returncode == 0, res.stderr
    out = res.load("d_0.npy")
    assert out.dtype == np.float64 and out.shape == (13,)
    return out.tolist()


def test_attribute_defaults_applied(ge_run, write_graph):
    got = _attr_dump(ge_run, write_graph, {"i": 7})
    #        i  f    b    len(s) dt       sum(li) sum(lf) sum(lb) len(ls) ldt         lli  types
    assert got == [7, 0.5, 1.0, 3, DT_INT8, 3, 0.25, 2, 3, DT_FLOAT16, 6, 1.0, 1.0]


def test_every_attribute_kind_coerced_from_json(ge_run, write_graph):
    got = _attr_dump(ge_run, write_graph, {
        "i": -5, "f": 1.5, "b": False, "s": "hello", "dt": "int64", "li": [4, 5, 6], "lf": [0.5, 1],
        "lb": [False, False], "ls": ["a", "bc", "def"], "ldt": ["float32", "DT_DOUBLE"], "lli": [[1, 2], [3], []],
    })
    assert got == [-5, 1.5, 0.0, 5, DT_INT64, 15, 1.5, 0, 6, DT_FLOAT + DT_DOUBLE, 6, 1.0, 1.0]


@pytest.mark.parametrize("name,numpy_dtype", [("float16", np.float16), ("DT_INT64", np.int64),
                                              ("float64", np.float64), ("uint8", np.uint8)])
def test_datatype_attribute_given_by_name(ge_run, write_graph, name, numpy_dtype):
    g = write_graph([node("c", "E2eCast", ["x"], {"dtype": name})], ["c:0"], inputs=[f32("x", [1.0, 2.0, 3.0])])
    res = ge_run(g, "--json")
    assert res.returncode == 0, res.stderr
    out = res.load("c_0.npy")
    assert out.dtype == numpy_dtype and out.shape == (3,)
    assert res.json()["outputs"]["c:0"]["dtype"] == np.dtype(numpy_dtype).name


def _bf16_bits(values):
    return (np.array(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)


INLINE = [
    # name, dtype, data, expected numpy array
    ("f16", "float16", [1.5, -2.25, 65504.0, 0.0001], np.array([1.5, -2.25, 65504.0, 0.0001], np.float16)),
    ("f32", "float32", [1.5, -2.25, 3.0e38], np.array([1.5, -2.25, 3.0e38], np.float32)),
    ("f64", "float64", [1.5, -2.25, 1e300], np.array([1.5, -2.25, 1e300], np.float64)),
    ("i8", "int8", [-128, 127, 0], np.array([-128, 127, 0], np.int8)),
    ("i16", "int16", [-32768, 32767], np.array([-32768, 32767], np.int16)),
    ("i32", "int32", [-2 ** 31, 2 ** 31 - 1], np.array([-2 ** 31, 2 ** 31 - 1], np.int32)),
    ("i64", "int64", [-2 ** 63, 2 ** 63 - 1], np.array([-2 ** 63, 2 ** 63 - 1], np.int64)),
    ("u8", "uint8", [0, 255], np.array([0, 255], np.uint8)),
    ("u16", "uint16", [0, 65535], np.array([0, 65535], np.uint16)),
    ("u32", "uint32", [0, 2 ** 32 - 1], np.array([0, 2 ** 32 - 1], np.uint32)),
    ("u64", "uint64", [0, 2 ** 64 - 1], np.array([0, 2 ** 64 - 1], np.uint64)),
    ("bl", "bool", [True, False, True], np.array([True, False, True], np.bool_)),
]


def test_all_dtypes_in_inline_data_through_a_python_op(ge_run, write_graph):
    inputs = [{"name": n, "dtype": dt, "shape": [len(d)], "data": d} for n, dt, d, _ in INLINE]
    inputs.append({"name": "bf", "dtype": "bfloat16", "shape": [4], "data": [1.0, -2.5, 3.140625, 1.00390625]})
    nodes = [node(f"copy_{x['name']}", "E2eCopy", [x["name"]]) for x in inputs]
    g = write_graph(nodes, [f"{n['name']}:0" for n in nodes], inputs=inputs)
    res = ge_run(g, "--json")
    assert res.returncode == 0, res.stderr
    for n, dt, _, expected in INLINE:
        got = res.load(f"copy_{n}_0.npy")
        assert got.dtype == expected.dtype, n
        np.testing.assert_array_equal(got, expected, err_msg=n)
        assert res.json()["outputs"][f"copy_{n}:0"]["dtype"] == dt
    bf = res.load("copy_bf_0.npy")
    assert bf.dtype.itemsize == 2 and bf.shape == (4,)
    # 1.00390625 is halfway between two bfloat16 values: round to nearest even (1.0).
    np.testing.assert_array_equal(np.frombuffer(bf.tobytes(), np.uint16), _bf16_bits([1.0, -2.5, 3.140625, 1.0]))
    assert res.json()["outputs"]["copy_bf:0"]["dtype"] == "bfloat16"


@pytest.mark.parametrize("dt,data,expected", [
    ("float16", [-1.5, 2.5], np.array([0.0, 2.5], np.float16)),
    ("float32", [-1.5, 2.5], np.array([0.0, 2.5], np.float32)),
    ("float64", [-1.5, 2.5], np.array([0.0, 2.5], np.float64)),
    ("int32", [-7, 9], np.array([0, 9], np.int32)),
    ("int64", [-7, 2 ** 40], np.array([0, 2 ** 40], np.int64)),
])
def test_inline_dtypes_through_the_cpp_op(ge_run, write_graph, dt, data, expected):
    g = write_graph([node("r", "ReluCpp", ["x"])], ["r:0"], inputs=[{"name": "x", "dtype": dt, "shape": [2], "data": data}])
    res = ge_run(g)
    assert res.returncode == 0, res.stderr
    got = res.load("r_0.npy")
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_bfloat16_through_the_cpp_op(ge_run, write_graph):
    g = write_graph([node("r", "ReluCpp", ["x"])], ["r:0"],
                    inputs=[{"name": "x", "dtype": "bfloat16", "shape": [3], "data": [-1.0, 2.5, -0.0]}])
    res = ge_run(g)
    assert res.returncode == 0, res.stderr
    got = np.frombuffer(res.load("r_0.npy").tobytes(), np.uint16)
    np.testing.assert_array_equal(got, _bf16_bits([0.0, 2.5, 0.0]))


def test_npy_file_inputs_roundtrip(ge_run, write_graph, tmp_path):
    arr = np.arange(12, dtype=np.int16).reshape(3, 4) - 5
    np.save(tmp_path / "m.npy", arr)
    g = write_graph([node("c", "E2eCopy", ["m"])], ["c:0"], inputs=[{"name": "m", "file": "m.npy"}])
    res = ge_run(g)
    assert res.returncode == 0, res.stderr
    got = res.load("c_0.npy")
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, arr)


def test_inline_value_out_of_range_is_an_error(ge_run, write_graph):
    g = write_graph([node("c", "E2eCopy", ["x"])], ["c:0"],
                    inputs=[{"name": "x", "dtype": "int8", "shape": [1], "data": [128]}])
    res = ge_run(g)
    assert res.returncode == 1
    assert "inputs[0]" in res.stderr and "'x'" in res.stderr and "int8" in res.stderr
    assert res.outputs() == []


def _bf16_exact(values):
    """bfloat16 bits of each double, rounded once to nearest even (exact arithmetic)."""
    import math
    from fractions import Fraction
    out = []
    for v in values:
        if v == 0:
            out.append(0x8000 if math.copysign(1.0, v) < 0 else 0)
            continue
        e = max(math.frexp(abs(v))[1] - 1, -126)  # exponent of the binade (subnormals: -126)
        ulp = Fraction(2) ** (e - 7)
        n = round(Fraction(abs(v)) / ulp)  # Python's round: half to even
        r = n * ulp
        bits = 0x7f80 if r >= Fraction(2) ** 128 else int(np.array([float(r)], np.float32).view(np.uint32)[0] >> 16)
        out.append(bits | (0x8000 if v < 0 else 0))
    return np.array(out, np.uint16)


def test_reduced_precision_inline_data_is_rounded_once_from_the_json_double(ge_run, write_graph):
    # A double just above a midpoint of the 16-bit grid: rounding through float32
    # first lands on the midpoint and ties the wrong way (1.0 instead of numpy's
    # 1.0009765625 for float16; 1.0 instead of 1.0078125 for bfloat16).
    rng = np.random.default_rng(7)
    f16 = [1.0004882812509095, 65504.0, 65519.99, 65520.0, 2.0 ** -14, 2.0 ** -24, 2.0 ** -25,
           2.0 ** -25 * 1.0000001, 3.0 * 2.0 ** -26, 1e-30, -0.0, -1.0004882812509095]
    f16 += [float(v) for v in rng.uniform(-70000, 70000, 40)]
    f16 += [float(v) for v in rng.standard_normal(40) * 2.0 ** rng.integers(-26, 16, 40)]
    bf = [1.0039062509313226, -1.0039062509313226, 1.00390625, 3.0e38, 3.3961e38, 3.4e38,
          2.0 ** -126, 2.0 ** -133, 2.0 ** -134, 2.0 ** -134 * 1.0000001, 1e-300, -0.0]
    bf += [float(v) for v in rng.standard_normal(60) * 2.0 ** rng.integers(-140, 120, 60)]
    inputs = [{"name": "h", "dtype": "float16", "shape": [len(f16)], "data": f16},
              {"name": "b", "dtype": "bfloat16", "shape": [len(bf)], "data": bf}]
    g = write_graph([node("ch", "E2eCopy", ["h"]), node("cb", "E2eCopy", ["b"])], ["ch:0", "cb:0"], inputs=inputs)
    res = ge_run(g)
    assert res.returncode == 0, res.stderr
    with np.errstate(over="ignore"):
        expected_h = np.array(f16, np.float64).astype(np.float16)
    np.testing.assert_array_equal(res.load("ch_0.npy").view(np.uint16), expected_h.view(np.uint16))
    np.testing.assert_array_equal(np.frombuffer(res.load("cb_0.npy").tobytes(), np.uint16), _bf16_exact(bf))


@pytest.mark.parametrize("order", [("r", "a"), ("a", "r")])
@pytest.mark.parametrize("source", ["graph input", "intermediate"])
def test_an_in_place_op_never_changes_what_its_siblings_read(ge_run, write_graph, order, source):
    # r clamps x at 0 in place (mutates_args); a reads the same x. Whatever the
    # JSON order, a sees the value before r's change and r's output is clamped.
    nodes = {"r": node("r", "E2eClampInPlace", ["v"]), "a": node("a", "E2eTwice", ["v"])}
    listed = [nodes[k] for k in order]
    if source == "graph input":
        listed = [dict(n, inputs=["x"]) for n in listed]
    else:
        listed = [node("v", "E2eCopy", ["x"])] + [dict(n, inputs=["v:0"]) for n in listed]
    g = write_graph(listed, ["a:0", "r:0"], inputs=[f32("x", [-1.0, 2.0])])
    res = ge_run(g, "--repeat", "2")
    assert res.returncode == 0, res.stderr
    assert res.load("a_0.npy").tolist() == [-2.0, 4.0]
    assert res.load("r_0.npy").tolist() == [0.0, 2.0]


@pytest.mark.parametrize(("op_type", "fragment"), [
    ("E2eWriteInput", "cannot modify read-only memory"),
    ("E2eSetInputDim", "borrowed object is read-only"),
])
def test_an_input_not_declared_as_mutated_is_read_only(ge_run, write_graph, op_type, fragment):
    g = write_graph([node("w", op_type, ["x"]), node("a", "E2eTwice", ["x"])], ["a:0"], inputs=[f32("x", [1.0, 2.0])])
    res = ge_run(g)
    assert_failed_cleanly(res, "node 'w'", op_type, fragment)
