"""ge-run's compile phase end to end: --soc, --option, compile counts, compile
never at load nor during execution, failing compiles, unknown SoCs, the tiling
sample, and all 12 attribute kinds in compile (share/docs/compile.md)."""
import configparser
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from e2e_helpers import assert_failed_cleanly, assert_verdicts, f32, node, plugin_checks

PLATFORM_FAILED = "Failed to get platform infos"


@pytest.fixture
def cmp_opp(source_dir):
    base = source_dir / "plugins" / "testing" / "compile"
    return {name: str(base / name) for name in ("probe", "failing", "attrs", "bad_signature", "keep")}


@pytest.fixture
def probe_log(tmp_path, monkeypatch):
    """Path of CmpProbe's event log (set in the environment ge-run inherits); read() -> events."""
    path = tmp_path / "probe_log.jsonl"
    monkeypatch.setenv("GE_COMPILE_PROBE_LOG", str(path))

    class Log:
        def read(self):
            if not path.exists():
                return []
            return [json.loads(line) for line in path.read_text().splitlines()]

        def events(self, kind):
            return [e for e in self.read() if e["event"] == kind]

    return Log()


def ini(source_dir, soc):
    cp = configparser.ConfigParser(interpolation=None)
    cp.optionxform = str
    path = source_dir / "share" / "platform" / f"{soc}.ini"
    assert cp.read(path) == [str(path)]
    return cp


def probe_graph(write_graph, options=None, names=("p",)):
    nodes = [node(n, "CmpProbe", ["x"]) for n in names]
    extra = {"options": options} if options is not None else {}
    return write_graph(nodes, [f"{n}:0" for n in names], inputs=[f32("x", [[1.0, 2.0], [3.0, 4.0]], [2, 2])], **extra)


# ---- --soc and --option ----------------------------------------------------------------------

@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend310P3"])
def test_soc_selects_the_platform_compile_reads(ge_run, write_graph, cmp_opp, probe_log, source_dir, soc):
    res = ge_run(probe_graph(write_graph), "--soc", soc, "--json", opp_path=(cmp_opp["probe"],))
    assert res.returncode == 0, res.stderr
    s = ini(source_dir, soc)["SoCInfo"]
    (c,) = probe_log.events("compile")
    assert c["soc"] == soc
    default_key = {"AiCore": "ai_core_cnt", "VectorCore": "vector_core_cnt"}[s["core_type_list"].split(",")[0]]
    assert c["core_num"] == int(s[default_key])
    assert c["ai_core_num"] == int(s["ai_core_cnt"])
    assert c["vector_core_num"] == int(s["vector_core_cnt"])
    assert res.json()["soc"] == soc
    np.testing.assert_array_equal(res.load("p_0.npy"), np.array([[1, 2], [3, 4]], np.float32))


def test_default_soc_is_the_measured_host(ge_run, write_graph, cmp_opp, probe_log):
    res = ge_run(probe_graph(write_graph), "--json", opp_path=(cmp_opp["probe"],))
    assert res.returncode == 0, res.stderr
    (c,) = probe_log.events("compile")
    assert c["soc"] == "host"
    assert c["core_num"] == c["ai_core_num"] == len(os.sched_getaffinity(0))
    assert res.json()["soc"] == "host"


def test_option_overrides_the_graph_options(ge_run, write_graph, cmp_opp, probe_log):
    g = probe_graph(write_graph, options={"probe.tag": "from-graph", "probe.other": "kept"})
    res = ge_run(g, "--option", "probe.tag=from-cli", "--option", "ge.aicoreNum=3", "--soc", "Ascend910B1", "--json",
                 opp_path=(cmp_opp["probe"],))
    assert res.returncode == 0, res.stderr
    (c,) = probe_log.events("compile")
    assert c["options"] == {"probe.tag": "from-cli", "probe.other": "kept", "ge.aicoreNum": "3"}
    assert c["ai_core_num"] == 3
    assert res.json()["options"] == {"probe.tag": "from-cli", "probe.other": "kept", "ge.aicoreNum": "3"}


def test_graph_options_reach_compile_without_option_flags(ge_run, write_graph, cmp_opp, probe_log):
    g = probe_graph(write_graph, options={"probe.tag": "from-graph", "ge.coreType": "VectorCore"})
    res = ge_run(g, "--soc", "Ascend910B1", opp_path=(cmp_opp["probe"],))
    assert res.returncode == 0, res.stderr
    (c,) = probe_log.events("compile")
    assert c["options"] == {"probe.tag": "from-graph", "ge.coreType": "VectorCore"}
    assert c["core_num"] == c["vector_core_num"] != c["ai_core_num"]


def test_option_value_may_contain_equals_and_be_empty(ge_run, write_graph, cmp_opp, probe_log):
    res = ge_run(probe_graph(write_graph), "--option", "probe.tag=a=b", "--option", "probe.other=",
                 opp_path=(cmp_opp["probe"],))
    assert res.returncode == 0, res.stderr
    (c,) = probe_log.events("compile")
    assert c["options"] == {"probe.tag": "a=b", "probe.other": ""}


@pytest.mark.parametrize("bad", ["novalue", "=value"])
def test_option_without_key_value_is_a_usage_error(ge_run, write_graph, cmp_opp, probe_log, bad):
    res = ge_run(probe_graph(write_graph), "--option", bad, opp_path=(cmp_opp["probe"],))
    assert res.returncode == 2, res.stderr
    assert "--option" in res.stderr and bad in res.stderr
    assert res.outputs() == []
    assert probe_log.read() == []  # nothing loaded, nothing compiled


# ---- compile counts and timing ---------------------------------------------------------------

def test_json_counts_one_compile_per_node_even_with_repeat(ge_run, write_graph, cmp_opp, probe_log):
    g = write_graph([node("a", "CmpProbe", ["x"]), node("b", "CmpProbe", ["a:0"]), node("r", "ReluCpp", ["b:0"])],
                    ["r:0"], inputs=[f32("x", [1.0, -2.0])])
    res = ge_run(g, "--json", "--repeat", "5", opp_path=(cmp_opp["probe"],))
    assert res.returncode == 0, res.stderr
    calls = {n["name"]: n["calls"] for n in res.json()["nodes"]}
    assert calls == {"a": {"infer_meta": 1, "compile": 1, "declare_launch_args": 0, "execute": 5},
                     "b": {"infer_meta": 1, "compile": 1, "declare_launch_args": 0, "execute": 5},
                     "r": {"infer_meta": 1, "compile": 0, "declare_launch_args": 0, "execute": 5}}
    kinds = [e["event"] for e in probe_log.read()]
    assert kinds == ["import", "compile", "compile"] + ["execute"] * 10
    assert res.json()["python_calls"] == 2 * (1 + 1 + 5)


def test_compile_is_never_called_at_load(ge_run, write_graph, cmp_opp, probe_log):
    """Loading the plugin without a graph node using it: an import, no compile."""
    g = write_graph([node("r", "ReluCpp", ["x"])], ["r:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, "--json", opp_path=(cmp_opp["probe"],))
    assert res.returncode == 0, res.stderr
    assert [e["event"] for e in probe_log.read()] == ["import"]
    (imp,) = probe_log.events("import")
    assert "only available inside schema-bound compile" in imp["compile_ctx"]
    assert [p["ops"] for p in res.json()["plugins"]] == [["CmpProbe"]]


def test_compile_runs_before_every_execute(ge_run, write_graph, cmp_opp, probe_log):
    res = ge_run(probe_graph(write_graph, names=("p", "q")), "--repeat", "2", opp_path=(cmp_opp["probe"],))
    assert res.returncode == 0, res.stderr
    kinds = [e["event"] for e in probe_log.read()]
    assert kinds == ["import", "compile", "compile", "execute", "execute", "execute", "execute"]


# ---- failures --------------------------------------------------------------------------------

def test_failing_compile_stops_the_compilation(ge_run, write_graph, cmp_opp, probe_log, source_dir, tmp_path,
                                              monkeypatch):
    side_effect = tmp_path / "execute_ran"
    monkeypatch.setenv("GE_COMPILE_SIDE_EFFECT", str(side_effect))
    g = write_graph([node("first", "CmpProbe", ["x"]), node("boom", "CmpFails", ["first:0"]),
                     node("after", "CmpProbe", ["boom:0"])], ["after:0", "first:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(cmp_opp["probe"], cmp_opp["failing"]))
    plugin_file = os.path.realpath(source_dir / "plugins" / "testing" / "compile" / "failing" / "compile_fails.py")
    assert_failed_cleanly(res, "'boom'", "CmpFails", plugin_file, "ValueError", "compile exploded 31")
    assert "Traceback" in res.stderr and "_explode" in res.stderr, res.stderr
    assert not side_effect.exists()
    assert probe_log.events("execute") == []
    assert len(probe_log.events("compile")) == 1  # "first" compiled; "after" never reached


def test_plugin_with_a_legacy_compile_signature_is_not_loaded(ge_run, write_graph, cmp_opp):
    g = write_graph([node("n", "CmpBadSig", ["x"])], ["n:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(cmp_opp["bad_signature"],))
    assert res.returncode == 1
    warning = next(line for line in res.stderr.splitlines() if "warning:" in line)
    for fragment in ("CmpBadSig", "compile", "expected 2 positional", "actual"):
        assert fragment in warning, (fragment, res.stderr)
    assert "unknown op_type 'CmpBadSig'" in res.stderr
    assert res.outputs() == []


def test_unknown_soc_is_a_usage_error_listing_the_available_platforms(ge_run, write_graph, cmp_opp, probe_log):
    res = ge_run(probe_graph(write_graph), "--soc", "NoSuchSoc", opp_path=(cmp_opp["probe"],))
    assert res.returncode == 2, res.stderr
    assert "unknown --soc 'NoSuchSoc'" in res.stderr and "NoSuchSoc.ini" in res.stderr
    for name in ("host", "Ascend910B1", "Ascend310P3"):
        assert name in res.stderr
    assert res.outputs() == []
    assert probe_log.events("compile") == []


def _broken_platform_dir(tmp_path):
    d = tmp_path / "platform"
    d.mkdir()
    (d / "Broken.ini").write_text("[version]\nSoC_version = Broken\n[SoCInfo\nai_core_cnt=4\n")
    return d


def test_broken_platform_fails_the_compile_that_reads_it(ge_run, write_graph, cmp_opp, probe_log, tmp_path,
                                                         monkeypatch):
    monkeypatch.setenv("GE_PLATFORM_DIR", str(_broken_platform_dir(tmp_path)))
    res = ge_run(probe_graph(write_graph), "--soc", "Broken", opp_path=(cmp_opp["probe"],))
    assert_failed_cleanly(res, "'p'", "CmpProbe", PLATFORM_FAILED, "Broken.ini")
    assert probe_log.events("execute") == []


def test_broken_platform_is_harmless_when_no_compile_reads_it(ge_run, write_graph, cmp_opp, probe_log, tmp_path,
                                                              monkeypatch):
    monkeypatch.setenv("GE_PLATFORM_DIR", str(_broken_platform_dir(tmp_path)))
    res = ge_run(probe_graph(write_graph), "--soc", "Broken", "--option", "probe.no_platform=1", "--json",
                 opp_path=(cmp_opp["probe"],))
    assert res.returncode == 0, res.stderr
    (c,) = probe_log.events("compile")
    assert "soc" not in c
    assert len(probe_log.events("execute")) == 1


# ---- the tiling sample -----------------------------------------------------------------------

def _expected_tiling(cores, cap=32, rows=40):
    block_dim = max(1, min(cores, cap, rows))
    return [block_dim, math.ceil(rows / block_dim), cores]


def _run_tiling(ge_run, source_dir, *args):
    res = ge_run(source_dir / "share" / "examples" / "tiling.json", "--json", *args, opp_path=("samples",))
    assert res.returncode == 0, res.stderr
    check = subprocess.run([sys.executable, str(source_dir / "share" / "examples" / "check_tiling.py"),
                            str(res.out_dir)], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    calls = {n["name"]: n["calls"]["compile"] for n in res.json()["nodes"]}
    assert calls == {"softmax": 1}
    return res.load("softmax_1.npy").tolist()


def test_tiling_sample_decision_changes_with_soc(ge_run, source_dir):
    b1 = int(ini(source_dir, "Ascend910B1")["SoCInfo"]["ai_core_cnt"])
    p3 = int(ini(source_dir, "Ascend310P3")["SoCInfo"]["ai_core_cnt"])
    host = len(os.sched_getaffinity(0))
    tilings = {soc: _run_tiling(ge_run, source_dir, "--soc", soc) for soc in ("host", "Ascend910B1", "Ascend310P3")}
    assert tilings == {"host": _expected_tiling(host), "Ascend910B1": _expected_tiling(b1),
                       "Ascend310P3": _expected_tiling(p3)}
    assert tilings["Ascend910B1"] != tilings["Ascend310P3"]


def test_tiling_sample_option_overrides_the_graph_cap(ge_run, source_dir):
    b1 = int(ini(source_dir, "Ascend910B1")["SoCInfo"]["ai_core_cnt"])
    assert _run_tiling(ge_run, source_dir, "--soc", "Ascend910B1", "--option", "tiling.max_block_dim=4") == \
        _expected_tiling(b1, cap=4)


# ---- attributes in compile -------------------------------------------------------------------

def test_all_twelve_attribute_kinds_in_compile(ge_run, write_graph, cmp_opp, source_dir):
    plugin = source_dir / "plugins" / "testing" / "compile" / "attrs" / "compile_attrs.py"
    attrs = plugin_checks(plugin, "GRAPH_ATTRS")
    assert len(attrs) == 12
    g = write_graph([node("n", "CmpAttrs", ["x"], attrs)], ["n:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, "--json", opp_path=(cmp_opp["attrs"],))
    assert res.returncode == 0, res.stderr
    assert res.json()["nodes"][0]["calls"]["compile"] == 1
    assert_verdicts(res.load("n_0.npy"), plugin_checks(plugin, "CHECKS"))


def test_objects_kept_from_one_compile_expire_in_the_next_node_compile(ge_run, write_graph, cmp_opp):
    """Two nodes of one op_type share one instance: the second compile touches what the first kept."""
    g = write_graph([node("a", "CmpKeep", ["x"]), node("b", "CmpKeep", ["a:0"])], ["b:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(cmp_opp["keep"],))
    assert res.returncode == 0, res.stderr
    # each execute adds calls*1000 + checked: 2 compiles, 6 expired objects checked
    assert res.load("b_0.npy").tolist() == [1.0 + 2 * (2006.0)]
