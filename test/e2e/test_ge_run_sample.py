"""ge-run on the sample graph: numerical results, the summary, usage, logging, discovery."""
import json
import subprocess
import sys

import numpy as np

from e2e_helpers import f32, node

PYTHON_NODES = 7  # attention_block.json: every node but the C++ ReluCpp "out"


def _example(source_dir):
    return source_dir / "share" / "examples" / "attention_block.json"


def test_attention_block_matches_numpy_reference(ge_run, source_dir):
    res = ge_run(_example(source_dir), opp_path=("samples",))
    assert res.returncode == 0, res.stderr
    assert res.outputs() == ["out_0.npy", "probs_0.npy"]
    check = subprocess.run([sys.executable, str(source_dir / "share" / "examples" / "check_attention_block.py"),
                            str(res.out_dir)], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "OK: max abs error" in check.stdout


def test_attention_block_reference_check_detects_a_wrong_output(ge_run, source_dir):
    """The reference script is a real check: a perturbed output fails it."""
    res = ge_run(_example(source_dir), opp_path=("samples",))
    assert res.returncode == 0, res.stderr
    out = res.load("out_0.npy")
    out[0, 0] += 0.01
    np.save(res.out_dir / "out_0.npy", out)
    check = subprocess.run([sys.executable, str(source_dir / "share" / "examples" / "check_attention_block.py"),
                            str(res.out_dir)], capture_output=True, text=True, timeout=120)
    assert check.returncode == 1, check.stdout + check.stderr


def test_json_summary_keys_and_counts_with_repeat(ge_run, source_dir):
    graph = json.loads(_example(source_dir).read_text())
    res = ge_run(_example(source_dir), "--json", "--repeat", "5", opp_path=("samples",))
    assert res.returncode == 0, res.stderr
    s = res.json()
    assert {"graph", "outputs", "nodes", "python_calls"} <= set(s)
    assert s["graph"] == "attention_block"
    assert set(s["outputs"]) == {"out:0", "probs:0"}
    for ref, shape in (("out:0", [4, 24]), ("probs:0", [4, 6])):
        o = s["outputs"][ref]
        assert {"dtype", "shape", "file"} <= set(o)
        assert o["dtype"] == "float32"
        assert o["shape"] == shape
        arr = np.load(o["file"])
        assert list(arr.shape) == shape and arr.dtype == np.float32
    ops = {n["name"]: n["op_type"] for n in graph["nodes"]}
    assert sorted(n["name"] for n in s["nodes"]) == sorted(ops)
    for n in s["nodes"]:
        assert {"name", "op_type", "calls"} <= set(n)
        assert n["op_type"] == ops[n["name"]]
        assert n["calls"]["infer_meta"] == 1 and n["calls"]["execute"] == 5, n
    python_nodes = [n for n in s["nodes"] if n["op_type"] != "ReluCpp"]
    assert len(python_nodes) == PYTHON_NODES
    expected = sum(n["calls"]["infer_meta"] + n["calls"]["execute"] for n in python_nodes)
    assert expected == PYTHON_NODES * 6
    assert s["python_calls"] == expected


def test_json_summary_counts_follow_repeat(ge_run, write_graph):
    g = write_graph([node("a", "E2eCopy", ["x"]), node("b", "ReluCpp", ["a:0"])], ["b:0"],
                    inputs=[f32("x", [1.0, -2.0])])
    res = ge_run(g, "--json", "--repeat", "3")
    assert res.returncode == 0, res.stderr
    s = res.json()
    calls = {n["name"]: n["calls"] for n in s["nodes"]}
    assert calls == {"a": {"infer_meta": 1, "compile": 0, "declare_launch_args": 0, "execute": 3},
                     "b": {"infer_meta": 1, "compile": 0, "declare_launch_args": 0, "execute": 3}}
    assert s["python_calls"] == 4  # only the Python node counts
    assert s["outputs"]["b:0"]["shape"] == [2]
    np.testing.assert_array_equal(np.load(s["outputs"]["b:0"]["file"]), np.array([1.0, 0.0], np.float32))


def test_text_summary(ge_run, source_dir):
    res = ge_run(_example(source_dir), "--repeat", "2", opp_path=("samples",))
    assert res.returncode == 0, res.stderr
    assert "graph 'attention_block'" in res.stdout
    assert "Python call(s)" in res.stdout
    assert "out:0" in res.stdout


# ---- usage errors: exit 2 ----------------------------------------------------------------

def _usage(res, fragment):
    assert res.returncode == 2, f"exit {res.returncode}\n{res.stderr}"
    assert fragment in res.stderr, res.stderr
    assert res.outputs() == []


def test_usage_no_graph(ge_run):
    _usage(ge_run(None), "GRAPH")


def test_usage_repeat_zero(ge_run, source_dir):
    _usage(ge_run(_example(source_dir), "--repeat", "0"), "--repeat")


def test_usage_unknown_option(ge_run, source_dir):
    _usage(ge_run(_example(source_dir), "--frobnicate"), "frobnicate")


def test_usage_bad_log_level(ge_run, source_dir):
    _usage(ge_run(_example(source_dir), log_level="chatty"), "chatty")


# ---- logging -----------------------------------------------------------------------------

def test_plugin_stdout_is_captured_into_the_log_with_the_plugin_name(ge_run, write_graph):
    g = write_graph([node("p", "E2ePrint", ["x"])], ["p:0"], inputs=[f32("x", [1.0, 2.0, 3.0])])
    res = ge_run(g, log_level="info")
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stderr.splitlines() if "e2e-stdout-marker 3" in line]
    assert len(lines) == 1, res.stderr
    assert "e2e_ops" in lines[0], lines[0]
    assert "e2e-stdout-marker" not in res.stdout


def test_plugin_stdout_is_not_printed_below_its_log_level(ge_run, write_graph):
    g = write_graph([node("p", "E2ePrint", ["x"])], ["p:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, log_level="warn")
    assert res.returncode == 0, res.stderr
    assert "e2e-stdout-marker" not in res.stdout + res.stderr


# ---- discovery through ASCEND_CUSTOM_OPP_PATH ---------------------------------------------

def test_env_opp_path_is_used_without_opp_path(ge_run, write_graph, opp, tmp_path):
    missing = str(tmp_path / "no-such-opp-folder")
    g = write_graph([node("a", "E2eCopy", ["x"]), node("b", "GeluCustom", ["a:0"])], ["b:0"],
                    inputs=[f32("x", [0.0, 1.0])])
    res = ge_run(g, opp_path=None, env_opp=f"{missing}:{opp['samples']}::{opp['ops']}")
    assert res.returncode == 0, res.stderr
    assert missing in res.stderr  # the missing entry is reported with its path ...
    y = res.load("b_0.npy")       # ... and does not stop the entries after it
    assert y[0] == 0.0 and abs(y[1] - 0.8411920) < 1e-5


def test_opp_path_option_overrides_env(ge_run, write_graph, opp):
    g = write_graph([node("a", "E2eCopy", ["x"])], ["a:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=("samples",), env_opp=opp["ops"])
    assert res.returncode == 1
    assert "E2eCopy" in res.stderr and "unknown op_type" in res.stderr


def test_no_opp_path_at_all_only_builtin_ops(ge_run, write_graph):
    g = write_graph([node("r", "ReluCpp", ["x"])], ["r:0"], inputs=[f32("x", [-1.0, 2.0])])
    res = ge_run(g, opp_path=None)
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("r_0.npy"), np.array([0.0, 2.0], np.float32))
