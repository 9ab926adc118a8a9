"""ge-run and ge-plugin-ls agree on op packages' problem cases
(share/docs/op-packages.md): a library exiting while loaded, unusable
registrations, a Python prototype of a C++ custom op, conflicts, hard links.
The libraries are the test op libraries of test/oplib."""
import json
import os
import subprocess

from registry_helpers import make_opp_root, run_ls
from test_one_discovery import GE_RUN, agree, ge_run, ls, write

IMPL_ONLY = '''from ge.custom_op import register_op_impl
from ge.runtime import Tensor


@register_op_impl(op_type="{op}")
class Impl:
    def execute(self, x: Tensor) -> None:
        pass
'''

PROTO_ONLY_AND_OTHER = '''from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="{op}")
def proto(x: TensorDesc, *, offset: int = 1) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op(op_type="PyOwnOp")
def own(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="PyOwnOp")
class Own:
    def execute(self, x: Tensor) -> None:
        pass
'''


def both(tmp_path, *opp):
    listed = ls(*opp)
    rc, ran, _, err = ge_run(tmp_path, *opp)
    assert rc == 0, err
    return listed, ran, err


def test_a_library_calling_exit_while_loading_is_reported_and_never_a_success(tmp_path):
    for lib, code in (("libge_test_exit0.so", 0), ("libge_test_exit3.so", 3)):
        root = tmp_path / lib
        folder = make_opp_root(root, [lib])
        g = tmp_path / "g.json"
        g.write_text(json.dumps({"inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1.0]}],
                                 "nodes": [{"name": "n", "op_type": "ReluCpp", "inputs": ["x"]}],
                                 "outputs": ["n:0"]}))
        path = os.path.join(folder, lib)
        said = f"op library {path} called exit({code}) while loading"
        # Loaded alone first (share/docs/op-packages.md, "One verdict per
        # library"): the library is "exited", as in the listing, and the run
        # of a graph that does not need it goes on.
        p = subprocess.run([GE_RUN, str(g), "--output-dir", str(tmp_path / "out"), "--opp-path", str(root)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, (lib, p.stderr)
        assert f"ge-run: warning: plugin {lib} not loaded (exited): {said}" in p.stderr, p.stderr
        listed = ls(root)[lib]
        assert listed["status"] == "exited" and listed["error"] == said, listed
        # Loaded in the engine's own process (no probe to be found), its exit
        # ends the run, reported and never with code 0.
        p = subprocess.run([GE_RUN, str(g), "--output-dir", str(tmp_path / "out"), "--opp-path", str(root)],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "GE_PLUGIN_WORKER": str(tmp_path / "no-such-worker")})
        assert p.returncode != 0, (lib, p.stderr)
        assert f"ge-run: error: {said}" in p.stderr, p.stderr


def test_a_python_prototype_of_a_cpp_custom_op_is_not_used_and_both_say_so(opp, tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_ops.so"])
    write(opp / "proto_neg.py", PROTO_ONLY_AND_OTHER.format(op="NegCpp"))
    listed, ran, err = both(tmp_path, root, opp)
    agree(listed, ran, "proto_neg")
    assert ran["proto_neg"]["status"] == "ok"
    line = next(x for x in err.splitlines() if "Python prototype of op_type 'NegCpp'" in x)
    assert "is not used: op library" in line and "libge_test_ops.so" in line and "replaces" not in line
    # --check of an opp root holding both says the same.
    write(root / "proto_neg.py", PROTO_ONLY_AND_OTHER.format(op="NegCpp"))
    check = run_ls("--check", str(root)).stdout
    assert "is not used: op library" in check and "replaces the C++ prototype" not in check, check
    # --check of the plugin alone, the library installed: the installed
    # library's custom op decides it the same way (the one resolver).
    alone = run_ls("--opp-path", f"{root}:{opp}", "--check", str(opp / "proto_neg.py")).stdout
    assert "is not used: op library" in alone and "replaces the C++ prototype" not in alone, alone


def test_a_python_impl_of_a_cpp_custom_op_states_the_true_rule_and_lists_its_ops(opp, tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_ops.so"])
    write(opp / "neg_py.py", IMPL_ONLY.format(op="NegCpp"))
    listed, ran, _ = both(tmp_path, root, opp)
    r = agree(listed, ran, "neg_py")
    assert r["status"] == "conflict"
    assert "op libraries load before Python plugins" in r["error"] and "first in path order" not in r["error"]
    # The ops it would have registered, in both (ge-run names op_types only).
    assert ran["neg_py"]["ops"] == [op["op_type"] for op in listed["neg_py"]["ops"]] == ["NegCpp"]
    check = run_ls("--check", str(root), str(opp / "neg_py.py"))
    assert "first plugin in path order wins" not in check.stdout


def test_a_failed_library_lists_no_prototype_and_reports_every_bad_registration(opp, tmp_path):
    root = tmp_path / "root"
    folder = make_opp_root(root, ["libge_test_multibad.so", "libge_test_throwing.so"])
    listed, ran, _ = both(tmp_path, root)
    for lib in ("libge_test_multibad.so", "libge_test_throwing.so"):
        r = agree(listed, ran, lib)
        assert r["status"] == "error" and ran[lib]["prototypes"] == listed[lib]["prototypes"] == []
    bad = listed["libge_test_multibad.so"]["error"]
    assert "'BadA'" in bad and "cfg_a" in bad and "'BadB'" in bad and "cfg_b" in bad
    threw = listed["libge_test_throwing.so"]["error"]
    assert "no ThrowA today" in threw and "no ThrowB today" in threw
    table = run_ls("--no-daemon", "--opp-path", str(root), "--cache", str(tmp_path / "t.json")).stdout
    assert "GoodA (prototype)" not in table
    check = run_ls("--check", os.path.join(folder, "libge_test_multibad.so"))
    assert "GoodA" not in check.stdout


def test_a_class_registered_twice_is_an_error_not_a_self_conflict(tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_dup.so"])
    listed, ran, _ = both(tmp_path, root)
    r = agree(listed, ran, "libge_test_dup.so")
    assert r["status"] == "error" and "registers op_type 'DupOp' twice" in r["error"]
    assert "conflicts with" not in r["error"]


def test_an_impl_whose_prototype_library_failed_says_so(opp, tmp_path):
    root = tmp_path / "root"
    folder = make_opp_root(root, ["libge_test_multibad.so"])
    write(opp / "good_a.py", IMPL_ONLY.format(op="GoodA"))
    listed, ran, _ = both(tmp_path, root, opp)
    r = agree(listed, ran, "good_a")
    assert r["status"] == "error"
    assert f"op library {os.path.join(folder, 'libge_test_multibad.so')}, which prototypes it, failed to load" in r["error"]
    assert "'BadA'" in r["error"]


def test_a_hard_link_to_a_library_is_the_same_file(tmp_path):
    root = tmp_path / "root"
    folder = make_opp_root(root, ["libge_test_ops.so"])
    os.link(os.path.join(folder, "libge_test_ops.so"), os.path.join(folder, "libge_test_ops_hard.so"))
    listed, ran, _ = both(tmp_path, root)
    assert agree(listed, ran, "libge_test_ops.so")["status"] == "ok"
    r = agree(listed, ran, "libge_test_ops_hard.so")
    assert r["status"] == "conflict" and "is the same file as" in r["error"], r


def test_a_python_plugin_calling_exit_while_imported_is_reported(opp, tmp_path):
    write(opp / "quitter.py", "import ctypes\nctypes.CDLL(None).exit(0)\n")
    g = tmp_path / "g.json"
    g.write_text(json.dumps({"inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1.0]}],
                             "nodes": [{"name": "n", "op_type": "ReluCpp", "inputs": ["x"]}], "outputs": ["n:0"]}))
    p = subprocess.run([GE_RUN, str(g), "--output-dir", str(tmp_path / "out"), "--opp-path", str(opp)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0, p.stderr
    assert f"ge-run: error: plugin 'quitter' ({opp / 'quitter.py'}) called exit(0) while loading" in p.stderr, p.stderr
    assert ls(opp)["quitter"]["status"] == "exited"


def test_a_conflicting_library_lists_the_ops_it_would_have_registered_in_both(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    make_opp_root(first, ["libge_test_ops.so"])
    make_opp_root(second, ["libge_test_ops.so"])
    rc, _, _, err = ge_run(tmp_path, first, second)  # writes g.json
    assert rc == 0, err
    # Both are named libge_test_ops.so: compared as listed, in path order.
    lp = json.loads(run_ls("--no-daemon", "--json", "--opp-path", f"{first}:{second}",
                           "--cache", str(tmp_path / "c.json")).stdout)["plugins"]
    rp = json.loads(subprocess.run([GE_RUN, str(tmp_path / "g.json"), "--json", "--output-dir", str(tmp_path / "o2"),
                                    "--opp-path", f"{first}:{second}"], capture_output=True, text=True).stdout)["plugins"]
    lc = next(p for p in lp if p["status"] == "conflict")
    rc_ = next(p for p in rp if p["status"] == "conflict")
    assert lc["path"] == rc_["path"] and lc["error"] == rc_["error"]
    assert rc_["ops"] == [op["op_type"] for op in lc["ops"]] == ["NegCpp"]
    assert "the first op library in path order wins" in lc["error"]
