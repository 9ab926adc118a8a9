"""ge-run with op packages (share/docs/op-packages.md): C++ op libraries in an
opp root next to a Python plugin folder. The libraries are the test op
libraries of test/oplib (built by CMake), copied into temporary opp roots."""
import numpy as np

from e2e_helpers import f32, make_opp_root, node

IMPL_ONLY = '''
from ge.custom_op import get_execute_ctx, register_op_impl
from ge.runtime import Tensor


@register_op_impl(op_type="{op}")
class Impl:
    def execute(self, x: Tensor, *, {attr}: float) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        src, dst = x.data.cast("B").cast("f"), y.data.cast("B").cast("f")
        for i, v in enumerate(src.tolist()):
            dst[i] = v * {attr}
'''

PROTO_AND_IMPL = '''
from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="{op}")
def proto(x: TensorDesc, *, offset: int = 10) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="{op}")
class Impl:
    def execute(self, x: Tensor, *, offset: int) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        src, dst = x.data.cast("B").cast("f"), y.data.cast("B").cast("f")
        for i, v in enumerate(src.tolist()):
            dst[i] = v + offset
'''


def python_folder(tmp_path, **plugins):
    d = tmp_path / "py"
    d.mkdir(exist_ok=True)
    d.chmod(0o755)
    for name, text in plugins.items():
        (d / f"{name}.py").write_text(text)
        (d / f"{name}.py").chmod(0o644)
    return str(d)


def test_impl_only_plugin_binds_to_the_cpp_prototype(ge_run, write_graph, tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_protos.so", "libge_test_ops.so"])
    py = python_folder(tmp_path, scale_impl=IMPL_ONLY.format(op="ScaleLib", attr="factor"))
    g = write_graph([node("d", "ScaleLib", ["x"]),                       # the C++ prototype's default: 2.0
                     node("h", "ScaleLib", ["x"], {"factor": 0.5}),
                     node("n", "NegCpp", ["x"])],                         # a C++ custom op of the other library
                    ["d:0", "h:0", "n:0"], inputs=[f32("x", [1, 2, 3])])
    res = ge_run(g, "--json", opp_path=[str(root), py])
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("d_0.npy"), np.array([2, 4, 6], np.float32))
    np.testing.assert_array_equal(res.load("h_0.npy"), np.array([0.5, 1, 1.5], np.float32))
    np.testing.assert_array_equal(res.load("n_0.npy"), np.array([-1, -2, -3], np.float32))
    nodes = {n["name"]: n for n in res.json()["nodes"]}
    assert nodes["d"]["python"] and nodes["d"]["source"].endswith("/scale_impl.py")
    assert not nodes["n"]["python"] and nodes["n"]["source"].endswith("/libge_test_ops.so")
    plugins = {p["name"]: p for p in res.json()["plugins"]}
    assert plugins["libge_test_protos.so"]["kind"] == "op_library"
    assert plugins["libge_test_protos.so"]["prototypes"] == ["ScaleLib", "ReplacedLib"]


def test_old_layout_op_proto_is_an_opp_root_too(ge_run, write_graph, tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_ops.so"], layout="op_proto")
    g = write_graph([node("n", "NegCpp", ["x"])], ["n:0"], inputs=[f32("x", [4])])
    res = ge_run(g, opp_path=[str(root)])
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("n_0.npy"), np.array([-4], np.float32))


def test_signature_mismatch_against_the_cpp_prototype_is_a_clear_error(ge_run, write_graph, tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_protos.so"])
    py = python_folder(tmp_path, bad_impl=IMPL_ONLY.format(op="ScaleLib", attr="scale"))
    g = write_graph([node("s", "ScaleLib", ["x"])], ["s:0"], inputs=[f32("x", [1])])
    res = ge_run(g, opp_path=[str(root), py])
    assert res.returncode == 1
    warning = next(line for line in res.stderr.splitlines() if "plugin bad_impl not loaded" in line)
    assert "bad_impl.py" in warning and "op type ScaleLib" in warning
    assert "expected attr name factor at index 0" in warning and "actual attr name scale" in warning


def test_impl_without_any_prototype_names_both_ways_to_give_one(ge_run, write_graph, tmp_path):
    py = python_folder(tmp_path, lonely=IMPL_ONLY.format(op="NoProtoAnywhere", attr="factor"))
    res = ge_run(write_graph([node("s", "NoProtoAnywhere", ["x"])], ["s:0"], inputs=[f32("x", [1])]), opp_path=[py])
    assert res.returncode == 1
    warning = next(line for line in res.stderr.splitlines() if "plugin lonely not loaded" in line)
    assert "canonical IR not found" in warning and "REG_OP" in warning


def test_python_prototype_replaces_the_cpp_prototype_with_a_warning(ge_run, write_graph, tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_protos.so"])
    py = python_folder(tmp_path, replacer=PROTO_AND_IMPL.format(op="ReplacedLib"))
    # The C++ prototype has no attribute; the Python one has `offset`.
    g = write_graph([node("r", "ReplacedLib", ["x"], {"offset": 5})], ["r:0"], inputs=[f32("x", [1, 2])])
    res = ge_run(g, opp_path=[str(root), py])
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("r_0.npy"), np.array([6, 7], np.float32))
    warning = next(line for line in res.stderr.splitlines() if "replaces the C++ prototype" in line)
    assert "'ReplacedLib'" in warning and "replacer.py" in warning and "libge_test_protos.so" in warning


def test_cpp_custom_op_and_python_impl_of_one_op_type_conflict(ge_run, write_graph, tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_ops.so"])
    py = python_folder(tmp_path, neg_py=IMPL_ONLY.format(op="NegCpp", attr="factor").replace(
        "*, factor: float", "").replace("v * factor", "v"))
    g = write_graph([node("n", "NegCpp", ["x"])], ["n:0"], inputs=[f32("x", [3])])
    res = ge_run(g, "--json", opp_path=[str(root), py])
    assert res.returncode == 0, res.stderr
    warning = next(line for line in res.stderr.splitlines() if "plugin neg_py not loaded (conflict)" in line)
    assert "op_type 'NegCpp'" in warning and "neg_py.py" in warning and "libge_test_ops.so" in warning
    # The C++ op (loaded first) is the one that runs.
    assert res.json()["nodes"][0]["source"].endswith("/libge_test_ops.so")
    np.testing.assert_array_equal(res.load("n_0.npy"), np.array([-3], np.float32))


def test_custom_op_may_use_the_prototype_of_another_library(ge_run, write_graph, tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_borrow.so", "libge_test_borrow_proto.so"])
    res = ge_run(write_graph([node("t", "TwiceCpp", ["x"])], ["t:0"], inputs=[f32("x", [1.5])]), opp_path=[str(root)])
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("t_0.npy"), np.array([3], np.float32))


def test_library_load_problems_name_the_library_and_the_rest_loads(ge_run, write_graph, tmp_path):
    root = tmp_path / "root"
    folder = make_opp_root(root, ["libge_test_ops.so", "libge_test_undefined.so", "libge_test_badproto.so",
                                  "libge_test_orphan.so"])
    (folder / "libnot_elf.so").write_text("this is no shared object\n")
    (folder / "libnot_elf.so").chmod(0o644)
    res = ge_run(write_graph([node("n", "NegCpp", ["x"])], ["n:0"], inputs=[f32("x", [2])]), opp_path=[str(root)])
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("n_0.npy"), np.array([-2], np.float32))
    lines = res.stderr.splitlines()

    def warning(lib):
        return next(line for line in lines if f"plugin {lib} not loaded (error)" in line)

    assert str(folder / "libge_test_undefined.so") in warning("libge_test_undefined.so")
    assert "undefined symbol: ge_test_symbol_nobody_defines" in warning("libge_test_undefined.so")
    assert str(folder / "libnot_elf.so") in warning("libnot_elf.so")
    assert "BadProtoLib" in warning("libge_test_badproto.so") and "attribute 'cfg'" in warning("libge_test_badproto.so")
    assert "C++ custom op 'OrphanCpp' has no prototype" in warning("libge_test_orphan.so")


def test_a_node_fed_by_an_op_without_infer_meta_is_not_blamed(ge_run, write_graph, tmp_path):
    # ScaleLib (impl-only Python, C++ prototype without IMPL_OP) has no
    # infer_meta: NegCpp's InferShape is skipped at compile time instead of
    # running on made-up metadata and then blaming NegCpp at execute.
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_protos.so", "libge_test_ops.so"])
    py = python_folder(tmp_path, scale_impl=IMPL_ONLY.format(op="ScaleLib", attr="factor"))
    g = write_graph([node("s", "ScaleLib", ["x"]), node("n", "NegCpp", ["s:0"])],
                    ["n:0"], inputs=[f32("x", [[1, 2], [3, 4]], [2, 2])])
    res = ge_run(g, opp_path=[str(root), py])
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("n_0.npy"), np.array([[-2, -4], [-6, -8]], np.float32))
