"""Borrowed-object lifetime inside the host (share/docs/plugin-authors.md, "Tensors and lifetimes"), through ge-run.

The test plugins under plugins/testing/e2e/ check a behaviour inside execute
and write one float32 verdict per check into their output (1.0 = as
specified); the check names are read from the plugin source.
"""
import os

import pytest

from e2e_helpers import assert_verdicts, f32, node, plugin_checks


@pytest.fixture(scope="module")
def lifetime_src(source_dir):
    return os.path.join(source_dir, "plugins", "testing", "e2e", "lifetime", "e2e_lifetime.py")


@pytest.mark.parametrize("repeat", ["1", "3"])
def test_kept_borrowed_objects_expire_after_execute(ge_run, write_graph, lifetime_src, repeat):
    """A Tensor, its shape views, the context, a Tensor.data memoryview and a copied
    contextvars context kept by one node's execute are touched by a later node."""
    g = write_graph([node("stash", "E2eStash", ["x"]), node("probe", "E2eProbe", ["stash:0"])],
                    ["stash:0", "probe:0"], inputs=[f32("x", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [2, 3])])
    res = ge_run(g, "--repeat", repeat, opp_path=("lifetime",))
    assert res.returncode == 0, res.stderr
    assert_verdicts(res.load("stash_0.npy"), plugin_checks(lifetime_src, "CHECKS_STASH"))
    assert_verdicts(res.load("probe_0.npy"), plugin_checks(lifetime_src, "CHECKS_PROBE"))


def test_make_output_ref_input_aliases_the_input(ge_run, write_graph, lifetime_src):
    g = write_graph([node("ref", "E2eRefInput", ["x"])], ["ref:0"], inputs=[f32("x", [0.0] * 5)])
    res = ge_run(g, "--repeat", "2", opp_path=("lifetime",))
    assert res.returncode == 0, res.stderr
    assert_verdicts(res.load("ref_0.npy"), plugin_checks(lifetime_src, "CHECKS_REF"))


def test_malloc_workspace(ge_run, write_graph, lifetime_src):
    # --repeat 2: the second run also checks the workspace kept by the first one.
    g = write_graph([node("ws", "E2eWorkspace", ["x"])], ["ws:0"], inputs=[f32("x", [0.0])])
    res = ge_run(g, "--repeat", "2", opp_path=("lifetime",))
    assert res.returncode == 0, res.stderr
    assert_verdicts(res.load("ws_0.npy"), plugin_checks(lifetime_src, "CHECKS_WS"))


def test_numpy_asarray_is_zero_copy_in_a_main_isolation_plugin(ge_run, write_graph, source_dir):
    src = os.path.join(source_dir, "plugins", "testing", "e2e", "numpy_main", "e2e_numpy_main", "__init__.py")
    g = write_graph([node("np", "E2eNumpyZeroCopy", ["x"])], ["np:0"],
                    inputs=[f32("x", [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [3, 2])])
    res = ge_run(g, "--json", opp_path=("numpy_main",))
    assert res.returncode == 0, res.stderr
    assert_verdicts(res.load("np_0.npy"), plugin_checks(src, "CHECKS"))
    plugins = {p["name"]: p for p in res.json()["plugins"]}
    assert plugins["e2e_numpy_main"]["isolation"] == "main"


def test_lifetime_and_numpy_plugins_together_with_samples(ge_run, write_graph, lifetime_src):
    """Sub-interpreter and main-interpreter plugins side by side in one host."""
    g = write_graph([node("stash", "E2eStash", ["x"]), node("probe", "E2eProbe", ["stash:0"]),
                     node("np", "E2eNumpyZeroCopy", ["x"]), node("g", "GeluCustom", ["x"])],
                    ["probe:0", "np:0", "g:0"], inputs=[f32("x", [1.0, 2.0])])
    res = ge_run(g, opp_path=("numpy_main", "lifetime", "samples"))
    assert res.returncode == 0, res.stderr
    assert_verdicts(res.load("probe_0.npy"), plugin_checks(lifetime_src, "CHECKS_PROBE"))
