"""ge-run --skip-crashed: the engine's host uses the registry's verdicts."""
import json
import os
import subprocess
from pathlib import Path

import pytest

CRASH_AT_IMPORT = "import ctypes\nctypes.string_at(0)\n"


def _graph(tmp_path):
    g = tmp_path / "g.json"
    g.write_text(json.dumps({
        "inputs": [{"name": "x", "dtype": "float32", "shape": [2], "data": [1.0, -1.0]}],
        "nodes": [{"name": "a", "op_type": "GeluCustom", "inputs": ["x"]}],
        "outputs": ["a:0"]}))
    return g


def _opp(tmp_path, source_dir):
    opp = tmp_path / "opp"
    opp.mkdir()
    (opp / "boom.py").write_text(CRASH_AT_IMPORT)
    (opp / "gelu.py").write_text((source_dir / "plugins" / "samples" / "gelu.py").read_text())
    return opp


def _ls(ge_run_bin, opp, cache):
    ls = Path(ge_run_bin).parent / "ge-plugin-ls"
    p = subprocess.run([str(ls), "--no-daemon", "--json", "--opp-path", str(opp), "--cache", str(cache)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return {pl["name"]: pl["status"] for pl in json.loads(p.stdout)["plugins"]}


def test_skip_crashed_skips_the_registry_verdict_and_loads_the_rest(ge_run, ge_run_bin, tmp_path, source_dir):
    opp = _opp(tmp_path, source_dir)
    cache = tmp_path / "cache.json"
    assert _ls(ge_run_bin, opp, cache) == {"boom": "crashed", "gelu": "ok"}
    res = ge_run(_graph(tmp_path), "--skip-crashed", "--registry-cache", str(cache), opp_path=(str(opp),))
    assert res.returncode == 0, res.stderr
    assert "boom" in res.stderr and "skipped" in res.stderr and "crashed" in res.stderr
    assert res.outputs() == ["a_0.npy"]


def test_a_changed_plugin_is_tried_again(ge_run, ge_run_bin, tmp_path, source_dir):
    opp = _opp(tmp_path, source_dir)
    cache = tmp_path / "cache.json"
    _ls(ge_run_bin, opp, cache)
    (opp / "boom.py").write_text("raise ImportError('fixed but still broken')\n")
    os.utime(opp / "boom.py", (1, 1))
    res = ge_run(_graph(tmp_path), "--skip-crashed", "--registry-cache", str(cache), opp_path=(str(opp),))
    assert res.returncode == 0, res.stderr
    assert "fixed but still broken" in res.stderr  # loaded (and failed) instead of skipped
    assert "skipped" not in res.stderr


def test_without_a_cache_nothing_is_skipped(ge_run, tmp_path, source_dir):
    opp = tmp_path / "opp"
    opp.mkdir()
    (opp / "gelu.py").write_text((source_dir / "plugins" / "samples" / "gelu.py").read_text())
    res = ge_run(_graph(tmp_path), "--skip-crashed", "--registry-cache", str(tmp_path / "none.json"),
                 opp_path=(str(opp),))
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("cache", ["missing", "garbage", "fifo", "dev-zero"])
def test_skip_crashed_says_when_it_cannot_read_the_cache(ge_run, tmp_path, source_dir, cache):
    """Crash protection silently off would be worse than an error: a warning names the cache and why."""
    import os
    opp = tmp_path / "opp"
    opp.mkdir()
    (opp / "gelu.py").write_text((source_dir / "plugins" / "samples" / "gelu.py").read_text())
    path = tmp_path / "cache.json"
    if cache == "garbage":
        path.write_text("{not json")
    elif cache == "fifo":
        os.mkfifo(path)
    elif cache == "dev-zero":
        path.symlink_to("/dev/zero")
    res = ge_run(_graph(tmp_path), "--skip-crashed", "--registry-cache", str(path), opp_path=(str(opp),), timeout=60)
    assert res.returncode == 0, res.stderr
    assert "ge-run: warning: --skip-crashed: " in res.stderr and "no plugin is skipped" in res.stderr, res.stderr
    assert str(path) in res.stderr


SPIN_AT_IMPORT = ("import threading\n\ndef _spin():\n    while True:\n        pass\n\n"
                  "threading.Thread(target=_spin, daemon=True).start()\n")


def test_skip_crashed_skips_a_plugin_that_left_a_busy_thread_and_runs_its_neighbour(ge_run, ge_run_bin, tmp_path,
                                                                                     source_dir):
    """The reported case: a main-interpreter plugin spinning a daemon thread at
    import is the one the registry marks (hung, busy thread), the next plugin is
    ok, and ge-run --skip-crashed skips the culprit and runs the other's op."""
    opp = tmp_path / "opp"
    opp.mkdir()
    spin = opp / "a_spin"
    spin.mkdir()
    (spin / "pyproject.toml").write_text('[project]\nname = "a_spin"\nversion = "1.0"\n\n'
                                         '[tool.ge-plugin]\nisolation = "main"\n')
    (spin / "__init__.py").write_text(SPIN_AT_IMPORT)
    (opp / "gelu.py").write_text((source_dir / "plugins" / "samples" / "gelu.py").read_text())
    cache = tmp_path / "cache.json"
    assert _ls(ge_run_bin, opp, cache) == {"a_spin": "hung", "gelu": "ok"}
    rec = {r["name"]: r for r in json.loads(cache.read_text())["plugins"]}["a_spin"]
    assert rec["error_kind"] == "busy_thread"
    res = ge_run(_graph(tmp_path), "--skip-crashed", "--registry-cache", str(cache), opp_path=(str(opp),))
    assert res.returncode == 0, res.stderr
    assert "a_spin" in res.stderr and "skipped" in res.stderr and "keeps the CPU busy" in res.stderr
    assert res.outputs() == ["a_0.npy"]
