"""One truth for op libraries (share/docs/op-packages.md, "Dependencies
between op libraries" and "One verdict per library"): each registration
belongs to the library whose code made it, whichever library's dlopen ran it
and in which order, and a library's status and reason are what it gets loaded
alone, in ge-run as in ge-plugin-ls. The libraries are the test op libraries
of test/oplib."""
import os
import shutil
import subprocess

import pytest

from registry_helpers import BIN, make_opp_root, run_ls
from test_one_discovery import agree, ge_run, ls


def both(tmp_path, *opp, op_type="ReluCpp"):
    """The listing's and ge-run's summaries ({name: summary}) of the opp path."""
    listed = ls(*opp)
    rc, ran, value, err = ge_run(tmp_path, *opp, op_type=op_type)
    assert rc == 0, err
    return listed, ran, value, err


def same_library(listed, ran, name):
    """Status, reason, prototypes and ops of op library `name` agree."""
    agree(listed, ran, name)
    assert listed[name]["prototypes"] == ran[name]["prototypes"], (listed[name], ran[name])
    assert op_types(listed[name]) == op_types(ran[name]), (listed[name], ran[name])
    return listed[name]


def op_types(summary):
    """The op_types of a summary's ops (the listing gives objects, ge-run --json op_types)."""
    return [op if isinstance(op, str) else op["op_type"] for op in summary["ops"]]


def test_a_dependencys_prototypes_are_its_own_whichever_loads_first(tmp_path):
    # dep_ops sorts first and links dep_proto: its dlopen runs dep_proto's
    # static initializers, yet the prototypes are dep_proto's.
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_dep_ops.so", "libge_test_dep_proto.so"])
    listed, ran, _, _ = both(tmp_path, root)
    ops = same_library(listed, ran, "libge_test_dep_ops.so")
    proto = same_library(listed, ran, "libge_test_dep_proto.so")
    assert ops["status"] == "ok" and ops["prototypes"] == [] and op_types(ops) == ["DepTwice"], ops
    assert proto["status"] == "ok" and proto["prototypes"] == ["DepTwice", "DepOnly"] and proto["ops"] == [], proto
    assert ops["ops"][0]["prototype_library"].endswith("/libge_test_dep_proto.so"), ops
    rc, _, value, err = ge_run(tmp_path, root, op_type="DepTwice")
    assert rc == 0 and value == [2.0, -2.0], err


def test_a_library_needed_by_two_others_keeps_its_prototypes(tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_dep_ops.so", "libge_test_dep_ops2.so", "libge_test_dep_proto.so"])
    listed, ran, _, _ = both(tmp_path, root)
    for name, op in (("libge_test_dep_ops.so", "DepTwice"), ("libge_test_dep_ops2.so", "DepOnly")):
        s = same_library(listed, ran, name)
        assert s["status"] == "ok" and s["prototypes"] == [] and op_types(s) == [op], s
    assert same_library(listed, ran, "libge_test_dep_proto.so")["prototypes"] == ["DepTwice", "DepOnly"]
    rc, _, value, err = ge_run(tmp_path, root, op_type="DepOnly")
    assert rc == 0 and value == [1.0, -1.0], err


def test_a_chain_of_three_gives_each_library_its_own(tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_chain_a.so", "libge_test_chain_b.so", "libge_test_chain_c.so"])
    listed, ran, _, _ = both(tmp_path, root)
    a = same_library(listed, ran, "libge_test_chain_a.so")
    b = same_library(listed, ran, "libge_test_chain_b.so")
    c = same_library(listed, ran, "libge_test_chain_c.so")
    assert a["prototypes"] == [] and op_types(a) == ["ChainTop"], a
    assert b["prototypes"] == ["ChainTop"] and b["ops"] == [], b
    assert c["prototypes"] == ["ChainBase"] and c["ops"] == [], c
    rc, _, value, err = ge_run(tmp_path, root, op_type="ChainTop")
    assert rc == 0 and value == [2.0, -2.0], err


def test_an_implementation_binds_to_a_dependencys_prototype_when_its_dependant_fails(tmp_path):
    # The library linking the prototypes fails (a custom op without a
    # prototype); the prototype library stays ok and serves a Python
    # implementation of its prototype, in the engine as in the listing.
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_dep_bad.so", "libge_test_dep_proto.so"])
    py = tmp_path / "py"
    py.mkdir()
    (py / "deponly_impl.py").write_text(
        "from ge.custom_op import get_execute_ctx, register_op_impl\n"
        "from ge.runtime import Tensor\n\n"
        "@register_op_impl(op_type='DepOnly')\n"
        "class Impl:\n"
        "    def execute(self, x: Tensor) -> None:\n"
        "        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)\n"
        "        src, dst = x.data.cast('B').cast('f'), y.data.cast('B').cast('f')\n"
        "        for i in range(len(dst)):\n"
        "            dst[i] = src[i] + 10\n")
    listed, ran, _, _ = both(tmp_path, root, py)
    bad = same_library(listed, ran, "libge_test_dep_bad.so")
    assert bad["status"] == "error" and "DepBadOrphan" in bad["error"] and bad["prototypes"] == [], bad
    assert same_library(listed, ran, "libge_test_dep_proto.so")["status"] == "ok"
    assert agree(listed, ran, "deponly_impl")["status"] == "ok"
    rc, _, value, err = ge_run(tmp_path, root, py, op_type="DepOnly")
    assert rc == 0 and value == [11.0, 9.0], err


def test_a_dependency_outside_the_opp_path_is_named_for_its_prototype(tmp_path, monkeypatch):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_dep_ops.so"])
    outside = tmp_path / "vendor"
    outside.mkdir()
    shutil.copy(os.path.join(BIN, "..", "test-oplib", "libge_test_dep_proto.so"), outside)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(outside))
    listed, ran, _, _ = both(tmp_path, root)
    s = same_library(listed, ran, "libge_test_dep_ops.so")
    assert s["status"] == "error", s
    assert "C++ custom op 'DepTwice' has no prototype" in s["error"], s
    assert f"{outside}/libge_test_dep_proto.so, which it loads as a dependency, registers it" in s["error"], s
    assert "op-packages.md" in s["error"]


def glob_root(tmp_path, loader_name):
    root = tmp_path / loader_name
    folder = make_opp_root(root, ["libge_test_glob_user.so"])
    shutil.copy(os.path.join(BIN, "..", "test-oplib", "libge_test_glob_loader.so"), os.path.join(folder, loader_name))
    os.makedirs(root / "helpers")
    shutil.copy(os.path.join(BIN, "..", "test-oplib", "libge_test_glob_helper.so"), root / "helpers")
    return root, folder


@pytest.mark.parametrize("loader_name", ["libge_test_aa_loader.so", "libge_test_zz_loader.so"])
def test_a_symbol_another_library_made_global_does_not_load_a_library(tmp_path, loader_name):
    # Loaded alone, the user library's symbol is undefined: that is its status
    # in both tools, whether the RTLD_GLOBAL loader sorts before it or after.
    root, folder = glob_root(tmp_path, loader_name)
    listed, ran, _, _ = both(tmp_path, root)
    user = same_library(listed, ran, "libge_test_glob_user.so")
    assert user["status"] == "error", user
    assert user["error"] == (f"cannot load op library {folder}/libge_test_glob_user.so: "
                             f"{folder}/libge_test_glob_user.so: undefined symbol: ge_test_glob_offset"), user
    assert same_library(listed, ran, loader_name)["status"] == "ok"
    # --check says the same.
    p = run_ls("--check", str(root))
    assert p.returncode == 1 and "undefined symbol: ge_test_glob_offset" in p.stdout, p.stdout


def test_a_cpp_exception_from_a_static_constructor_is_named_in_both(tmp_path):
    root = tmp_path / "root"
    folder = make_opp_root(root, ["libge_test_static_throw.so", "libge_test_ops.so"])
    listed, ran, _, _ = both(tmp_path, root)
    s = same_library(listed, ran, "libge_test_static_throw.so")
    assert s["status"] == "crashed", s
    assert s["error"] == (f"cannot load op library {folder}/libge_test_static_throw.so: a static constructor threw "
                          "C++ exception std::runtime_error (what(): cannot read /etc/ge_test_static.conf)"), s
    # The engine goes on with the other libraries.
    assert same_library(listed, ran, "libge_test_ops.so")["status"] == "ok"
    p = run_ls("--check", str(root))
    assert p.returncode == 1 and "std::runtime_error (what(): cannot read /etc/ge_test_static.conf)" in p.stdout, p.stdout


def test_a_crashing_or_exiting_library_is_its_status_and_the_engine_goes_on(tmp_path):
    root = tmp_path / "root"
    folder = make_opp_root(root, ["libge_test_crash.so", "libge_test_exit3.so", "libge_test_ops.so"])
    listed, ran, _, _ = both(tmp_path, root)
    crash = same_library(listed, ran, "libge_test_crash.so")
    assert crash["status"] == "crashed" and "fatal signal SIGSEGV while loading it" in crash["error"], crash
    gone = same_library(listed, ran, "libge_test_exit3.so")
    assert gone["status"] == "exited", gone
    assert gone["error"] == f"op library {folder}/libge_test_exit3.so called exit(3) while loading", gone
    assert same_library(listed, ran, "libge_test_ops.so")["status"] == "ok"


def test_the_engine_without_probes_loads_in_process(tmp_path):
    # HostOptions::probe_op_libraries off (GE_RUN's --no-library-probe is not a
    # thing): the in-process terminate report names the exception before the abort.
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_static_throw.so"])
    env = {**os.environ, "GE_PLUGIN_WORKER": str(tmp_path / "missing-worker")}
    g = tmp_path / "g.json"
    g.write_text('{"inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1]}],'
                 ' "nodes": [{"name": "n", "op_type": "ReluCpp", "inputs": ["x"]}], "outputs": ["n:0"]}')
    p = subprocess.run([os.path.join(BIN, "ge-run"), str(g), "--opp-path", str(root), "--output-dir", str(tmp_path / "o")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode != 0
    assert "op libraries are loaded without first loading each alone" in p.stderr, p.stderr
    assert ("ge-run: error: C++ exception std::runtime_error (what(): cannot read /etc/ge_test_static.conf) "
            "escaped while loading op library") in p.stderr, p.stderr
    assert "fatal signal SIGABRT" not in p.stderr, p.stderr
