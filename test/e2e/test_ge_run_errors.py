"""Every failure: exit 1, ONE error message naming the node and field, no output files."""
import numpy as np
import pytest

from e2e_helpers import assert_failed_cleanly, f32, node


def test_invalid_json(ge_run, write_graph):
    g = write_graph(None, None, raw='{"name": "broken", "nodes": [')
    res = ge_run(g)
    assert_failed_cleanly(res, str(g), "invalid JSON")


def test_unknown_op_type(ge_run, write_graph):
    g = write_graph([node("n0", "NoSuchOpXyz", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    assert_failed_cleanly(ge_run(g), "'n0'", "NoSuchOpXyz", "unknown op_type")


NOTE_FAILED = "ge-run: note: plugin(s) that failed to load (see the warnings above): broken_plugin\n"


def test_unknown_op_type_notes_the_plugins_that_failed_to_load(ge_run, write_graph, tmp_path):
    (tmp_path / "opp").mkdir()
    (tmp_path / "opp" / "broken_plugin.py").write_text("raise RuntimeError('broken on purpose')\n")
    g = write_graph([node("n0", "NoSuchOpXyz", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=("ops", str(tmp_path / "opp")))
    assert_failed_cleanly(res, "'n0'", "unknown op_type")
    assert res.stderr.endswith(NOTE_FAILED), res.stderr
    # Another error is not followed by the note, even when its text says
    # "unknown op_type" (here the node's name): ge-run tests the error's kind.
    g = write_graph([node("unknown op_type", "E2eCopy", ["x", "x"])], ["x"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=("ops", str(tmp_path / "opp")))
    assert_failed_cleanly(res, "unknown op_type", "got 2")
    assert "note:" not in res.stderr, res.stderr


def test_unknown_op_type_without_any_plugin_notes_the_opp_path(ge_run, write_graph):
    g = write_graph([node("n0", "NoSuchOpXyz", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=None)
    assert_failed_cleanly(res, "'n0'", "unknown op_type")
    assert res.stderr.endswith("ge-run: note: no plugin was found: give --opp-path or set ASCEND_CUSTOM_OPP_PATH\n"), res.stderr


def test_wrong_input_count(ge_run, write_graph):
    g = write_graph([node("n0", "E2eCopy", ["x", "x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    assert_failed_cleanly(ge_run(g), "'n0'", "inputs", "got 2", "expects 1")


def test_dtype_mismatch_infer_meta_type_error(ge_run, write_graph):
    g = write_graph([node("n0", "E2eFloatOnly", ["x"])], ["n0:0"],
                    inputs=[{"name": "x", "dtype": "int32", "shape": [2], "data": [1, 2]}])
    res = ge_run(g)
    assert_failed_cleanly(res, "'n0'", "infer_meta", "TypeError", "float32 only")


def test_shape_mismatch_between_execute_and_infer_meta(ge_run, write_graph):
    g = write_graph([node("n0", "E2eBadShape", ["x"])], ["n0:0"], inputs=[f32("x", [1.0, 2.0])])
    assert_failed_cleanly(ge_run(g), "'n0'", "output 0", "shape", "[3]", "[2]")


def test_missing_npy_file(ge_run, write_graph):
    g = write_graph([node("n0", "E2eCopy", ["x"])], ["n0:0"],
                    inputs=[{"name": "x", "dtype": "float32", "shape": [2], "file": "does_not_exist.npy"}])
    assert_failed_cleanly(ge_run(g), "inputs[0]", "'x'", "file", "does_not_exist.npy")


def test_bad_npy_file(ge_run, write_graph, tmp_path):
    (tmp_path / "garbage.npy").write_bytes(b"this is not a numpy file at all\n" * 4)
    g = write_graph([node("n0", "E2eCopy", ["x"])], ["n0:0"],
                    inputs=[{"name": "x", "dtype": "float32", "shape": [2], "file": "garbage.npy"}])
    assert_failed_cleanly(ge_run(g), "inputs[0]", "'x'", "file", "garbage.npy")


def test_npy_shape_differs_from_the_declared_one(ge_run, write_graph, tmp_path):
    np.save(tmp_path / "three.npy", np.zeros(3, np.float32))
    g = write_graph([node("n0", "E2eCopy", ["x"])], ["n0:0"],
                    inputs=[{"name": "x", "dtype": "float32", "shape": [2], "file": "three.npy"}])
    assert_failed_cleanly(ge_run(g), "inputs[0]", "'x'", "three.npy", "[3]", "[2]")


def test_plugin_exception_in_execute(ge_run, write_graph):
    # n0 succeeds first: its output must not be written either.
    g = write_graph([node("n0", "E2eCopy", ["x"]), node("n1", "E2eRaise", ["n0:0"])], ["n0:0", "n1:0"],
                    inputs=[f32("x", [1.0])])
    res = ge_run(g)
    assert_failed_cleanly(res, "'n1'", "E2eRaise", "execute", "ValueError", "e2e deliberate failure 4242")
    assert "Traceback (most recent call last)" in res.stderr
    assert "_fail_deep" in res.stderr           # the innermost frame of the plugin
    assert "e2e_ops" in res.stderr              # the plugin's name


def test_missing_required_attribute(ge_run, write_graph):
    g = write_graph([node("n0", "E2eAttrDump", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    assert_failed_cleanly(ge_run(g), "'n0'", "attrs.i", "missing required attribute")


def test_unknown_attribute(ge_run, write_graph):
    g = write_graph([node("n0", "E2eCopy", ["x"], {"bogus": 1})], ["n0:0"], inputs=[f32("x", [1.0])])
    assert_failed_cleanly(ge_run(g), "'n0'", "attrs.bogus", "unknown attribute")


@pytest.mark.parametrize("name,value", [
    ("i", "seven"),          # VT_INT from a string
    ("i", 1.5),              # VT_INT from a float
    ("b", 1),                # VT_BOOL from an int
    ("f", "0.5"),            # VT_FLOAT from a string
    ("s", 3),                # VT_STRING from an int
    ("dt", "float128"),      # unknown dtype name
    ("li", [1, "x"]),        # a bad list element
    ("lli", [1, 2]),         # VT_LIST_LIST_INT from a flat list
])
def test_wrong_attribute_type(ge_run, write_graph, name, value):
    attrs = {"i": 1, name: value}
    g = write_graph([node("n0", "E2eAttrDump", ["x"], attrs)], ["n0:0"], inputs=[f32("x", [1.0])])
    assert_failed_cleanly(ge_run(g), "'n0'", f"attrs.{name}")


def test_cycle(ge_run, write_graph):
    g = write_graph([node("a", "E2eCopy", ["b:0"]), node("b", "E2eCopy", ["a:0"])], ["b:0"],
                    inputs=[f32("x", [1.0])])
    res = ge_run(g)
    assert_failed_cleanly(res, "cycle")
    line = next(x for x in res.stderr.splitlines() if "error:" in x)
    assert "'a'" in line or "'b'" in line


def test_reference_to_unknown_node(ge_run, write_graph):
    g = write_graph([node("n0", "E2eCopy", ["nope:0"])], ["n0:0"], inputs=[f32("x", [1.0])])
    assert_failed_cleanly(ge_run(g), "'n0'", "inputs[0]", "nope")


def test_reference_to_unknown_graph_input(ge_run, write_graph):
    g = write_graph([node("n0", "E2eCopy", ["zzz"])], ["n0:0"], inputs=[f32("x", [1.0])])
    assert_failed_cleanly(ge_run(g), "'n0'", "inputs[0]", "zzz")


def test_reference_to_unknown_output_index(ge_run, write_graph):
    g = write_graph([node("n0", "E2eCopy", ["x"]), node("n1", "E2eCopy", ["n0:5"])], ["n1:0"],
                    inputs=[f32("x", [1.0])])
    assert_failed_cleanly(ge_run(g), "'n1'", "inputs[0]", "n0:5")


def test_graph_output_with_unknown_index(ge_run, write_graph):
    g = write_graph([node("n0", "E2eCopy", ["x"])], ["n0:3"], inputs=[f32("x", [1.0])])
    assert_failed_cleanly(ge_run(g), "outputs", "n0:3")


def test_failed_run_keeps_an_existing_output_dir_untouched(ge_run, write_graph, tmp_path):
    out = tmp_path / "existing"
    out.mkdir()
    g = write_graph([node("n0", "E2eRaise", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, output_dir=out)
    assert_failed_cleanly(res, "'n0'")
    assert list(out.iterdir()) == []


NO_OUTPUT_PLUGIN = '''from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="E2eForgetsOutput")
def proto(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="E2eForgetsOutput")
class Impl:
    def execute(self, x: Tensor) -> None:
        pass  # never allocates its output
'''


def test_execute_that_allocates_no_output_names_the_node_op_and_plugin(ge_run, write_graph, tmp_path):
    (tmp_path / "opp").mkdir()
    plugin = tmp_path / "opp" / "forgets_output.py"
    plugin.write_text(NO_OUTPUT_PLUGIN)
    g = write_graph([node("n0", "E2eForgetsOutput", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(str(tmp_path / "opp"),))
    assert_failed_cleanly(res, "'n0'", "E2eForgetsOutput", "execute did not allocate output 0", str(plugin))


# A prototype and its implementation split over two plugins (GE imports every
# custom-op file into one interpreter; here each plugin has its own registry):
# share/docs/plugin-authors.md, "One plugin, one registry".
def _split_half(which, op_type="E2eSplitHalves"):
    """The source of plugins/testing/split/split_<which>.py for `op_type`."""
    import os
    from pathlib import Path
    text = (Path(os.environ.get("GE_SOURCE_DIR", Path(__file__).resolve().parents[2])) / "plugins" / "testing" /
            "split" / f"split_{which}.py").read_text()
    return text.replace("SplitHalves", op_type)


SPLIT_PROTO = _split_half("proto")
SPLIT_IMPL = _split_half("impl")


def _write_plugin(folder, name, text, package=False, isolation=None):
    """A single-file plugin, or a package (with a pyproject.toml naming its isolation)."""
    if not package:
        path = folder / f"{name}.py"
        path.write_text(text)
        return path
    path = folder / name
    path.mkdir()
    (path / "__init__.py").write_text(text)
    if isolation:
        (path / "pyproject.toml").write_text(f'[tool.ge-plugin]\nisolation = "{isolation}"\n')
    return path


@pytest.mark.parametrize("proto_name, impl_name", [("a_proto", "z_impl"), ("z_proto", "a_impl")])
def test_split_prototype_and_implementation_name_the_other_plugin(ge_run, write_graph, tmp_path, proto_name,
                                                                   impl_name):
    opp = tmp_path / "opp"
    opp.mkdir()
    proto = _write_plugin(opp, proto_name, SPLIT_PROTO)
    impl = _write_plugin(opp, impl_name, SPLIT_IMPL)
    g = write_graph([node("n0", "E2eSplitHalves", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(str(opp),))
    # The node: the plugin that implements its op_type was not loaded, because
    # the prototype (named with its plugin and file) is in another plugin.
    assert_failed_cleanly(res, "'n0'", "unknown op_type 'E2eSplitHalves'",
                          f"plugin '{impl_name}' ({impl}), which implements it, was not loaded",
                          f"registered by plugin '{proto_name}' ({proto}), another plugin", "must be in the same plugin")
    # The implementation's plugin: its load failure names where the prototype is, whatever the order.
    warning = next(line for line in res.stderr.splitlines() if f"plugin {impl_name} not loaded" in line)
    assert "canonical IR not found" in warning and str(impl) in warning, warning
    assert f"registered by plugin '{proto_name}' ({proto}), another plugin" in warning, warning


@pytest.mark.parametrize("package, isolation", [(False, None), (True, None), (True, "main"), (True, "process")])
def test_prototype_only_package_is_named_in_unknown_op_type(ge_run, write_graph, tmp_path, package, isolation):
    opp = tmp_path / "opp"
    opp.mkdir()
    proto = _write_plugin(opp, "protos_only", SPLIT_PROTO, package=package, isolation=isolation)
    g = write_graph([node("n0", "E2eSplitHalves", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(str(opp),))
    assert_failed_cleanly(res, "'n0'", "unknown op_type 'E2eSplitHalves'", f"plugin 'protos_only' ({proto})",
                          "registers its prototype (register_op)")
    assert "warning" not in res.stderr, res.stderr  # a plugin of prototypes alone loads


def test_prototype_with_an_implementation_elsewhere_in_the_same_plugin_runs(ge_run, write_graph, tmp_path):
    # The sibling that must keep working: both halves in one package, in two modules.
    opp = tmp_path / "opp"
    pkg = opp / "halves"
    pkg.mkdir(parents=True)
    (pkg / "protos.py").write_text(SPLIT_PROTO)
    (pkg / "impls.py").write_text(SPLIT_IMPL.replace("pass", "x_out = self  # no output allocated on purpose"))
    (pkg / "__init__.py").write_text("from . import protos, impls\n")
    g = write_graph([node("n0", "E2eSplitHalves", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(str(opp),))
    # It resolves and runs: the failure is the execute's own (no output), not an unknown op_type.
    assert_failed_cleanly(res, "'n0'", "execute did not allocate output 0")
    assert "unknown op_type" not in res.stderr


BAD_SIGNATURE = SPLIT_PROTO + SPLIT_IMPL.split("\n", 1)[1].replace("x: Tensor)", "x: Tensor, y: Tensor)")
CONFLICTING = (SPLIT_PROTO + SPLIT_IMPL.split("\n", 1)[1]).replace("E2eSplitHalves", "{op}")


def test_a_node_whose_implementing_plugin_was_not_loaded_names_it(ge_run, write_graph, tmp_path):
    # The kind: the plugin that implements the op_type failed (a signature
    # that does not match), or lost a conflict over another of its op_types.
    opp = tmp_path / "opp"
    opp.mkdir()
    bad = _write_plugin(opp, "badsig", BAD_SIGNATURE)
    g = write_graph([node("n0", "E2eSplitHalves", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(str(opp),))
    assert_failed_cleanly(res, "'n0'", "unknown op_type 'E2eSplitHalves'",
                          f"plugin 'badsig' ({bad}), which implements it, was not loaded (error)",
                          "invalid execute signature")
    assert "registered op_types" not in res.stderr  # the note replaces the list of other op_types
    # A conflict over another op_type: the first plugin takes E2eOther, the
    # second (which also implements E2eConflictLoser) is not loaded.
    opp2 = tmp_path / "opp2"
    opp2.mkdir()
    _write_plugin(opp2, "a_first", CONFLICTING.format(op="E2eOther"))
    loser = _write_plugin(opp2, "b_second", CONFLICTING.format(op="E2eOther") +
                          CONFLICTING.format(op="E2eConflictLoser").replace("def proto", "def proto2")
                          .replace("class Impl", "class Impl2"))
    g = write_graph([node("n0", "E2eConflictLoser", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(str(opp2),))
    assert_failed_cleanly(res, "'n0'", f"plugin 'b_second' ({loser}), which implements it, was not loaded (conflict)",
                          "E2eOther")


WRONG_OUTPUT = '''from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="E2eWrongOutput")
def proto(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="E2eWrongOutput")
class Impl:
    def execute(self, x: Tensor) -> None:
        get_execute_ctx().malloc_output_tensor(0, {shape}, {dtype})
'''


@pytest.mark.parametrize("shape, dtype, fragment", [
    ("[3]", "DataType.DT_DOUBLE", "output 0 has dtype float64, infer_meta said float32"),
    ("[4]", "DataType.DT_FLOAT", "output 0 has shape [4], infer_meta said [3]"),
])
def test_an_output_unlike_infer_meta_names_the_node_op_and_plugin(ge_run, write_graph, tmp_path, shape, dtype,
                                                                  fragment):
    (tmp_path / "opp").mkdir()
    plugin = tmp_path / "opp" / "wrong_output.py"
    plugin.write_text(WRONG_OUTPUT.format(shape=shape, dtype=dtype))
    g = write_graph([node("n0", "E2eWrongOutput", ["x"])], ["n0:0"], inputs=[f32("x", [1.0, 2.0, 3.0])])
    res = ge_run(g, opp_path=(str(tmp_path / "opp"),))
    assert_failed_cleanly(res, "'n0'", "E2eWrongOutput", fragment, str(plugin))


def test_a_missing_opp_path_entry_is_not_called_a_plugin(ge_run, write_graph, tmp_path):
    g = write_graph([node("n0", "NoSuchOpXyz", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    typo = tmp_path / "op"  # meant: opp
    res = ge_run(g, opp_path=("ops", str(typo)))
    assert_failed_cleanly(res, "'n0'", "unknown op_type")
    assert f"ge-run: warning: opp path entry {typo} does not exist\n" in res.stderr, res.stderr
    assert "plugin op not loaded" not in res.stderr and "failed to load" not in res.stderr, res.stderr


def test_a_plugin_name_that_fails_twice_is_noted_once(ge_run, write_graph, tmp_path):
    # Two opp folders each with a broken plugin of one name: the second is a
    # name conflict, the note lists the name once.
    for folder in ("m1", "m2"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "twice.py").write_text("raise RuntimeError('broken on purpose')\n")
    g = write_graph([node("n0", "NoSuchOpXyz", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(str(tmp_path / "m1"), str(tmp_path / "m2")))
    assert_failed_cleanly(res, "'n0'", "unknown op_type")
    assert res.stderr.count("plugin twice not loaded") == 2, res.stderr
    assert res.stderr.endswith("ge-run: note: plugin(s) that failed to load (see the warnings above): twice\n"), res.stderr


def _other_ge_package(tmp_path, monkeypatch):
    """A copy of the ge package under test, put on GE_PLUGIN_PYTHON_DIR for
    ge-run; returns the path of its _entry.py to edit."""
    import os
    import shutil
    here = os.environ.get("GE_PLUGIN_PYTHON_DIR")
    if not here:
        pytest.skip("GE_PLUGIN_PYTHON_DIR is not set (CTest sets it)")
    other = tmp_path / "other-python"
    shutil.copytree(here, other, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("GE_PLUGIN_PYTHON_DIR", str(other))
    return other / "ge" / "_entry.py"


def test_a_ge_package_of_another_load_contract_is_named_with_both_versions(ge_run, write_graph, tmp_path, monkeypatch):
    """The host checks ge._entry's LOAD_CONTRACT_VERSION before calling it
    (share/docs/host-design.md, "The load contract"): a package from another
    build fails each plugin's load with one error naming both versions."""
    import re
    entry = _other_ge_package(tmp_path, monkeypatch)
    text = entry.read_text()
    ours = int(re.search(r"^LOAD_CONTRACT_VERSION = (\d+)$", text, re.M).group(1))
    entry.write_text(text.replace(f"LOAD_CONTRACT_VERSION = {ours}\n", f"LOAD_CONTRACT_VERSION = {ours + 1}\n"))
    g = write_graph([node("n0", "E2eCopy", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, "--log-level", "info", opp_path=("ops",))
    assert res.returncode == 1, res.stderr
    assert f"is version {ours + 1}, this host reads version {ours}" in res.stderr, res.stderr
    assert str(entry) in res.stderr, res.stderr
    # A value of another type, or one no C long holds, is described, never a second error.
    for value, said in [('"2"', "'2'"), ("2**40", str(2**40)), ("10**30", str(10**30)), ("True", "True"),
                        ('"2\\x00tail"', "'2\\x00tail'")]:
        entry.write_text(text.replace(f"LOAD_CONTRACT_VERSION = {ours}\n", f"LOAD_CONTRACT_VERSION = {value}\n"))
        res = ge_run(g, "--log-level", "info", opp_path=("ops",))
        assert res.returncode == 1, res.stderr
        assert f"is version {said}, this host reads version {ours}: " in res.stderr, (value, res.stderr)
    entry.write_text(text.replace(f"LOAD_CONTRACT_VERSION = {ours}\n",
                                  "class _V:\n    def __repr__(self): raise RuntimeError('repr boom')\n"
                                  "LOAD_CONTRACT_VERSION = _V()\n"))
    res = ge_run(g, "--log-level", "info", opp_path=("ops",))
    assert res.returncode == 1 and f"is version an object without a repr, this host reads version {ours}" in res.stderr, \
        res.stderr
    # Without the constant at all: "version none".
    entry.write_text(text.replace(f"LOAD_CONTRACT_VERSION = {ours}\n", ""))
    res = ge_run(g, "--log-level", "info", opp_path=("ops",))
    assert res.returncode == 1 and f"is version none, this host reads version {ours}" in res.stderr, res.stderr


@pytest.mark.parametrize("length", [300, 4 << 20])
def test_a_huge_unknown_op_type_is_reported_without_a_suggestion_search(ge_run, write_graph, length):
    """No edit distance beyond 256 characters: the registered op_types are
    listed instead (a 4 MiB op_type once took seconds to report)."""
    g = write_graph([node("n0", "E2eCop" + "y" * length, ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g)
    assert_failed_cleanly(res, "'n0'", "unknown op_type")
    assert "did you mean" not in res.stderr and "registered op_types" in res.stderr, res.stderr[:2000]


def test_a_typo_in_an_op_type_still_gets_its_suggestion(ge_run, write_graph):
    g = write_graph([node("n0", "E2eCpy", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    assert_failed_cleanly(ge_run(g), "'n0'", "unknown op_type", "did you mean 'E2eCopy'")


def test_an_entry_that_returns_another_shape_is_named_not_misread(ge_run, write_graph, tmp_path, monkeypatch):
    """A ge._entry whose collect returns a dict (the old contract) under the
    right version number: each plugin fails to load, naming the function."""
    entry = _other_ge_package(tmp_path, monkeypatch)
    text = entry.read_text()
    assert "    return CollectedPlugin(impls=out, protos=sorted(irs))\n" in text
    entry.write_text(text.replace("    return CollectedPlugin(impls=out, protos=sorted(irs))\n",
                                  '    return {"impls": out, "protos": sorted(irs)}\n'))
    g = write_graph([node("n0", "E2eCopy", ["x"])], ["n0:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, "--log-level", "info", opp_path=("ops",))
    assert res.returncode == 1, res.stderr
    assert "ge._entry.collect returned dict, not the load contract's object" in res.stderr, res.stderr
