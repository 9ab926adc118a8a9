"""Plugin interpreters through ge-run: the stdout/stderr stream surface, the
pyproject.toml checks and the extension guard's message (ge._loader)."""
import textwrap

import pytest

from e2e_helpers import f32, node

STREAM_PLUGIN = textwrap.dedent('''\
    import io
    import sys

    from ge.custom_op import get_execute_ctx, register_op, register_op_impl
    from ge.runtime import Tensor, TensorDesc

    out = sys.stdout
    print("name", out.name, sys.stderr.name, "mode", out.mode, "encoding", out.encoding)
    out.buffer.write("buffer h\\u00e9llo\\n".encode())
    out.buffer.write(b"bad \\xff byte\\n")
    out.buffer.flush()
    out.writelines(["lines one\\n", "lines two\\n"])
    try:
        out.fileno()
    except io.UnsupportedOperation:
        print("fileno unsupported")
    print("seekable", out.seekable(), "closed", out.closed)
    out.close()
    print("after close", out.closed)
    print("to stderr", file=sys.stderr)


    @register_op(op_type="StreamOp")
    def stream_op(x: TensorDesc) -> TensorDesc:
        return x


    @register_op_impl(op_type="StreamOp")
    class StreamOp:
        def execute(self, x: Tensor) -> None:
            sys.stdout.buffer.write(b"execute via buffer\\n")
            y = get_execute_ctx().malloc_output_tensor(0, x.storage_shape.dims, x.data_type)
            y.data[:] = x.data
    ''')


def test_plugin_stdout_offers_the_text_stream_surface(ge_run, write_graph, tmp_path):
    opp = tmp_path / "opp"
    opp.mkdir()
    (opp / "streamy.py").write_text(STREAM_PLUGIN)
    graph = write_graph([node("n", "StreamOp", ["x"])], ["n:0"], inputs=[f32("x", [1.0, 2.0])])
    res = ge_run(graph, opp_path=[str(opp)], log_level="info")
    assert res.returncode == 0, res.stderr
    log = res.stderr
    for line in ["[streamy] name <ge-plugin stdout> <ge-plugin stderr> mode w encoding utf-8",
                 "[streamy] buffer h\u00e9llo", "[streamy] bad \\xff byte", "[streamy] lines one",
                 "[streamy] lines two", "[streamy] fileno unsupported", "[streamy] seekable False closed False",
                 "[streamy] after close False", "[streamy] execute via buffer"]:
        assert line in log, f"{line!r} not in:\n{log}"
    assert "[warning] [streamy] to stderr" in log
    assert res.load("n_0.npy").tolist() == [1.0, 2.0]


@pytest.mark.parametrize("table", ["ge_plugin", "ge-plugins"])
def test_misspelled_tool_table_fails_the_plugin(ge_run, write_graph, tmp_path, table):
    pkg = tmp_path / "opp" / "typo_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "pyproject.toml").write_text(f'[tool.{table}]\nisolation = "main"\n')
    graph = write_graph([node("n", "GeluCustom", ["x"])], ["n:0"], inputs=[f32("x", [1.0])])
    res = ge_run(graph, opp_path=["samples", str(tmp_path / "opp")])
    assert res.returncode == 0, res.stderr  # the other plugins still load and run
    warning = next(line for line in res.stderr.splitlines() if "typo_pkg" in line)
    assert f"[tool.{table}]" in warning and "[tool.ge-plugin]" in warning, warning
    assert str(pkg / "pyproject.toml") in warning, warning


def test_bad_isolation_message_lists_the_supported_values(ge_run, write_graph, tmp_path):
    pkg = tmp_path / "opp" / "iso_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "pyproject.toml").write_text('[tool.ge-plugin]\nisolation = "threads"\n')
    graph = write_graph([node("n", "GeluCustom", ["x"])], ["n:0"], inputs=[f32("x", [1.0])])
    res = ge_run(graph, opp_path=["samples", str(tmp_path / "opp")])
    assert res.returncode == 0, res.stderr
    assert "tool.ge-plugin.isolation: got 'threads', supported: subinterpreter, main, process" in res.stderr, res.stderr


NUMPY_PLUGIN = "import numpy\n"


def test_numpy_in_a_package_names_its_pyproject(ge_run, write_graph, tmp_path):
    pkg = tmp_path / "opp" / "np_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(NUMPY_PLUGIN)
    graph = write_graph([node("n", "GeluCustom", ["x"])], ["n:0"], inputs=[f32("x", [1.0])])
    res = ge_run(graph, opp_path=["samples", str(tmp_path / "opp")])
    assert res.returncode == 0, res.stderr
    warning = next(line for line in res.stderr.splitlines() if "np_pkg" in line and "not loaded" in line)
    assert 'isolation = "main"' in warning and "single-file" not in warning, warning


def test_numpy_in_a_single_file_plugin_says_to_make_a_package(ge_run, write_graph, tmp_path):
    opp = tmp_path / "opp"
    opp.mkdir()
    (opp / "np_file.py").write_text(NUMPY_PLUGIN)
    graph = write_graph([node("n", "GeluCustom", ["x"])], ["n:0"], inputs=[f32("x", [1.0])])
    res = ge_run(graph, opp_path=["samples", str(opp)])
    assert res.returncode == 0, res.stderr
    assert "plugin np_file not loaded" in res.stderr, res.stderr
    # The guard's message (may span lines: numpy re-raises it) names the fix for a
    # single file; no part of the report may point at a pyproject.toml it cannot have.
    assert "turn it into a package" in res.stderr and 'isolation = "main"' in res.stderr, res.stderr
    assert "in the plugin's pyproject.toml" not in res.stderr, res.stderr
    # What the import raised is named by its type: numpy's own first line is a
    # banner ("IMPORTANT: PLEASE READ THIS ..."), no reason.
    warning = next(line for line in res.stderr.splitlines() if "plugin np_file not loaded" in line)
    assert "(the import raised ImportError; its message is in the traceback)" in warning, warning
    assert "IMPORTANT" not in warning, warning


def test_check_of_a_numpy_plugin_hints_at_its_fix(tmp_path):
    """ge-plugin-ls --check: the hint for a refused extension fits the plugin's form."""
    import os
    import subprocess
    ls = os.path.join(os.path.dirname(os.environ["GE_RUN"]), "ge-plugin-ls")
    env = dict(os.environ, GE_PLUGIN_REGISTRY_CACHE=str(tmp_path / "c.json"),
               GE_PLUGIN_REGISTRY_SOCKET=str(tmp_path / "none.sock"))
    single = tmp_path / "np_file.py"
    single.write_text(NUMPY_PLUGIN)
    pkg = tmp_path / "np_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(NUMPY_PLUGIN)
    hints = {}
    for path in (single, pkg):
        p = subprocess.run([ls, "--check", str(path)], capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 1, p.stdout + p.stderr
        hints[path.name] = next(line for line in p.stdout.splitlines() if line.strip().startswith("hint:"))
    assert "make the file a package" in hints["np_file.py"] and '"process"' in hints["np_file.py"], hints
    assert "package's pyproject.toml" in hints["np_pkg"] and "make the file" not in hints["np_pkg"], hints


PARTIAL_LINES = '''import sys
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

print("partial at import", end="")


@register_op(op_type="{op}")
def proto(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="{op}")
class Impl:
    def execute(self, x: Tensor) -> None:
        sys.stderr.write("partial in execute")
        get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
'''


@pytest.mark.parametrize("isolation", ["subinterpreter", "process"])
def test_a_last_line_without_newline_is_logged_when_the_plugin_ends(ge_run, write_graph, tmp_path, isolation):
    pkg = tmp_path / "opp" / "partial"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(PARTIAL_LINES.replace("{op}", "E2ePartial"))
    (pkg / "pyproject.toml").write_text(f'[tool.ge-plugin]\nisolation = "{isolation}"\n')
    graph = write_graph([node("n", "E2ePartial", ["x"])], ["n:0"], inputs=[f32("x", [1.0])])
    res = ge_run(graph, opp_path=[str(tmp_path / "opp")], log_level="info")
    assert res.returncode == 0, res.stderr
    # The two texts, each a line of its own: the import's (stdout, info) and execute's (stderr, warn).
    assert "[info] [partial] partial at import" in res.stderr, res.stderr
    assert "[warning] [partial] partial in execute" in res.stderr, res.stderr
