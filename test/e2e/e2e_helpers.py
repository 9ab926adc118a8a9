"""Helpers shared by the ge-run end-to-end tests (graph fragments, assertions)."""


def f32(name, data, shape=None):
    """An inline float32 graph input."""
    return {"name": name, "dtype": "float32", "shape": shape if shape is not None else [len(data)], "data": data}


def node(name, op_type, inputs, attrs=None):
    n = {"name": name, "op_type": op_type, "inputs": inputs}
    if attrs is not None:
        n["attrs"] = attrs
    return n


def assert_failed_cleanly(res, *fragments):
    """Exit 1, one error message holding every fragment, no output files."""
    assert res.returncode == 1, f"exit {res.returncode}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    assert res.stderr.count("error:") == 1, f"expected exactly one error message:\n{res.stderr}"
    error_line = next(line for line in res.stderr.splitlines() if "error:" in line)
    for f in fragments:
        assert f in error_line, f"{f!r} not in the error message {error_line!r}\nfull stderr:\n{res.stderr}"
    assert res.outputs() == [], f"output files were written: {res.outputs()}"
    assert res.stdout == "", f"a failed run printed a summary: {res.stdout!r}"


def assert_verdicts(values, names):
    """Every verdict is 1.0; report the failing checks by name."""
    values = [float(v) for v in values]
    assert len(values) == len(names), f"{len(values)} verdicts for {len(names)} checks"
    failed = [n for v, n in zip(values, names) if v != 1.0]
    assert not failed, "not as specified: " + "; ".join(failed)


def plugin_checks(path, name):
    """The list literal ``name = [...]`` of a test plugin (check names, in output order)."""
    import ast
    tree = ast.parse(open(path, encoding="utf-8").read())
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(getattr(t, "id", None) == name for t in stmt.targets):
            return ast.literal_eval(stmt.value)
    raise KeyError(f"{name} not found in {path}")


def oplib_dir():
    """Where the build puts the test op libraries (test/oplib/README.md): <build>/test-oplib."""
    import os
    from pathlib import Path
    return Path(os.environ["GE_RUN"]).resolve().parent.parent / "test-oplib"


def make_opp_root(root, libs, layout="op_graph"):
    """An opp root holding copies of the named test op libraries in
    ``<root>/<layout>/lib/linux/<arch>/`` (the layout the discovery looks for)."""
    import os
    import platform
    import shutil
    from pathlib import Path
    folder = Path(root) / layout / "lib" / "linux" / platform.machine()
    folder.mkdir(parents=True, exist_ok=True)
    for lib in libs:
        shutil.copy(oplib_dir() / lib, folder / lib)
    for d, _, files in os.walk(root):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o755)
    return folder
