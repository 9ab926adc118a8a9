"""Inputs people really write (share/docs/plugin-authors.md; share/docs/host-design.md,
"Engine semantics"): empty tensors, pyproject.toml with a byte-order mark,
duplicate JSON keys, control characters in plugin text."""
import json

import numpy as np
import pytest

from e2e_helpers import assert_failed_cleanly, f32, node


def empty(name, shape):
    """An inline float32 input with no elements (nested lists as deep as the shape needs)."""
    def nest(dims):
        return [] if not dims or dims[0] == 0 else [nest(dims[1:]) for _ in range(dims[0])]
    return {"name": name, "dtype": "float32", "shape": shape, "data": nest(shape)}


# Every sample op on inputs with a zero in their shape; (node, op_type, inputs, attrs, expected output shape).
ZERO_SIZE_NODES = [
    ("gelu", "GeluCustom", ["x20"], None, [2, 0]),
    ("rms", "RmsNormCustom", ["x20", "g0"], None, [2, 0]),
    ("rms_plain", "RmsNormCustom", ["e03", None], None, [0, 3]),
    ("mm_rows", "MatMulCustom", ["e03", "w34"], None, [0, 4]),
    ("mm_inner", "MatMulCustom", ["x20", "e03"], None, [2, 3]),
    ("sm", "SoftmaxCustom", ["x20"], None, [2, 0]),
    ("sm_rows", "SoftmaxCustom", ["e03"], {"axis": 0}, [0, 3]),
    ("cat", "ConcatCustom", [["e03", "e03"]], {"axis": 0}, [0, 3]),
    ("relu", "ReluCpp", ["x20"], None, [2, 0]),
    ("tiled", "TiledSoftmaxCustom", ["e03"], None, [0, 3]),
    ("axpy", "AxpyEagerCustom", ["g0", "g0"], None, [0]),
    ("axpy_kernel", "AxpyKernelCustom", ["g0", "g0"], None, [0]),
]


@pytest.mark.parametrize("repeat", ["1", "2"])
def test_every_sample_op_runs_on_empty_tensors(ge_run, write_graph, repeat):
    inputs = [empty("x20", [2, 0]), empty("e03", [0, 3]), empty("g0", [0]),
              f32("w34", [[1.0, 2.0, 3.0, 4.0]] * 3, [3, 4])]
    nodes = [node(n, op, ins, attrs) for n, op, ins, attrs, _ in ZERO_SIZE_NODES]
    g = write_graph(nodes, [n + ":0" for n, *_ in ZERO_SIZE_NODES], inputs=inputs)
    res = ge_run(g, "--repeat", repeat, opp_path=("samples",))
    assert res.returncode == 0, res.stderr
    for n, _, _, _, shape in ZERO_SIZE_NODES:
        out = res.load(f"{n}_0.npy")
        assert list(out.shape) == shape, n
    # An empty inner dimension: the product is all zeros, not garbage.
    assert np.array_equal(res.load("mm_inner_0.npy"), np.zeros((2, 3), np.float32))


def test_a_pyproject_with_a_byte_order_mark_loads(ge_run, write_graph, tmp_path, source_dir):
    """A main-isolation package whose pyproject.toml starts with a UTF-8 BOM and
    uses CRLF, as some Windows editors save it."""
    pkg = tmp_path / "opp" / "bom_plugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text((source_dir / "plugins" / "samples" / "gelu.py").read_text()
                                     .replace("GeluCustom", "BomGelu"))
    (pkg / "pyproject.toml").write_bytes(
        b'\xef\xbb\xbf[project]\r\nname = "bom-plugin"\r\nversion = "3.1"\r\n\r\n[tool.ge-plugin]\r\nisolation = "main"\r\n')
    g = write_graph([node("b", "BomGelu", ["x"])], ["b:0"], inputs=[f32("x", [0.5])])
    res = ge_run(g, "--json", opp_path=(str(tmp_path / "opp"),))
    assert res.returncode == 0, res.stderr
    plugin = next(p for p in res.json()["plugins"] if p["name"] == "bom_plugin")
    assert (plugin["status"], plugin["version"], plugin["isolation"]) == ("ok", "3.1", "main")


def graph_text(**parts):
    """A graph's JSON text assembled from raw fragments (so keys can repeat)."""
    return "{" + ", ".join(f'"{k.rstrip("_")}": {v}' for k, v in parts.items()) + "}"


X = '[{"name": "x", "dtype": "float32", "shape": [2], "data": [1.0, 2.0]}]'
N = '[{"name": "n", "op_type": "GeluCustom", "inputs": ["x"]}]'
DUPLICATES = {
    # case: (raw graph text, where, key)
    "two nodes lists": ('{"inputs": %s, "nodes": %s, "nodes": [], "outputs": ["n:0"]}' % (X, N), "", "nodes"),
    "two data keys": ('{"inputs": [{"name": "x", "dtype": "float32", "shape": [2], "data": [1.0, 2.0], '
                      '"data": [3.0, 4.0]}], "nodes": %s, "outputs": ["n:0"]}' % N, "inputs[0]", "data"),
    "attr twice": ('{"inputs": %s, "nodes": [{"name": "n", "op_type": "GeluCustom", "inputs": ["x"], '
                   '"attrs": {"approximate": "none", "approximate": "tanh"}}], "outputs": ["n:0"]}' % X,
                   "nodes[0].attrs", "approximate"),
    "second node's name": ('{"inputs": %s, "nodes": [{"name": "m", "op_type": "GeluCustom", "inputs": ["x"]}, '
                           '{"name": "n", "name": "k", "op_type": "GeluCustom", "inputs": ["x"]}], '
                           '"outputs": ["n:0"]}' % X, "nodes[1]", "name"),
    "options": ('{"options": {"a": "1", "a": "2"}, "inputs": %s, "nodes": %s, "outputs": ["n:0"]}' % (X, N),
                "options", "a"),
}


@pytest.mark.parametrize("case", sorted(DUPLICATES))
def test_duplicate_json_keys_are_an_error_naming_the_key_and_place(ge_run, write_graph, case):
    text, where, key = DUPLICATES[case]
    g = write_graph([], [], raw=text)
    res = ge_run(g, opp_path=("samples",))
    place = f"{g}: {where}" if where else f"{g}"
    assert_failed_cleanly(res, f"{place}: duplicate key \"{key}\"")


def test_distinct_keys_in_sibling_objects_are_fine(ge_run, write_graph):
    """The same key in two different objects is not a duplicate."""
    g = write_graph([node("a", "GeluCustom", ["x"], {"approximate": "none"}),
                     node("b", "GeluCustom", ["x"], {"approximate": "tanh"})], ["a:0", "b:0"],
                    inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=("samples",))
    assert res.returncode == 0, res.stderr


NASTY = "esc \x1b[31mred\x1b[0m, cr \r over, bell \x07, nul \x00 cut, csi \u009b2J end"


@pytest.mark.parametrize("where", ["import", "execute"])
def test_control_characters_from_plugins_are_escaped_on_the_terminal(ge_run, write_graph, tmp_path, where):
    opp = tmp_path / "opp"
    opp.mkdir()
    if where == "import":
        (opp / "noisy.py").write_text(f"raise ValueError({NASTY!r})\n")
        nodes, outs = [node("g", "GeluCustom", ["x"])], ["g:0"]
    else:
        (opp / "noisy.py").write_text(f'''
from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

@register_op(op_type="NoisyCustom")
def noisy(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)

@register_op_impl(op_type="NoisyCustom")
class Noisy:
    def execute(self, x: Tensor) -> None:
        print({NASTY!r})
        raise ValueError({NASTY!r})
''')
        nodes, outs = [node("n", "NoisyCustom", ["x"])], ["n:0"]
    g = write_graph(nodes, outs, inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=("samples", str(opp)), log_level="info")
    for raw in ("\x1b", "\r", "\x07", "\x00", "\u009b"):
        assert raw not in res.stderr, f"{raw!r} reached the terminal:\n{res.stderr!r}"
    assert "esc \\x1b[31mred\\x1b[0m, cr \\x0d over, bell \\x07, nul \\x00 cut, csi \\u009b2J end" in res.stderr, \
        res.stderr
    if where == "execute":
        assert res.returncode == 1


def test_json_output_keeps_plugin_text_exact(ge_run, write_graph, tmp_path):
    opp = tmp_path / "opp"
    opp.mkdir()
    (opp / "noisy.py").write_text(f"raise ValueError({NASTY!r})\n")
    g = write_graph([node("g", "GeluCustom", ["x"])], ["g:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, "--json", opp_path=("samples", str(opp)))
    assert res.returncode == 0, res.stderr
    plugin = next(p for p in res.json()["plugins"] if p["name"] == "noisy")
    assert NASTY in plugin["error"]


@pytest.mark.parametrize("where", ["op_type", "attr name", "node name", "output ref"])
def test_long_values_are_cut_in_error_messages(ge_run, write_graph, where):
    """A 4 MiB value is quoted as its first 200 characters and its length."""
    big = "Z" * (4 << 20)
    n = node("n", "GeluCustom", ["x"])
    outputs = ["n:0"]
    if where == "op_type":
        n["op_type"] = big
    elif where == "attr name":
        n["attrs"] = {big: 1}
    elif where == "node name":
        outputs = [big + ":0"]
    else:
        outputs = [big]
    g = write_graph([n], outputs, inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=("samples",))
    assert res.returncode == 1
    assert len(res.stderr) < 4096, f"{len(res.stderr)} bytes of stderr"
    assert "Z" * 200 + "... (" in res.stderr and "bytes)" in res.stderr, res.stderr[:1000]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_graph_and_npy_paths_that_are_not_regular_files_are_refused(ge_run, write_graph, tmp_path, kind):
    """Neither blocks on a FIFO nor reads /dev/zero until memory runs out."""
    import os
    odd = tmp_path / f"odd_{kind}"
    if kind == "fifo":
        os.mkfifo(odd)
    elif kind == "dev-zero":
        odd.symlink_to("/dev/zero")
    else:
        odd.mkdir()
    res = ge_run(odd, opp_path=("samples",), timeout=30)
    assert_failed_cleanly(res, str(odd), "not a regular file")
    g = write_graph([], ["x"], inputs=[{"name": "x", "dtype": "float32", "file": str(odd)}])
    res = ge_run(g, opp_path=("samples",), timeout=30)
    assert_failed_cleanly(res, "not a regular file")
