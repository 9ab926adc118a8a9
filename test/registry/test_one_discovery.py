"""The engine (ge-run) and the registry (ge-plugin-ls) decide about a plugin
with one discovery and one record: the same name, the same status and the
same reason, whatever the case (share/docs/plugin-authors.md, "Opp folders").

Each test builds an opp folder, lists it with ge-plugin-ls and runs ge-run on
it, and compares what both say."""
import json
import os
import shutil
import subprocess
import textwrap

import pytest

from registry_helpers import BIN, Client, make_plugin, run_ls

GE_RUN = os.path.join(BIN, "ge-run")


def op_plugin(op_type, value=1.0, imports="", expr=None):
    """A plugin whose op writes ``expr`` (default: the constant ``value``) to
    every element of its output."""
    expr = expr if expr is not None else repr(float(value))
    return (textwrap.dedent(imports).strip("\n") + "\n"
            "from ge.custom_op import get_execute_ctx, register_op, register_op_impl\n"
            "from ge.runtime import Tensor, TensorDesc\n\n"
            f"@register_op(op_type={op_type!r})\n"
            "def proto(x: TensorDesc) -> TensorDesc:\n"
            "    return TensorDesc(x.shape.storage_shape.dims, x.data_type)\n\n"
            f"@register_op_impl(op_type={op_type!r})\n"
            "class Impl:\n"
            "    def execute(self, x: Tensor) -> None:\n"
            "        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)\n"
            "        dst = y.data.cast('B').cast('f')\n"
            "        for i in range(len(dst)):\n"
            f"            dst[i] = {expr}\n")


def write(path, text, mode=0o644):
    path = os.fsencode(path) if isinstance(path, str) else path
    with open(path, "wb") as f:
        f.write(text.encode())
    os.chmod(path, mode)
    return path


def ls(*opp, extra=(), cache=None):
    """{name: summary} of a listing without the daemon, with `cache` (default:
    a fresh one, so that the listing scans)."""
    import tempfile
    cache = cache or os.path.join(tempfile.mkdtemp(prefix="ge-ls-"), "cache.json")
    args = ["--no-daemon", "--json", "--opp-path", os.pathsep.join(os.fsdecode(o) for o in opp), "--cache", str(cache)]
    p = run_ls(*args, *extra)
    assert p.returncode == 0, p.stderr
    return {pl["name"]: pl for pl in json.loads(p.stdout)["plugins"]}


def ge_run(tmp_path, *opp, op_type="ReluCpp", extra=()):
    """(returncode, {name: plugin summary} or None, stdout, stderr) of ge-run on
    a one-node graph using ``op_type`` (default: a built-in op, so that the run
    succeeds and prints which plugins loaded)."""
    g = tmp_path / "g.json"
    g.write_text(json.dumps({"inputs": [{"name": "x", "dtype": "float32", "shape": [2], "data": [1.0, -1.0]}],
                             "nodes": [{"name": "n", "op_type": op_type, "inputs": ["x"]}],
                             "outputs": ["n:0"]}))
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    opp_arg = os.pathsep.join(os.fsdecode(o) for o in opp)
    p = subprocess.run([GE_RUN, str(g), "--json", "--output-dir", str(out), "--opp-path", opp_arg, *extra],
                       capture_output=True, timeout=120, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
    stdout, stderr = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    plugins = None
    if p.returncode == 0:
        plugins = {pl["name"]: pl for pl in json.loads(stdout)["plugins"]}
    value = None
    if p.returncode == 0:
        import numpy as np
        value = np.load(out / "n_0.npy").tolist()
    return p.returncode, plugins, value, stderr


def agree(listed, ran, name):
    """The listing and the engine give `name` the same status and reason."""
    assert name in listed and name in ran, (listed, ran)
    assert listed[name]["status"] == ran[name]["status"], (listed[name], ran[name])
    assert listed[name]["error"] == ran[name]["error"], (listed[name], ran[name])
    return listed[name]


# ---- names: one name, the entry's own ---------------------------------------------------------

def test_a_link_to_a_helper_is_the_plugin_of_the_links_name(opp, tmp_path):
    write(opp / "_impl_d.py", op_plugin("DiscLinkD", 2.0))
    os.symlink("_impl_d.py", opp / "d.py")
    os.mkdir(opp / "_pk_impl")
    write(opp / "_pk_impl" / "__init__.py", op_plugin("DiscLinkPk", 3.0))
    os.symlink("_pk_impl", opp / "pk")
    listed = ls(opp)
    assert set(listed) == {"d", "pk"}, listed
    assert listed["d"]["path"] == str(opp / "d.py") and listed["d"]["status"] == "ok"
    rc, ran, value, err = ge_run(tmp_path, opp, op_type="DiscLinkD")
    assert rc == 0, err
    assert set(ran) == {"d", "pk"} and value == [2.0, 2.0]
    agree(listed, ran, "d")
    agree(listed, ran, "pk")


# ---- safety: the engine refuses what the registry calls insecure ------------------------------

INSECURE_CASES = ["world-writable file", "world-writable package file", "world-writable helper",
                  "link out of the opp folder"]


@pytest.mark.parametrize("case", INSECURE_CASES)
def test_the_engine_refuses_what_the_listing_calls_insecure(opp, tmp_path, case):
    write(opp / "fine.py", op_plugin("DiscFine"))
    if case == "world-writable file":
        write(opp / "bad.py", op_plugin("DiscBad"), mode=0o666)
    elif case == "world-writable package file":
        os.mkdir(opp / "bad")
        write(opp / "bad" / "__init__.py", "from .impl import *\n")
        write(opp / "bad" / "impl.py", op_plugin("DiscBad"), mode=0o666)
    elif case == "world-writable helper":
        write(opp / "_bad_helper.py", "VALUE = 5.0\n", mode=0o666)
        write(opp / "bad.py", op_plugin("DiscBad", imports="import _bad_helper"))
    else:
        outside = tmp_path / "outside"
        outside.mkdir()
        write(outside / "bad.py", op_plugin("DiscBad"))
        os.symlink(outside / "bad.py", opp / "bad.py")
    listed = ls(opp)
    rc, ran, value, err = ge_run(tmp_path, opp)
    assert rc == 0, err
    bad = agree(listed, ran, "bad")
    assert bad["status"] == "insecure" and "--allow-insecure" in bad["error"], bad
    assert ("outside its opp folder" if "link" in case else "writable by others") in bad["error"]
    assert "not loaded (insecure)" in err
    fine = agree(listed, ran, "fine")
    if case == "world-writable helper":
        # A helper can be imported by every single-file plugin of its folder:
        # it is part of each one's safety verdict.
        assert fine["status"] == "insecure" and "_bad_helper.py" in fine["error"], fine
    else:
        assert fine["status"] == "ok", fine
    # The explicit option loads it, in both.
    rc, ran, value, err = ge_run(tmp_path, opp, op_type="DiscBad", extra=["--allow-insecure"])
    assert rc == 0 and ran["bad"]["status"] == "ok", err
    assert ls(opp, extra=["--allow-insecure"])["bad"]["status"] == "ok"


# ---- dangling links are reported, not dropped -------------------------------------------------

def test_a_dangling_link_is_reported_with_its_target(opp, tmp_path):
    write(opp / "fine.py", op_plugin("DiscFine2"))
    os.symlink("gone.py", opp / "c.py")
    os.symlink("gone_pkg", opp / "cpkg")
    listed = ls(opp)
    rc, ran, _, err = ge_run(tmp_path, opp)
    assert rc == 0, err
    for name in ("c", "cpkg"):
        r = agree(listed, ran, name)
        assert r["status"] == "missing" and "symbolic link to gone" in r["error"] and "does not exist" in r["error"], r
    assert "does not exist" in err


# ---- names are unique over the opp path -------------------------------------------------------

@pytest.mark.parametrize("kind", ["main packages", "sub-interpreter files"])
def test_a_name_taken_earlier_in_path_order_is_a_conflict_in_both(tmp_path, kind):
    first, second = tmp_path / "o1", tmp_path / "o2"
    for i, folder in enumerate((first, second)):
        folder.mkdir()
        if kind == "main packages":
            os.mkdir(folder / "same")
            write(folder / "same" / "__init__.py", op_plugin(f"DiscSame{i}"))
            write(folder / "same" / "pyproject.toml", '[tool.ge-plugin]\nisolation = "main"\n')
        else:
            write(folder / "same.py", op_plugin(f"DiscSame{i}"))
    listed = ls(first, second)
    rc, ran, value, err = ge_run(tmp_path, first, second, op_type="DiscSame0")
    assert rc == 0 and value == [1.0, 1.0], err
    # The second is reported in both, the same way (its summary is listed after the first).
    p = run_ls("--no-daemon", "--json", "--opp-path", f"{first}:{second}")
    plugins = [pl for pl in json.loads(p.stdout)["plugins"] if pl["name"] == "same"]
    assert [pl["status"] for pl in plugins] == ["ok", "conflict"], plugins
    later = plugins[1]
    assert "already used by" in later["error"] and str(first) in later["error"] and str(second) in later["error"]
    runs = json.loads(subprocess.run([GE_RUN, str(tmp_path / "g.json"), "--json", "--output-dir",
                                      str(tmp_path / "o"), "--opp-path", f"{first}:{second}"],
                                     capture_output=True, text=True, timeout=120).stdout)["plugins"]
    ran_same = {pl["path"]: pl for pl in runs if pl["name"] == "same"}
    assert len(ran_same) == 2
    ran_later = ran_same[later["path"]]
    assert ran_later["status"] == "conflict" and ran_later["error"] == later["error"]
    assert ran_same[plugins[0]["path"]]["status"] == "ok"


# ---- --check: one rule for plugins and opp folders ---------------------------------------------

def test_check_of_a_package_folder_checks_the_package(opp):
    os.mkdir(opp / "pk")
    write(opp / "pk" / "__init__.py", "from . import helpers\n")
    write(opp / "pk" / "_consts.py", "OP = 'DiscCheckPk'\n")
    write(opp / "pk" / "helpers.py", "from . import _consts\n" + op_plugin("DiscCheckPk"))
    p = run_ls("--check", str(opp / "pk"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "relative import" not in p.stdout and "no problems found" in p.stdout
    assert "DiscCheckPk" in p.stdout


def test_check_of_an_opp_folder_checks_every_plugin(opp):
    write(opp / "good.py", op_plugin("DiscCheckGood"))
    write(opp / "broken.py", "raise ValueError('broken at import')\n")
    os.mkdir(opp / "pk")
    write(opp / "pk" / "__init__.py", op_plugin("DiscCheckPk2"))
    p = run_ls("--check", str(opp), "--json")
    assert p.returncode == 1, p.stdout + p.stderr
    reports = {os.path.basename(r["path"]): r for r in json.loads(p.stdout)["plugins"]}
    assert set(reports) == {"good.py", "broken.py", "pk"}
    assert reports["good.py"]["ok"] and reports["pk"]["ok"]
    assert not reports["broken.py"]["ok"] and "broken at import" in reports["broken.py"]["problems"][0]["problem"]


# ---- the standard library is never shadowed ----------------------------------------------------

def test_a_plugin_file_named_like_a_stdlib_module_shadows_nothing(opp, tmp_path):
    write(opp / "string.py", "X = 1\n")
    write(opp / "typing.py", "X = 1\n")
    write(opp / "user.py", op_plugin("DiscUsesString", imports="import string\nimport typing",
                                     expr="float(len(string.ascii_lowercase))"))
    listed = ls(opp)
    rc, ran, value, err = ge_run(tmp_path, opp, op_type="DiscUsesString")
    assert rc == 0, err
    assert value == [26.0, 26.0]
    for name in ("string", "typing"):
        r = agree(listed, ran, name)
        assert r["status"] == "error" and "standard library" in r["error"], r
    assert agree(listed, ran, "user")["status"] == "ok"


def test_a_main_package_named_like_a_stdlib_module_replaces_nothing(opp, tmp_path):
    os.mkdir(opp / "json")
    write(opp / "json" / "__init__.py", "def dumps(*a, **k):\n    return 'hijacked'\n")
    write(opp / "json" / "pyproject.toml", '[tool.ge-plugin]\nisolation = "main"\n')
    os.mkdir(opp / "victim")
    write(opp / "victim" / "__init__.py",
          op_plugin("DiscVictim", imports="import json", expr="float(len(json.dumps([1, 2])))"))
    write(opp / "victim" / "pyproject.toml", '[tool.ge-plugin]\nisolation = "main"\n')
    listed = ls(opp)
    rc, ran, value, err = ge_run(tmp_path, opp, op_type="DiscVictim")
    assert rc == 0, err
    assert value == [6.0, 6.0]  # len('[1, 2]'): the standard json
    assert agree(listed, ran, "json")["status"] == "error"
    assert agree(listed, ran, "victim")["status"] == "ok"


def test_a_single_file_plugin_imports_its_underscore_helper(opp, tmp_path):
    write(opp / "_helper_vals.py", "VALUE = 7.0\n")
    write(opp / "uses_helper.py", op_plugin("DiscHelper", imports="import _helper_vals",
                                            expr="_helper_vals.VALUE"))
    rc, ran, value, err = ge_run(tmp_path, opp, op_type="DiscHelper")
    assert rc == 0 and value == [7.0, 7.0], err


# ---- an edit is seen, whatever the stamps say ---------------------------------------------------

def same_size_edit(path, old, new):
    """Replace `old` by `new` (same length) keeping size, mtime and atime."""
    assert len(old) == len(new)
    st = os.stat(path)
    text = open(path).read()
    assert old in text
    with open(path, "w") as f:
        f.write(text.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns


@pytest.mark.parametrize("where", ["plugin file", "helper module", "package module"])
def test_a_same_size_same_mtime_edit_is_seen_by_engine_and_listing(opp, tmp_path, where):
    if where == "plugin file":
        edited = write(opp / "p.py", op_plugin("DiscOldOp", 1.0))
        old, new = "DiscOldOp", "DiscNewOp"
    elif where == "helper module":
        edited = write(opp / "_names.py", "OP = 'DiscOldOp'\n")
        write(opp / "p.py", op_plugin("DiscOldOp", imports="import _names").replace("'DiscOldOp'", "_names.OP"))
        old, new = "DiscOldOp", "DiscNewOp"
    else:
        os.mkdir(opp / "p")
        write(opp / "p" / "__init__.py", "from .ops import *\n")
        edited = write(opp / "p" / "ops.py", op_plugin("DiscOldOp"))
        old, new = "DiscOldOp", "DiscNewOp"
    cache = tmp_path / "cache.json"
    assert [o["op_type"] for o in ls(opp, cache=cache)["p"]["ops"]] == [old]
    rc, ran, value, err = ge_run(tmp_path, opp, op_type=old)
    assert rc == 0, err
    # The host writes no bytecode into opp folders.
    pycache = [d for d, _, _ in os.walk(opp) if os.path.basename(d) == "__pycache__"]
    assert pycache == []
    # A __pycache__ made by another tool (python -m compileall) for the old
    # source, matching its size and mtime, is not used either.
    subprocess.run(["/usr/bin/python3", "-m", "compileall", "-q", str(opp)], check=True)
    same_size_edit(os.fsdecode(edited), old, new)
    rc, ran, value, err = ge_run(tmp_path, opp, op_type=new)
    assert rc == 0 and value == [1.0, 1.0], err
    assert [o["op_type"] for o in ls(opp, cache=cache)["p"]["ops"]] == [new]


def test_a_crash_verdict_is_cleared_by_a_same_size_edit(opp, tmp_path):
    crash = write(opp / "boom.py", "import ctypes\nctypes.string_at(0)\n")
    cache = tmp_path / "cache.json"
    assert ls(opp, cache=cache)["boom"]["status"] == "crashed"
    rc, ran, _, err = ge_run(tmp_path, opp, extra=["--skip-crashed", "--registry-cache", str(cache)])
    assert rc == 0 and ran["boom"]["status"] == "skipped", err
    # Fixed in place: same size, same mtime. The verdict no longer applies.
    same_size_edit(os.fsdecode(crash), "ctypes.string_at(0)", "X = 1" + " " * 14)
    rc, ran, _, err = ge_run(tmp_path, opp, extra=["--skip-crashed", "--registry-cache", str(cache)])
    assert rc == 0 and ran["boom"]["status"] == "ok", err
    assert ls(opp, cache=cache)["boom"]["status"] == "ok"


# ---- non-UTF-8 paths ------------------------------------------------------------------------------

def test_a_plugin_in_a_non_utf8_folder_loads_and_is_listed_losslessly(tmp_path):
    base = os.fsencode(tmp_path)
    folders = [base + b"/o\xfe", base + b"/o\xff"]
    for i, folder in enumerate(folders):
        os.mkdir(folder)
        write(folder + f"/p{i}.py".encode(), op_plugin(f"DiscBytes{i}", float(i + 4)))
    opp_arg = b":".join(folders)
    rc, ran, value, err = ge_run(tmp_path, *folders, op_type="DiscBytes1")
    assert rc == 0 and value == [5.0, 5.0], err
    p = subprocess.run([os.path.join(BIN, "ge-plugin-ls"), "--no-daemon", "--json", "--opp-path", opp_arg],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    listed = {pl["name"]: pl for pl in json.loads(p.stdout)["plugins"]}
    assert listed["p0"]["path"] == os.fsdecode(tmp_path) + "/o\\xfe/p0.py"
    assert listed["p1"]["path"] == os.fsdecode(tmp_path) + "/o\\xff/p1.py"
    assert listed["p0"]["status"] == listed["p1"]["status"] == "ok"
    # The listed spelling is accepted back by --check.
    c = run_ls("--check", listed["p1"]["path"])
    assert c.returncode == 0, c.stdout + c.stderr
    assert "DiscBytes1" in c.stdout


def test_the_daemon_shows_a_non_utf8_path_by_its_listed_spelling(tmp_path, daemon_factory):
    folder = os.fsencode(tmp_path) + b"/opp\xff"
    os.mkdir(folder)
    write(folder + b"/q.py", op_plugin("DiscBytesQ"))
    d = daemon_factory(os.fsdecode(folder)).start()
    c = d.client()
    plugins = c.request({"cmd": "list"})["plugins"]
    assert [pl["path"] for pl in plugins] == [os.fsdecode(tmp_path) + "/opp\\xff/q.py"]
    shown = c.request({"cmd": "show", "path": plugins[0]["path"]})
    assert shown["ok"] and shown["plugin"]["name"] == "q", shown
    c.close()


# ---- found by the newcomer pass -------------------------------------------------------------------

def test_check_takes_a_package_path_with_a_trailing_slash(opp):
    os.mkdir(opp / "pk")
    write(opp / "pk" / "__init__.py", op_plugin("DiscSlash"))
    for spelling in (str(opp / "pk") + "/", str(opp / "pk") + "//"):
        p = run_ls("--check", spelling)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "DiscSlash" in p.stdout and "'.'" not in p.stdout


def test_check_of_a_link_leaving_its_folder_agrees_with_the_listing(opp, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside / "out.py", op_plugin("DiscOut"))
    os.symlink(outside / "out.py", opp / "e.py")
    assert ls(opp)["e"]["status"] == "insecure"
    p = run_ls("--check", str(opp / "e.py"))
    assert p.returncode == 1 and "outside its opp folder" in p.stdout, p.stdout


def test_a_link_to_a_sibling_plugin_is_reported_not_dropped(opp, tmp_path):
    write(opp / "negate.py", op_plugin("DiscNegate"))
    os.symlink("negate.py", opp / "negalias.py")
    p = run_ls("--no-daemon", "--json", "--opp-path", str(opp), "--cache", str(tmp_path / "c.json"))
    listed = {pl["name"]: pl for pl in json.loads(p.stdout)["plugins"]}
    rc, ran, _, err = ge_run(tmp_path, opp)
    assert rc == 0, err
    assert set(listed) == set(ran) == {"negate", "negalias"}
    # negalias sorts first and is the plugin; negate is the same file, reported.
    assert agree(listed, ran, "negalias")["status"] == "ok"
    dup = agree(listed, ran, "negate")
    assert dup["status"] == "conflict" and "is the same file as" in dup["error"], dup


# ---- found by the adversarial pass ------------------------------------------------------------------

def test_a_plugin_redefining_a_builtin_op_is_a_conflict_in_both(opp, tmp_path):
    write(opp / "relu.py", op_plugin("ReluCpp"))
    listed = ls(opp)
    rc, ran, _, err = ge_run(tmp_path, opp)
    assert rc == 0, err
    r = agree(listed, ran, "relu")
    assert r["status"] == "conflict" and "builtin" in r["error"], r
    assert run_ls("--check", str(opp / "relu.py")).returncode == 1


@pytest.mark.parametrize("case", ["target folder writable", "helper link to a writable file",
                                  "helper link out of the folder", "package too deep to check"])
def test_what_can_change_a_plugin_is_checked_in_both(opp, tmp_path, case):
    if case == "target folder writable":
        os.mkdir(opp / "sub")
        write(opp / "sub" / "impl.py", op_plugin("DiscSub"))
        os.chmod(opp / "sub", 0o777)
        os.symlink("sub/impl.py", opp / "d.py")
        name, reason = "d", "writable by others"
    elif case in ("helper link to a writable file", "helper link out of the folder"):
        outside = tmp_path / "hout"
        outside.mkdir()
        if case == "helper link to a writable file":
            os.mkdir(opp / "hsub")  # no __init__.py: neither a plugin nor a helper itself
            write(opp / "hsub" / "real.py", "VALUE = 3.0\n", mode=0o666)
            os.symlink("hsub/real.py", opp / "_h.py")
            reason = "writable by others"
        else:
            target = write(outside / "_h.py", "VALUE = 3.0\n")
            os.symlink(os.fsdecode(target), opp / "_h.py")
            reason = "outside its opp folder"
        write(opp / "useh.py", op_plugin("DiscUseH", imports="import _h", expr="_h.VALUE"))
        name = "useh"
    else:
        d = opp / "deep"
        os.mkdir(d)
        write(d / "__init__.py", op_plugin("DiscDeep"))
        for i in range(34):
            d = d / f"d{i}"
            os.mkdir(d)
        name, reason = "deep", "too large to check"
    listed = ls(opp)
    rc, ran, _, err = ge_run(tmp_path, opp)
    assert rc == 0, err
    r = agree(listed, ran, name)
    assert r["status"] == "insecure" and reason in r["error"], r


def test_a_link_leaving_the_folder_does_not_hide_the_plugin_it_points_at(tmp_path):
    o1, o2 = tmp_path / "o1", tmp_path / "o2"
    o1.mkdir()
    o2.mkdir()
    write(o2 / "y.py", op_plugin("DiscY", 9.0))
    os.symlink(o2 / "y.py", o1 / "x.py")
    listed = ls(o1, o2)
    rc, ran, value, err = ge_run(tmp_path, o1, o2, op_type="DiscY")
    assert rc == 0 and value == [9.0, 9.0], err
    assert agree(listed, ran, "x")["status"] == "insecure"
    assert agree(listed, ran, "y")["status"] == "ok"


def test_a_link_to_its_own_package_folder_is_not_outside(opp, tmp_path):
    os.mkdir(opp / "pkg")
    write(opp / "pkg" / "__init__.py", op_plugin("DiscSelf"))
    os.symlink(".", opp / "pkg" / "self")
    listed = ls(opp)
    rc, ran, _, err = ge_run(tmp_path, opp)
    assert agree(listed, ran, "pkg")["status"] == "ok"


def test_odd_entries_are_reported_once_and_never_read(opp, tmp_path):
    os.mkfifo(opp / "fifo.py")
    os.symlink("/dev/zero", opp / "zero.py")
    os.symlink("loop_b.py", opp / "loop_a.py")
    os.symlink("loop_a.py", opp / "loop_b.py")
    write(opp / "class.py", op_plugin("DiscKeyword"))
    missing = tmp_path / "nonexist"
    # The opp folder and a missing entry listed twice, one with a trailing slash.
    entries = [opp, opp, missing, str(missing) + "/"]
    listed_all = json.loads(run_ls("--no-daemon", "--json", "--opp-path", ":".join(map(str, entries)),
                                   "--cache", str(tmp_path / "c.json")).stdout)["plugins"]
    rc, ran, _, err = ge_run(tmp_path, *entries)
    assert rc == 0, err
    assert sorted(p["name"] for p in listed_all) == sorted(ran) == sorted(
        ["fifo", "zero", "loop_a", "loop_b", "class", "nonexist"])
    listed = {p["name"]: p for p in listed_all}
    for name in ("fifo", "zero"):
        assert "not a regular file" in agree(listed, ran, name)["error"]
    for name in ("loop_a", "loop_b"):
        assert "symbolic link loop" in agree(listed, ran, name)["error"]
    assert "not a valid Python module name" in agree(listed, ran, "class")["error"]
    assert agree(listed, ran, "nonexist")["status"] == "missing"


def test_a_timeout_too_large_for_the_clock_is_refused():
    for value in ("1e10", "inf", "nan", "0"):
        p = run_ls("--no-daemon", "--opp-path", "/nonexistent", "--timeout", value)
        assert p.returncode == 2 and "--timeout must be in (0, 86400]" in p.stderr, (value, p.stderr)


def test_ls_does_not_use_a_daemon_of_another_opp_path_or_safety_rule(opp, tmp_path, daemon_factory):
    write(opp / "p.py", op_plugin("DiscDaemonP"))
    write(opp / "open.py", op_plugin("DiscDaemonOpen"), mode=0o666)
    other = tmp_path / "other"
    other.mkdir()
    write(other / "q.py", op_plugin("DiscDaemonQ"))
    d = daemon_factory(opp, extra=["--allow-insecure"]).start()
    env = {"GE_PLUGIN_REGISTRY_SOCKET": d.socket, "GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "c.json")}
    # Another opp path, from the environment: not the daemon's answer.
    p = run_ls("--json", env={**env, "ASCEND_CUSTOM_OPP_PATH": str(other)})
    out = json.loads(p.stdout)
    assert out["source"] != "daemon" and [pl["name"] for pl in out["plugins"]] == ["q"], out
    # The same opp path, but this listing refuses what the daemon allows.
    out = json.loads(run_ls("--json", "--opp-path", str(opp), env=env).stdout)
    assert out["source"] != "daemon" and {pl["name"]: pl["status"] for pl in out["plugins"]}["open"] == "insecure"
    out = json.loads(run_ls("--json", "--opp-path", str(opp), "--allow-insecure", env=env).stdout)
    assert out["source"] == "daemon" and {pl["name"]: pl["status"] for pl in out["plugins"]}["open"] == "ok"


def test_a_plugin_writing_into_its_own_package_is_not_rescanned_for_ever(opp, tmp_path):
    os.mkdir(opp / "logger")
    write(opp / "logger" / "__init__.py",
          "import os, time\n"
          "open(os.path.join(os.path.dirname(__file__), 'import.log'), 'w').write(str(time.time()))\n"
          + op_plugin("DiscLogger"))
    cache = tmp_path / "c.json"
    args = ["--no-daemon", "--json", "--opp-path", str(opp), "--cache", str(cache)]
    first = json.loads(run_ls(*args).stdout)
    assert first["source"] == "scan" and first["plugins"][0]["status"] == "ok"
    # Its own write during the scan is part of its stamp: the next listing is
    # served from the cache, not scanned again.
    assert json.loads(run_ls(*args).stdout)["source"] == "cache"


def test_a_cache_path_that_is_a_folder_gets_no_listing_index(opp, tmp_path):
    write(opp / "p.py", op_plugin("DiscCacheDir"))
    cache = tmp_path / "cache.json"
    cache.mkdir()
    args = ["--no-daemon", "--json", "--opp-path", str(opp), "--cache", str(cache)]
    for _ in range(2):
        p = run_ls(*args)
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        assert out["source"] == "scan" and out["plugins"][0]["status"] == "ok", out
        assert "warning" in p.stderr
    assert not os.path.exists(str(cache) + ".list")
