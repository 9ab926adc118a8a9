"""Plugins written for earlier GE releases run through ge-run unchanged
(share/docs/plugin-authors.md, "Plugins from earlier GE releases"): one
plugin file per release style (plugins/testing/releases), in every isolation;
a legacy execute bound to a C++ prototype; a legacy execute without any
prototype registers and its node names the missing one; the plain-class
example without annotations loads with a warning in the log.
"""
import numpy as np
import pytest

from e2e_helpers import assert_failed_cleanly, f32, make_opp_root, node

ISOLATIONS = ["subinterpreter", "main", "process"]


@pytest.fixture
def releases(source_dir):
    return str(source_dir / "plugins" / "testing" / "releases")


def chain_graph(write_graph):
    """x, z -> RelBeta1Add -> RelCtxScale -> RelCtxAnnotated -> RelSchemaAxpy(., x) -> RelPlainAdd(., z)."""
    return write_graph(
        [node("a", "RelBeta1Add", ["x", "z"]),
         node("s", "RelCtxScale", ["a:0"]),
         node("t", "RelCtxAnnotated", ["s:0"]),
         node("p", "RelSchemaAxpy", ["t:0", "x"], {"alpha": 0.5}),
         node("q", "RelPlainAdd", ["p:0", "z"])],
        ["a:0", "s:0", "t:0", "p:0", "q:0"],
        inputs=[f32("x", [1, 2, 3]), f32("z", [10, 20, 30])])


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_every_release_style_runs_in_each_isolation(ge_run, write_graph, releases, isolation):
    res = ge_run(chain_graph(write_graph), "--json", "--isolation", isolation, opp_path=[releases])
    assert res.returncode == 0, res.stderr
    x = np.array([1, 2, 3], np.float32)
    z = np.array([10, 20, 30], np.float32)
    a = x + z                      # 9.2.0-beta.1: execute(self, inputs)
    s = 2 * a                      # 9.2.0-beta.2: execute(self, ctx), returns True
    t = s + 10                     # execute(self, context: EagerOpExecutionContext)
    p = 0.5 * t + x                # schema-bound EagerExecuteOp, no '-> None', returns 0
    q = p + z                      # the plain-class example without annotations
    for name, want in (("a", a), ("s", s), ("t", t), ("p", p), ("q", q)):
        np.testing.assert_allclose(res.load(f"{name}_0.npy"), want, err_msg=name)
    plugins = {p["name"]: p for p in res.json()["plugins"]}
    for name in ("rel_beta1_inputs", "rel_beta2_ctx", "rel_beta2_schema", "rel_plain_example", "rel_ctx_noproto",
                 "rel_any_ctx"):
        assert plugins[name]["status"] == "ok" and plugins[name]["isolation"] == isolation, plugins[name]


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_any_class_execute_ctx_gets_the_context_and_reads_attributes(ge_run, write_graph, releases, isolation):
    graph = write_graph([node("p", "RelPlainCtx", ["x"], {"alpha": 4.0}),
                         node("d", "RelPlainCtx", ["x"]),                 # the prototype's default alpha, 2.0
                         node("s", "RelStaticCtx", ["p:0"])],
                        ["p:0", "d:0", "s:0"], inputs=[f32("x", [1, 2, 3])])
    res = ge_run(graph, "--isolation", isolation, opp_path=[releases])
    assert res.returncode == 0, res.stderr
    x = np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(res.load("p_0.npy"), 4 * x)
    np.testing.assert_array_equal(res.load("d_0.npy"), 2 * x)
    np.testing.assert_array_equal(res.load("s_0.npy"), 4 * x - 1)


LEGACY_FIRST = """
from ge.custom_op import EagerExecuteOp, register_op_impl

@register_op_impl(op_type="RelTaken")
class Legacy(EagerExecuteOp):
    def execute(self, ctx):
        pass
"""
FULL_SECOND = """
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

@register_op(op_type="RelTaken")
def proto(x: TensorDesc) -> TensorDesc:
    return x

@register_op_impl(op_type="RelTaken")
class Full:
    def execute(self, x: Tensor) -> None:
        get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
"""


@pytest.mark.parametrize("isolation", ["subinterpreter", "process"])
def test_a_legacy_execute_without_prototype_takes_its_op_type_first_in_path_order(ge_run, write_graph, tmp_path,
                                                                                  isolation):
    opp = tmp_path / "opp"
    opp.mkdir()
    opp.chmod(0o755)
    (opp / "a_legacy.py").write_text(LEGACY_FIRST)
    (opp / "b_full.py").write_text(FULL_SECOND)
    graph = write_graph([node("n", "RelTaken", ["x"])], ["n:0"], inputs=[f32("x", [1])])
    res = ge_run(graph, "--isolation", isolation, opp_path=[str(opp)])
    assert_failed_cleanly(res, "node 'n' (RelTaken)", "plugin 'b_full'", "(conflict)", "b_full.py conflicts with the one from",
                          "a_legacy.py (first in path order wins)")


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_the_unannotated_example_warns_that_the_newest_ge_refuses_it(ge_run, write_graph, releases, isolation):
    graph = write_graph([node("q", "RelPlainAdd", ["x", "x"])], ["q:0"], inputs=[f32("x", [1, 2])])
    res = ge_run(graph, "--isolation", isolation, opp_path=[releases], log_level="warn")
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("q_0.npy"), np.array([2, 4], np.float32))
    lines = [ln for ln in res.stderr.splitlines() if "RelPlainAdd" in ln and "the newest GE refuses it" in ln]
    assert len(lines) == 1, res.stderr
    assert "rel_plain_example.py" in lines[0] and "loads here" in lines[0]
    assert "expected None return annotation, actual missing return annotation" in lines[0]


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_legacy_execute_without_a_prototype_fails_its_node_naming_it(ge_run, write_graph, releases, isolation):
    graph = write_graph([node("n", "RelNoProto", ["x"])], ["n:0"], inputs=[f32("x", [1])])
    res = ge_run(graph, "--isolation", isolation, opp_path=[releases])
    assert_failed_cleanly(res, "node 'n' (RelNoProto)", "plugin 'rel_ctx_noproto'", "rel_ctx_noproto.py",
                          "a prototype (canonical IR) of 'RelNoProto'", "register_op(op_type='RelNoProto')")


LEGACY_ON_CPP_PROTOTYPE = '''
from ge.custom_op import EagerExecuteOp, register_op_impl


@register_op_impl(op_type="ScaleLib")
class LegacyScale(EagerExecuteOp):
    def execute(self, ctx):
        x = ctx.get_input_tensor(0)
        y = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        src, dst = x.data.cast("B").cast("f"), y.data.cast("B").cast("f")
        for i, v in enumerate(src.tolist()):
            dst[i] = 3 * v
        return "ignored"
'''


@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_legacy_execute_binds_to_a_cpp_prototype(ge_run, write_graph, tmp_path, isolation):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_protos.so"])
    py = tmp_path / "py"
    py.mkdir()
    py.chmod(0o755)
    (py / "legacy_scale.py").write_text(LEGACY_ON_CPP_PROTOTYPE)
    graph = write_graph([node("s", "ScaleLib", ["x"])], ["s:0"], inputs=[f32("x", [1, 2])])
    res = ge_run(graph, "--json", "--isolation", isolation, opp_path=[str(root), str(py)])
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("s_0.npy"), np.array([3, 6], np.float32))
    (n,) = res.json()["nodes"]
    assert n["python"] and n["source"].endswith("/legacy_scale.py")


COMPILE_ONLY = """
from ge.custom_op import BaseCustomOp, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc

@register_op(op_type="RelCompileOnly")
def proto(x: TensorDesc) -> TensorDesc:
    return x

@register_op_impl(op_type="RelCompileOnly")
class CompileOnly(BaseCustomOp):
    def compile(self, x: Tensor, y: Tensor) -> None:
        pass
"""


def test_a_compile_only_implementation_fails_its_node_naming_the_plugin_file(ge_run, write_graph, tmp_path):
    opp = tmp_path / "opp"
    opp.mkdir()
    opp.chmod(0o755)
    (opp / "compile_only.py").write_text(COMPILE_ONLY)
    graph = write_graph([node("n", "RelCompileOnly", ["x"])], ["n:0"], inputs=[f32("x", [1])])
    res = ge_run(graph, opp_path=[str(opp)])
    assert_failed_cleanly(res, "node 'n' (RelCompileOnly)", "compile_only.py", "can neither execute nor declare launch args",
                          "needs execute or declare_launch_args")
