"""Type stubs of the ge package (.pyi + py.typed): mypy over the sample plugins and the
template, the stubs themselves, a file using every API name, a plugin full of type errors,
and the stubs compared with the runtime classes and functions they describe.

mypy is Debian's (``apt-get install -y mypy``), run as ``/usr/bin/python3 -m mypy`` with
``PYTHONPATH=bindings/python`` (the PEP 561 route an author uses) or ``MYPYPATH``. Nothing
is skipped: without mypy every mypy test fails with the install hint.
"""
import ast
import inspect
import os
import re
import subprocess
from pathlib import Path

import pytest

import ge.custom_op
import ge.custom_op.proto
import ge.runtime
import ge.testing

SOURCE = Path(__file__).resolve().parents[2]
GE_PY = SOURCE / "bindings" / "python"
STUB_DIR = GE_PY / "ge"
SAMPLES = SOURCE / "plugins" / "samples"
TEMPLATE = SOURCE / "share" / "template" / "my_op"
DATA = Path(__file__).resolve().parent / "typecheck"
PYTHON = "/usr/bin/python3"

# Each public module with a stub, and the stub file describing it.
STUBS = {
    "ge.runtime": STUB_DIR / "runtime.pyi",
    "ge.custom_op": STUB_DIR / "custom_op" / "__init__.pyi",
    "ge.custom_op.proto": STUB_DIR / "custom_op" / "proto.pyi",
    "ge.testing": STUB_DIR / "testing.pyi",
}
RUNTIME_MODULES = {"ge.runtime": ge.runtime, "ge.custom_op": ge.custom_op,
                   "ge.custom_op.proto": ge.custom_op.proto, "ge.testing": ge.testing}


# ---- running mypy ------------------------------------------------------------------------

@pytest.fixture(scope="session")
def mypy_cache(tmp_path_factory):
    """A fresh cache shared by this session's runs, and an empty config (no user config applies)."""
    d = tmp_path_factory.mktemp("mypy")
    (d / "mypy.ini").write_text("[mypy]\n")
    return d


@pytest.fixture(scope="session")
def mypy(mypy_cache):
    """mypy(*args, cwd, route="pythonpath"|"mypypath") -> CompletedProcess."""
    probe = subprocess.run([PYTHON, "-m", "mypy", "--version"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(f"mypy is not installed for {PYTHON}: apt-get install -y mypy (Debian's mypy)\n"
                    f"{probe.stderr.strip()}", pytrace=False)

    def run(*args, cwd, route="pythonpath"):
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
        env["PYTHONPATH" if route == "pythonpath" else "MYPYPATH"] = str(GE_PY)
        cmd = [PYTHON, "-m", "mypy", "--config-file", str(mypy_cache / "mypy.ini"),
               "--cache-dir", str(mypy_cache / route), "--show-error-codes", "--no-color-output", *args]
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)

    return run


def _report(p):
    return f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"


def _errors(output, filename):
    """{line: [messages]} of the errors mypy reported in ``filename``."""
    found = {}
    for m in re.finditer(rf"^{re.escape(filename)}:(\d+): error: (.*)$", output, re.M):
        found.setdefault(int(m.group(1)), []).append(m.group(2))
    return found


def _opp_plugins(folder):
    """The plugins of an opp folder, by the host's rule: each non-underscore .py file and
    each sub-directory with __init__.py (one level deep)."""
    return [p.name for p in sorted(folder.iterdir()) if not p.name.startswith("_") and (
        (p.is_file() and p.suffix == ".py") or (p.is_dir() and (p / "__init__.py").is_file()))]


# ---- files ---------------------------------------------------------------------------------

def test_stub_files_and_py_typed_marker_are_in_the_package():
    assert (STUB_DIR / "py.typed").is_file(), "ge/py.typed is missing: type checkers would ignore the stubs"
    for module, stub in STUBS.items():
        assert stub.is_file(), f"no stub for {module}: {stub}"
    # ge.graph is plain typed Python (IntEnums): no stub, so it can never drift from the code.
    assert not (STUB_DIR / "graph.pyi").exists()


# ---- mypy over shipped code -------------------------------------------------------------------

def test_sample_plugins_type_check_without_errors(mypy):
    plugins = _opp_plugins(SAMPLES)
    assert {"gelu.py", "rms_norm", "attention_np", "axpy_kernel", "tiled_softmax"} <= set(plugins), plugins
    p = mypy(*plugins, cwd=SAMPLES)
    assert p.returncode == 0, _report(p)
    m = re.search(r"Success: no issues found in (\d+) source files?", p.stdout)
    assert m and int(m.group(1)) >= len(plugins), _report(p)


def test_template_type_checks_under_strict(mypy):
    p = mypy("--strict", TEMPLATE.name, cwd=TEMPLATE.parent)
    assert p.returncode == 0, _report(p)
    m = re.search(r"Success: no issues found in (\d+) source files", p.stdout)
    assert m and int(m.group(1)) >= 2, _report(p)  # __init__.py and tests/test_my_op.py at least


def test_stubs_themselves_pass_strict_mypy(mypy, tmp_path):
    """Checked as source (MYPYPATH), every stub is consistent under --strict."""
    modules = ["ge.runtime", "ge.graph", "ge.custom_op", "ge.custom_op.proto", "ge.custom_op._impl", "ge.testing"]
    p = mypy("--strict", *[a for m in modules for a in ("-m", m)], cwd=tmp_path, route="mypypath")
    assert p.returncode == 0, _report(p)


@pytest.mark.parametrize("route", ["pythonpath", "mypypath"])
def test_every_api_name_used_correctly_passes_strict(mypy, route):
    p = mypy("--strict", "api_usage.py", cwd=DATA, route=route)
    assert p.returncode == 0, _report(p)


def test_plugin_type_errors_are_reported_on_their_lines(mypy):
    source = (DATA / "bad_plugin.py").read_text().splitlines()
    expected = {i: line.split("# E: ", 1)[1].strip() for i, line in enumerate(source, 1) if "# E: " in line}
    first = next(i for i, line in enumerate(source, 1) if 'malloc_output_tensor("0"' in line)
    assert first in expected  # the case the stubs exist for: a str output index
    p = mypy("bad_plugin.py", cwd=DATA)
    assert p.returncode == 1, _report(p)
    errors = _errors(p.stdout, "bad_plugin.py")
    missed = {line: frag for line, frag in expected.items()
              if not any(frag in msg for msg in errors.get(line, []))}
    assert not missed, f"errors not reported (line: expected fragment): {missed}\n{_report(p)}"
    unexpected = {line: msgs for line, msgs in errors.items() if line not in expected}
    assert not unexpected, f"errors on lines without a marker: {unexpected}"


def test_revealed_types_name_the_public_modules(mypy, tmp_path):
    probes = {
        "get_execute_ctx()": "ge.custom_op.EagerOpExecutionContext",
        "get_execute_ctx().get_input_tensor(0)": "ge.runtime.Tensor",
        "get_execute_ctx().get_output_tensor(0)": "ge.runtime.Tensor",
        "get_execute_ctx().get_optional_input_tensor(0)": "Union[ge.runtime.Tensor, None]",
        "get_execute_ctx().malloc_workspace(8)": "builtins.int",
        "get_execute_ctx().get_input_tensor(0).data_type": "ge.graph.DataType",
        "get_execute_ctx().get_input_tensor(0).placement": "ge.runtime.TensorPlacement",
        "get_execute_ctx().get_input_tensor(0).storage_shape.dims": "builtins.list[builtins.int]",
        "get_compile_ctx().get_option('k')": "builtins.str",
        "get_compile_platform_info().get_platform_resource_group('g')": "builtins.dict[builtins.str, builtins.str]",
        "get_declare_launch_args_ctx().malloc_workspace(8)": "ge.custom_op.WorkspaceAddr",
        "get_declare_launch_args_ctx().malloc_workspace(8).addr": "builtins.int",
        "get_registered_op_impls()": "builtins.list[ge.custom_op._impl.OpImplDescriptor]",
        "get_registered_op_proto_by_op_type('T')": "Union[ge.custom_op.proto.OpProtoDescriptor, None]",
        "run_execute('T', [])": "builtins.list[ge.testing.HostTensor]",
        "run_infer_meta('T', [])": "builtins.list[ge.runtime.TensorDesc]",
        "proto_fn": "def (x: ge.runtime.TensorDesc, *, k: builtins.int =) -> ge.runtime.TensorDesc",
    }
    lines = ["from ge.custom_op import *", "from ge.custom_op.proto import get_registered_op_proto_by_op_type",
             "from ge.runtime import TensorDesc", "from ge.testing import run_execute, run_infer_meta",
             "@register_op(op_type='T')",
             "def proto_fn(x: TensorDesc, *, k: int = 0) -> TensorDesc: return x"]
    first = len(lines) + 1
    lines += [f"reveal_type({expr})" for expr in probes]
    (tmp_path / "reveal.py").write_text("\n".join(lines) + "\n")
    p = mypy("reveal.py", cwd=tmp_path)
    revealed = {int(m.group(1)): m.group(2)
                for m in re.finditer(r'^reveal\.py:(\d+): note: Revealed type is "(.*)"$', p.stdout, re.M)}
    for i, (expr, want) in enumerate(probes.items()):
        assert revealed.get(first + i) == want, f"{expr}: revealed {revealed.get(first + i)!r}\n{_report(p)}"


# ---- stubs compared with the runtime ----------------------------------------------------------

def _stub_tree(module):
    return ast.parse(STUBS[module].read_text())


def _stub_all(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def _stub_classes(tree):
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def _stub_functions(body):
    return {n.name: n for n in body if isinstance(n, ast.FunctionDef)}


def _stub_params(fn):
    """[(name, kind, has_default)] of a stub function without self; kind as inspect's."""
    a = fn.args
    out = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        posonly = i < len(a.posonlyargs) or (arg.arg.startswith("__") and not arg.arg.endswith("__"))
        out.append((arg.arg, "POSITIONAL_ONLY" if posonly else "POSITIONAL_OR_KEYWORD", default is not None))
    if a.vararg is not None:
        out.append((a.vararg.arg, "VAR_POSITIONAL", False))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        out.append((arg.arg, "KEYWORD_ONLY", default is not None))
    if a.kwarg is not None:
        out.append((a.kwarg.arg, "VAR_KEYWORD", False))
    return out


def _runtime_params(func):
    return [(p.name, p.kind.name, p.default is not inspect.Parameter.empty)
            for p in inspect.signature(func).parameters.values()]


def _boost_params(method):
    """[(name or None, has_default)] after self, from a Boost.Python docstring
    ("name( (Cls)self, (object)index [, (object)x=None]) -> ..."); None for an unnamed argN."""
    m = re.search(r"^\w+\((.*)\) ->", method.__doc__ or "", re.M)
    assert m, f"no Boost.Python signature in {method.__qualname__}'s docstring"
    out = []
    for i, part in enumerate(m.group(1).split(",")):
        name = re.sub(r"[\[\]\s]|\(\w+\)", "", part)
        if i == 0:
            continue  # self / arg1
        has_default = "=" in name
        name = name.split("=")[0]
        out.append((None if re.fullmatch(r"arg\d+", name) else name, has_default))
    return out


@pytest.mark.parametrize("module", sorted(STUBS))
def test_stub_all_matches_the_runtime_module(module):
    tree = _stub_tree(module)
    stub_all = _stub_all(tree)
    assert stub_all == list(RUNTIME_MODULES[module].__all__)
    defined = set(_stub_classes(tree)) | set(_stub_functions(tree.body))
    assert not set(stub_all) - defined, f"in __all__ but not defined in the stub: {set(stub_all) - defined}"


def test_custom_op_stub_exports_exactly_api_md_section_1():
    api = {"register_op", "register_op_impl", "get_execute_ctx", "get_compile_ctx", "get_compile_platform_info",
           "get_declare_launch_args_ctx", "get_registered_op_impls", "get_registered_op_impl_dicts",
           "get_registered_op_impl_by_descriptor_key", "clear_registered_op_impls", "EagerOpExecutionContext",
           "OpCompileContext", "CompilePlatformInfo", "AnnotatedArgsContext", "AnnotatedKernelArgs",
           "AnnotatedKernelLaunchInfo", "WorkspaceAddr", "InferMetaContext", "BaseCustomOp", "EagerExecuteOp"}
    assert set(_stub_all(_stub_tree("ge.custom_op"))) == api
    assert set(_stub_all(_stub_tree("ge.runtime"))) == {
        "Tensor", "TensorDesc", "Shape", "StorageShape", "StorageFormat", "ExpandDimsType", "TensorPlacement"}


@pytest.mark.parametrize("module", sorted(STUBS))
def test_stub_classes_declare_exactly_the_runtime_members(module):
    """Every public method/property of each runtime class is in its stub class, and the stub
    invents none (enum classes: their members)."""
    for name, node in _stub_classes(_stub_tree(module)).items():
        if name.startswith("_"):
            continue  # stub-only helper types (e.g. _TensorData)
        cls = getattr(RUNTIME_MODULES[module], name)
        declared = {n.name for n in node.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
        declared |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        declared |= {t.id for n in node.body if isinstance(n, ast.Assign) for t in n.targets}
        if hasattr(cls, "__members__"):  # an enum
            actual = set(cls.__members__)
            assert {n: int(v) for n, v in cls.__members__.items()} == {
                t.id: ast.literal_eval(n.value) for n in node.body if isinstance(n, ast.Assign) for t in n.targets}
        else:
            # dir() holds methods, properties and __slots__; FrozenRecord fields are instance attributes.
            actual = {n for n in list(dir(cls)) + list(getattr(cls, "_fields", ())) if not n.startswith("_")}
        assert declared == actual, (f"{module}.{name}: missing in the stub {sorted(actual - declared)}, "
                                    f"not at run time {sorted(declared - actual)}")
        if "__array_interface__" in dir(cls):
            assert "__array_interface__" in {n.name for n in node.body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("module", sorted(STUBS))
def test_stub_signatures_match_the_runtime(module):
    """Parameter names, kinds and defaults: Python functions through inspect, native methods
    through their Boost.Python docstrings (an unnamed native argument must be positional-only)."""
    tree = _stub_tree(module)
    mod = RUNTIME_MODULES[module]
    checked = 0
    for name, fn in _stub_functions(tree.body).items():
        if name.startswith("_"):
            continue
        assert _stub_params(fn) == _runtime_params(getattr(mod, name)), f"{module}.{name}"
        checked += 1
    for cname, node in _stub_classes(tree).items():
        if cname.startswith("_") or hasattr(getattr(mod, cname), "__members__"):
            continue
        cls = getattr(mod, cname)
        for name, fn in _stub_functions(node.body).items():
            if fn.decorator_list or (name.startswith("__") and name != "__init__"):
                continue  # properties, overloads, dunders
            stub = _stub_params(fn)[1:]  # without self
            if stub and stub[0][0].startswith("__host_"):
                continue  # a class the host only hands out (constructing it is a TypeError)
            attr = getattr(cls, name)
            if inspect.isfunction(attr):
                assert stub == _runtime_params(attr)[1:], f"{module}.{cname}.{name}"
            else:
                native = _boost_params(attr)
                assert len(stub) == len(native), f"{module}.{cname}.{name}: {stub} vs {native}"
                for (s_name, s_kind, s_def), (n_name, n_def) in zip(stub, native):
                    assert s_def == n_def, f"{module}.{cname}.{name}({s_name}): default differs"
                    if n_name is None:
                        assert s_kind == "POSITIONAL_ONLY", f"{module}.{cname}.{name}({s_name}) must be positional-only"
                    else:
                        assert (s_name, s_kind) == (n_name, "POSITIONAL_OR_KEYWORD"), f"{module}.{cname}.{name}"
            checked += 1
    assert checked >= 3, f"{module}: only {checked} signatures compared"


def test_host_only_classes_are_not_constructible_at_runtime_either():
    """The stubs declare __init__(self, __host_only: NoReturn) exactly for the classes that refuse construction."""
    for module in ("ge.runtime", "ge.custom_op"):
        for name, node in _stub_classes(_stub_tree(module)).items():
            init = _stub_functions(node.body).get("__init__")
            if init is None or name.startswith("_"):
                continue
            host_only = [a.arg for a in init.args.args[1:]] == ["__host_only"]
            cls = getattr(RUNTIME_MODULES[module], name)
            if host_only:
                with pytest.raises(TypeError):
                    cls()
            else:
                assert name in {"TensorDesc", "StorageShape", "StorageFormat", "ExpandDimsType",
                                "AnnotatedKernelLaunchInfo"}, name
