"""The plugin template (share/template/my_op): copied into an opp folder, its own unit tests
pass (and fail when the op is broken), its README's rename recipe gives a second working
plugin, and ge-run loads both and computes the right results."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from e2e_helpers import f32, node

PYTHON = "/usr/bin/python3"


def _ge_python_dir() -> str:
    """The directory holding the ge package, from PYTHONPATH (made absolute)."""
    for entry in os.environ.get("PYTHONPATH", "").split(":"):
        if entry and (Path(entry) / "ge" / "__init__.py").is_file():
            return str(Path(entry).resolve())
    pytest.fail("PYTHONPATH holds no directory with the ge package (e.g. PYTHONPATH=build/python)", pytrace=False)


@pytest.fixture
def template(source_dir) -> Path:
    t = source_dir / "share" / "template" / "my_op"
    assert (t / "__init__.py").is_file() and (t / "pyproject.toml").is_file() and (t / "README.md").is_file()
    return t


def _copy(template: Path, opp: Path, name: str = "my_op") -> Path:
    dest = opp / name
    shutil.copytree(template, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


def _run_pytest(tests: Path, opp: Path):
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{_ge_python_dir()}:{opp}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
                          cwd=opp.parent, env=env, capture_output=True, text=True, timeout=300)


def _test_count(tests: Path) -> int:
    return sum(len(re.findall(r"^def test_", f.read_text(), re.M)) for f in tests.glob("test_*.py"))


def _rename_recipe(template: Path) -> str:
    """The shell lines of the README's rename step (from `sed -i` to `mv tests/...`)."""
    text = (template / "README.md").read_text()
    m = re.search(r"^(sed -i .*?^mv tests/\S+ tests/\S+)$", text, re.M | re.S)
    assert m, "README.md has no rename recipe (sed -i ... / mv tests/...)"
    return m.group(1)


def test_template_tests_pass_in_a_copy(template, tmp_path):
    opp = tmp_path / "opp"
    pkg = _copy(template, opp)
    p = _run_pytest(pkg / "tests", opp)
    n = _test_count(pkg / "tests")
    assert n >= 5
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"{n} passed" in p.stdout, p.stdout


def test_template_tests_catch_a_broken_op(template, tmp_path):
    """The template's tests are real checks: a wrong formula and a wrong infer_meta fail them."""
    opp = tmp_path / "opp"
    pkg = _copy(template, opp)
    src = (pkg / "__init__.py").read_text()
    assert "dst[i] = v * scale + bias" in src
    (pkg / "__init__.py").write_text(src.replace("dst[i] = v * scale + bias", "dst[i] = v * scale - bias"))
    p = _run_pytest(pkg / "tests", opp)
    assert p.returncode == 1 and "failed" in p.stdout, p.stdout + p.stderr
    assert "test_execute_computes_scale_and_bias" in p.stdout


def test_readme_rename_recipe_gives_a_working_plugin(template, tmp_path):
    opp = tmp_path / "opp"
    pkg = _copy(template, opp, "scale_add")
    r = subprocess.run(["bash", "-ec", _rename_recipe(template)], cwd=pkg, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    leftovers = [f"{f.relative_to(pkg)}: {line}" for f in [*pkg.glob("*.py"), *pkg.glob("*.toml"), *pkg.glob("*.md"),
                                                          *pkg.glob("tests/*.py")]
                 for line in f.read_text().splitlines()
                 if re.search(r"\bmy_op\b|MyOp|my-op", line) and not line.startswith("sed -i ")]  # the recipe itself
    assert not leftovers, "names of the template left after the rename:\n" + "\n".join(leftovers)
    assert (pkg / "tests" / "test_scale_add.py").is_file()
    p = _run_pytest(pkg / "tests", opp)
    assert p.returncode == 0 and f"{_test_count(pkg / 'tests')} passed" in p.stdout, p.stdout + p.stderr


def test_host_loads_template_and_renamed_copy_and_computes(template, tmp_path, ge_run, write_graph):
    opp = tmp_path / "opp"
    _copy(template, opp)
    renamed = _copy(template, opp, "scale_add")
    subprocess.run(["bash", "-ec", _rename_recipe(template)], cwd=renamed, check=True)
    x = [[1.0, 2.0, 3.0], [4.0, 5.0, -6.0]]
    graph = write_graph(
        [node("a", "MyOpCustom", ["x"], {"scale": 2.0, "bias": -1.0}),
         node("b", "ScaleAddCustom", ["a:0"], {"scale": 0.5, "bias": 0.25})],
        ["a:0", "b:0"], inputs=[f32("x", x, [2, 3])],
        options={"my_op.max_block_dim": "2", "scale_add.max_block_dim": "1"})
    res = ge_run(graph, "--json", "--repeat", "3", opp_path=(str(opp),))
    assert res.returncode == 0, res.stderr
    summary = res.json()
    want_a = np.asarray(x, dtype=np.float32) * 2.0 - 1.0
    want_b = want_a * 0.5 + 0.25
    a, b = np.load(summary["outputs"]["a:0"]["file"]), np.load(summary["outputs"]["b:0"]["file"])
    assert a.dtype == np.float32 and a.shape == (2, 3)
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)
    plugins = {p["name"]: p for p in summary["plugins"]}
    assert set(plugins) == {"my_op", "scale_add"}, summary["plugins"]  # tests/ inside a package is no plugin
    for name, op in (("my_op", "MyOpCustom"), ("scale_add", "ScaleAddCustom")):
        assert plugins[name]["status"] == "ok" and plugins[name]["ops"] == [op], plugins[name]
        assert plugins[name]["isolation"] == "subinterpreter"  # from the template's pyproject.toml
    for n in summary["nodes"]:
        assert n["calls"]["infer_meta"] == 1 and n["calls"]["compile"] == 1 and n["calls"]["execute"] == 3, n
        assert n["mode"] == "eager" and n["python"] is True, n


def test_template_compile_option_error_reaches_the_host(template, tmp_path, ge_run, write_graph):
    """compile runs in the host with the graph's options: a bad value fails the node with the op's message."""
    opp = tmp_path / "opp"
    _copy(template, opp)
    graph = write_graph([node("a", "MyOpCustom", ["x"])], ["a:0"], inputs=[f32("x", [1.0, 2.0])],
                        options={"my_op.max_block_dim": "0"})
    res = ge_run(graph, opp_path=(str(opp),))
    assert res.returncode == 1, res.stderr
    assert "my_op.max_block_dim must be positive" in res.stderr and "MyOpCustom" in res.stderr, res.stderr
    assert res.outputs() == []
