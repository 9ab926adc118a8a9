"""The registry with op packages (share/docs/op-packages.md): op libraries of
an opp root are scanned out of process like Python plugins, listed with their
C++ ops and prototypes, and serve their prototypes to implementation-only
Python plugins. The libraries are the test op libraries of test/oplib."""
import json
import os

from registry_helpers import make_opp_root, make_plugin, run_ls, statuses

IMPL_ONLY = '''"""Implementation of a C++ prototype."""
from ge.custom_op import register_op_impl
from ge.runtime import Tensor


@register_op_impl(op_type="{op}")
class Impl:
    def execute(self, x: Tensor{attrs}) -> None:
        pass
'''


def cache_env(tmp_path):
    return {"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "c" / "registry.json"),
            "GE_PLUGIN_REGISTRY_SOCKET": str(tmp_path / "none.sock")}


def listing(opp_path, env, *extra):
    p = run_ls("--opp-path", opp_path, "--json", *extra, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    j = json.loads(p.stdout)
    return j, {pl["name"]: pl for pl in j["plugins"]}


def test_ls_lists_cpp_ops_prototypes_and_bound_python_plugins(opp, tmp_path):
    root = tmp_path / "root"
    lib_dir = make_opp_root(root, ["libge_test_ops.so", "libge_test_protos.so"])
    make_plugin(opp, "scale_impl", "ScaleLib", body=IMPL_ONLY.format(op="ScaleLib", attrs=", *, factor: float"))
    env = cache_env(tmp_path)
    j, by_name = listing(f"{root}:{opp}", env)
    assert statuses(j["plugins"]) == {"libge_test_ops.so": "ok", "libge_test_protos.so": "ok", "scale_impl": "ok"}
    ops = by_name["libge_test_ops.so"]
    assert ops["kind"] == "op_library" and ops["path"] == os.path.join(lib_dir, "libge_test_ops.so")
    assert ops["ops"] == [{"op_type": "NegCpp", "capabilities": ["eager_execute", "infer_meta"]}]
    assert ops["prototypes"] == ["NegCpp"]
    protos = by_name["libge_test_protos.so"]
    assert protos["ops"] == [] and protos["prototypes"] == ["ScaleLib", "ReplacedLib"]
    impl = by_name["scale_impl"]
    assert impl["kind"] == "python"
    assert impl["ops"] == [{"op_type": "ScaleLib", "capabilities": ["eager_execute"],
                            "prototype_library": os.path.join(lib_dir, "libge_test_protos.so")}]
    # The table: one row per C++ op and per prototype-only op_type, "native" isolation.
    text = run_ls("--opp-path", f"{root}:{opp}", env=env).stdout
    row = next(line for line in text.splitlines() if line.startswith("libge_test_ops.so"))
    assert "NegCpp" in row and "native" in row and row.rstrip().endswith("ok")
    assert any("ScaleLib (prototype)" in line for line in text.splitlines())
    # --op finds a prototype-only library too.
    j = json.loads(run_ls("--opp-path", f"{root}:{opp}", "--json", "--op", "ReplacedLib", env=env).stdout)
    assert [p["name"] for p in j["plugins"]] == ["libge_test_protos.so"]


def test_crashing_library_is_crashed_and_the_listing_continues(opp, tmp_path):
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_crash.so", "libge_test_ops.so"])
    make_plugin(opp, "plain", "OpPkgPlain")
    j, by_name = listing(f"{root}:{opp}", cache_env(tmp_path))
    crashed = by_name["libge_test_crash.so"]
    assert crashed["status"] == "crashed" and "SIGSEGV" in crashed["error"]
    assert by_name["libge_test_ops.so"]["status"] == "ok" and by_name["plain"]["status"] == "ok"


def test_unloadable_libraries_are_errors_naming_the_library(opp, tmp_path):
    root = tmp_path / "root"
    lib_dir = make_opp_root(root, ["libge_test_undefined.so", "libge_test_badproto.so", "libge_test_orphan.so"])
    bogus = os.path.join(lib_dir, "libbogus.so")
    with open(bogus, "w") as f:
        f.write("not an ELF file\n")
    os.chmod(bogus, 0o644)
    j, by_name = listing(str(root), cache_env(tmp_path))
    undefined = by_name["libge_test_undefined.so"]
    assert undefined["status"] == "error"
    assert os.path.join(lib_dir, "libge_test_undefined.so") in undefined["error"]
    assert "undefined symbol: ge_test_symbol_nobody_defines" in undefined["error"]
    assert by_name["libbogus.so"]["status"] == "error" and bogus in by_name["libbogus.so"]["error"]
    assert "BadProtoLib" in by_name["libge_test_badproto.so"]["error"]
    assert "attribute 'cfg'" in by_name["libge_test_badproto.so"]["error"]
    assert "'OrphanCpp' has no prototype" in by_name["libge_test_orphan.so"]["error"]


def test_cpp_op_wins_over_a_python_impl_of_its_op_type(opp, tmp_path):
    root = tmp_path / "root"
    lib_dir = make_opp_root(root, ["libge_test_ops.so"])
    # A Python plugin earlier in the opp path still loses: op libraries load first.
    make_plugin(opp, "neg_py", "NegCpp", body=IMPL_ONLY.format(op="NegCpp", attrs=""))
    j, by_name = listing(f"{opp}:{root}", cache_env(tmp_path))
    assert by_name["libge_test_ops.so"]["status"] == "ok"
    neg = by_name["neg_py"]
    assert neg["status"] == "conflict" and "op_type 'NegCpp'" in neg["error"]
    assert os.path.join(lib_dir, "libge_test_ops.so") in neg["error"]


def test_custom_op_with_the_prototype_of_another_library(opp, tmp_path):
    root = tmp_path / "root"
    lib_dir = make_opp_root(root, ["libge_test_borrow.so", "libge_test_borrow_proto.so"])
    j, by_name = listing(str(root), cache_env(tmp_path))
    borrow = by_name["libge_test_borrow.so"]
    assert borrow["status"] == "ok", borrow["error"]
    assert borrow["ops"] == [{"op_type": "TwiceCpp", "capabilities": ["eager_execute", "infer_meta"],
                              "prototype_library": os.path.join(lib_dir, "libge_test_borrow_proto.so")}]


def test_python_plugins_follow_the_libraries_they_bind_to(opp, tmp_path):
    """A cached verdict that depends on an op library is taken again when the
    library comes, goes or changes."""
    root = tmp_path / "root"
    lib_dir = make_opp_root(root, ["libge_test_protos.so"])
    make_plugin(opp, "scale_impl", "ScaleLib", body=IMPL_ONLY.format(op="ScaleLib", attrs=", *, factor: float"))
    make_plugin(opp, "plain", "OpPkgPlain2")
    env = cache_env(tmp_path)
    j, by_name = listing(f"{root}:{opp}", env)
    assert by_name["scale_impl"]["status"] == "ok"
    assert listing(f"{root}:{opp}", env)[0]["source"] == "cache"
    os.remove(os.path.join(lib_dir, "libge_test_protos.so"))
    j, by_name = listing(f"{root}:{opp}", env)
    assert by_name["scale_impl"]["status"] == "error" and "canonical IR not found" in by_name["scale_impl"]["error"]
    assert by_name["plain"]["status"] == "ok"
    make_opp_root(root, ["libge_test_protos.so"])
    j, by_name = listing(f"{root}:{opp}", env)
    assert by_name["scale_impl"]["status"] == "ok"


def test_check_an_opp_root_and_a_single_library(opp, tmp_path):
    root = tmp_path / "root"
    lib_dir = make_opp_root(root, ["libge_test_ops.so", "libge_test_protos.so"])
    env = cache_env(tmp_path)
    p = run_ls("--check", str(root), env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "op NegCpp  NegCpp(x: float32) -> (y: float32)  [eager_execute, infer_meta]" in p.stdout
    assert "prototype ScaleLib" in p.stdout and "no problems found" in p.stdout
    p = run_ls("--check", os.path.join(lib_dir, "libge_test_ops.so"), "--json", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    j = json.loads(p.stdout)
    assert j["ok"] and j["plugin"]["kind"] == "op_library" and j["plugin"]["ops"][0]["op_type"] == "NegCpp"
    make_opp_root(root, ["libge_test_crash.so"])
    p = run_ls("--check", str(root), env=env)
    assert p.returncode == 1 and "SIGSEGV" in p.stdout


def test_library_writable_by_others_is_insecure(opp, tmp_path):
    root = tmp_path / "root"
    lib_dir = make_opp_root(root, ["libge_test_ops.so"])
    os.chmod(os.path.join(lib_dir, "libge_test_ops.so"), 0o777)
    j, by_name = listing(str(root), cache_env(tmp_path))
    lib = by_name["libge_test_ops.so"]
    assert lib["status"] == "insecure" and "writable by others" in lib["error"]


def test_check_an_impl_only_plugin_against_the_given_opp_path(opp, tmp_path):
    # --check of an implementation-only plugin binds it to the op libraries of
    # the opp path given, even with an empty cache (it used to see only the
    # cache's libraries and report "canonical IR not found").
    root = tmp_path / "root"
    make_opp_root(root, ["libge_test_protos.so"])
    plugin = make_plugin(opp, "scale_impl", "ScaleLib", body=IMPL_ONLY.format(op="ScaleLib", attrs=", *, factor: float"))
    env = cache_env(tmp_path)
    assert not os.path.exists(env["GE_PLUGIN_REGISTRY_CACHE"])
    p = run_ls("--check", plugin, "--opp-path", f"{root}:{opp}", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no problems found" in p.stdout
    # A wrong signature is then checked against that C++ prototype.
    make_plugin(opp, "scale_impl", "ScaleLib", body=IMPL_ONLY.format(op="ScaleLib", attrs=", *, scale: float"))
    p = run_ls("--check", plugin, "--opp-path", f"{root}:{opp}", env=env)
    assert p.returncode == 1
    assert "expected attr name factor at index 0" in p.stdout and "actual attr name scale" in p.stdout
    # Without any opp path or cache holding the library, the prototype is not found.
    p = run_ls("--check", plugin, env={**env, "GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "empty" / "r.json")})
    assert p.returncode == 1 and "canonical IR not found" in p.stdout


def test_misplaced_op_libraries_are_reported_not_skipped(opp, tmp_path):
    # An author's layout mistakes: the architecture folder misnamed, and
    # libraries put straight into a folder of the opp path. Both are errors
    # that say where op libraries go (they used to be skipped in silence).
    import platform
    import shutil
    wrong_arch = tmp_path / "wrong_arch"
    lib_dir = make_opp_root(wrong_arch, ["libge_test_protos.so"])
    os.rename(lib_dir, os.path.join(os.path.dirname(lib_dir), "amd64"))
    flat = tmp_path / "flat"
    flat.mkdir(mode=0o755)
    shutil.copy(os.path.join(os.path.dirname(lib_dir), "amd64", "libge_test_protos.so"), flat / "libge_test_protos.so")
    os.chmod(flat / "libge_test_protos.so", 0o755)
    env = cache_env(tmp_path)
    p = run_ls("--opp-path", f"{wrong_arch}:{flat}", "--json", env=env)
    j = json.loads(p.stdout)
    errors = {pl["path"]: pl["error"] for pl in j["plugins"] if pl["status"] == "error"}
    arch = platform.machine()
    assert errors[str(wrong_arch / "op_graph")] == (
        f"opp root {wrong_arch} has op_graph/ but no op_graph/lib/linux/{arch}/ "
        "(op libraries for this machine go there; lib/linux/ has: amd64)")
    assert errors[str(flat)].startswith(f"opp folder {flat} holds 1 lib*.so file(s), which are not loaded from there")
    assert f"op_graph/lib/linux/{arch}/" in errors[str(flat)]
    # ge-run reports the same (one discovery).
    import subprocess
    graph = tmp_path / "g.json"
    graph.write_text('{"inputs": [{"name": "a", "dtype": "float32", "shape": [1], "data": [1]}],'
                     ' "nodes": [{"name": "r", "op_type": "ReluCpp", "inputs": ["a"]}], "outputs": ["r:0"]}')
    run = subprocess.run([os.environ["GE_RUN"], str(graph), "--opp-path", f"{wrong_arch}:{flat}",
                          "--output-dir", str(tmp_path / "out")], capture_output=True, text=True)
    assert f"no op_graph/lib/linux/{arch}/" in run.stderr and "holds 1 lib*.so file(s)" in run.stderr
