"""Admin-facing behaviour of the registry (share/docs/registry.md): which
cache a listing reads and writes ("Which cache"), per-user XDG folders and
their modes, absolute opp paths, scan progress while a plugin hangs ("Scan
progress"), and what --check checks against, with one verdict line."""
import glob
import json
import os
import stat
import subprocess

import pytest

from registry_helpers import BIN, Client, make_plugin, run_ls, statuses, wait_for

HANG = '''"""Hangs at import."""
import time
time.sleep(120)
'''


def no_daemon_env(tmp_path, cache):
    return {"GE_PLUGIN_REGISTRY_CACHE": str(cache), "GE_PLUGIN_REGISTRY_SOCKET": str(tmp_path / "none.sock")}


def read_json(path):
    with open(path) as f:
        return json.load(f)


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def listing_caches(tmp_path):
    return sorted(glob.glob(str(tmp_path / "xdg-cache" / "ge-plugin" / "listing-*.json")))


# ---- which cache a listing uses --------------------------------------------------------------

def test_listing_with_its_own_opp_path_keeps_the_daemons_cache(opp, tmp_path, daemon_factory):
    make_plugin(opp, "mine", "OpsMine")
    d = daemon_factory(opp).start()
    d.stop()  # its cache stays; no daemon answers now
    before = open(d.cache, "rb").read()
    assert read_json(d.cache)["opp_path"] == [str(opp)]
    other = tmp_path / "other"
    other.mkdir()
    make_plugin(other, "theirs", "OpsTheirs")
    env = no_daemon_env(tmp_path, d.cache)
    p = run_ls("--opp-path", str(other), "--json", env=env)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["source"] == "scan" and statuses(j["plugins"]) == {"theirs": "ok"}
    # The daemon's cache is untouched ...
    assert open(d.cache, "rb").read() == before
    # ... the listing wrote its own cache of its opp path, in a private folder.
    own = listing_caches(tmp_path)
    assert len(own) == 1, own
    assert read_json(own[0])["opp_path"] == [str(other)]
    assert mode(tmp_path / "xdg-cache") == 0o700 and mode(tmp_path / "xdg-cache" / "ge-plugin") == 0o700
    # The next listing of that opp path is served from it; the daemon's opp
    # path is still served from the daemon's cache.
    j = json.loads(run_ls("--opp-path", str(other), "--json", env=env).stdout)
    assert j["source"] == "cache" and statuses(j["plugins"]) == {"theirs": "ok"}
    p = run_ls("--opp-path", str(opp), "--json", env=env)
    assert json.loads(p.stdout)["source"] == "cache" and statuses(json.loads(p.stdout)["plugins"]) == {"mine": "ok"}
    assert open(d.cache, "rb").read() == before


def test_listing_index_of_the_daemons_cache_is_not_replaced(opp, tmp_path, daemon_factory):
    make_plugin(opp, "idx", "OpsIdx")
    d = daemon_factory(opp).start()
    d.stop()
    index = d.cache + ".list"
    assert os.path.exists(index)
    before = open(index, "rb").read()
    other = tmp_path / "other"
    other.mkdir()
    make_plugin(other, "nother", "OpsNother")
    env = no_daemon_env(tmp_path, d.cache)
    for args in (["--json"], [], ["--json", "--status", "ok"]):  # every output path
        p = run_ls("--opp-path", str(other), *args, env=env)
        assert p.returncode == 0, p.stderr
    assert open(index, "rb").read() == before


def test_missing_users_cache_is_created_and_one_of_the_same_opp_path_updated(opp, tmp_path):
    make_plugin(opp, "first", "OpsFirst")
    cache = tmp_path / "c" / "registry.json"
    env = no_daemon_env(tmp_path, cache)
    assert run_ls("--opp-path", str(opp), "--json", env=env).returncode == 0
    assert read_json(cache)["opp_path"] == [str(opp)]
    make_plugin(opp, "second", "OpsSecond")
    j = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    assert statuses(j["plugins"]) == {"first": "ok", "second": "ok"}
    assert {os.path.basename(p["path"]) for p in read_json(cache)["plugins"]} == {"first.py", "second.py"}
    assert listing_caches(tmp_path) == []  # the default cache served: no listing cache of its own


def test_explicit_cache_is_written_as_asked(opp, tmp_path):
    make_plugin(opp, "expl", "OpsExpl")
    cache = tmp_path / "explicit.json"
    other = tmp_path / "other"
    other.mkdir()
    make_plugin(other, "expl2", "OpsExpl2")
    env = {"GE_PLUGIN_REGISTRY_SOCKET": str(tmp_path / "none.sock")}
    assert run_ls("--opp-path", str(opp), "--cache", str(cache), env=env).returncode == 0
    assert run_ls("--opp-path", str(other), "--cache", str(cache), env=env).returncode == 0
    assert read_json(cache)["opp_path"] == [str(other)]
    assert listing_caches(tmp_path) == []


def test_relative_opp_path_is_stored_absolute(opp, tmp_path):
    make_plugin(opp, "rel", "OpsRel")
    cache = tmp_path / "c" / "registry.json"
    env = no_daemon_env(tmp_path, cache)
    p = subprocess.run([os.path.join(BIN, "ge-plugin-ls"), "--opp-path", "opp", "--json"], cwd=str(tmp_path),
                       capture_output=True, text=True, env={**os.environ, **env}, timeout=60)
    assert p.returncode == 0, p.stderr
    j = read_json(cache)
    assert j["opp_path"] == [str(opp)]
    assert all(os.path.isabs(r["path"]) for r in j["plugins"])
    # The same opp path spelled absolute is the same cache.
    assert json.loads(run_ls("--opp-path", str(opp) + "/", "--json", env=env).stdout)["source"] == "cache"


def test_daemon_with_relative_opp_path_stores_it_absolute(opp, tmp_path):
    make_plugin(opp, "drel", "OpsDrel")
    sock, cache = tmp_path / "d.sock", tmp_path / "dc" / "registry.json"
    proc = subprocess.Popen([os.path.join(BIN, "ge-plugin-registryd"), "--foreground", "--opp-path", "opp",
                             "--socket", str(sock), "--cache", str(cache)], cwd=str(tmp_path),
                            stderr=subprocess.PIPE)
    try:
        def serving():
            try:
                Client(str(sock)).close()
                return True
            except OSError:
                return proc.poll() is not None
        assert wait_for(serving, 30), "not serving"
        assert read_json(cache)["opp_path"] == [str(opp)]
        assert Client(str(sock)).request({"cmd": "status"})["opp_path"] == [str(opp)]
    finally:
        proc.terminate()
        proc.wait(15)


def test_relative_opp_path_in_a_removed_directory_is_a_usage_error(tmp_path):
    gone = tmp_path / "gone"
    script = ("import os, subprocess, sys\n"
              "os.chdir(sys.argv[1]); os.rmdir(sys.argv[1])\n"
              "p = subprocess.run(sys.argv[2:], capture_output=True, text=True)\n"
              "print(p.returncode); print(p.stderr)\n")
    env = {**os.environ, **no_daemon_env(tmp_path, tmp_path / "c.json")}
    for tool in ("ge-plugin-ls", "ge-plugin-registryd"):
        gone.mkdir()
        p = subprocess.run(["/usr/bin/python3", "-c", script, str(gone), os.path.join(BIN, tool),
                            "--opp-path", "opp", "--foreground" if tool == "ge-plugin-registryd" else "--json"],
                           capture_output=True, text=True, env=env, timeout=60)
        rc, _, err = p.stdout.partition("\n")
        assert rc == "2", (tool, p.stdout, p.stderr)
        assert "opp path entry 'opp' is relative" in err and "current directory" in err, err
    assert not (tmp_path / "c.json").exists()


def test_unwritable_cache_folder_still_lists(opp, tmp_path, monkeypatch):
    make_plugin(opp, "uw", "OpsUw")
    monkeypatch.delenv("GE_PLUGIN_REGISTRY_CACHE")  # the per-user default: $XDG_CACHE_HOME/ge-plugin/
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be\n")
    # The per-user folder cannot be created: the listing warns and still lists.
    env = {"XDG_CACHE_HOME": str(blocker / "cache"), "GE_PLUGIN_REGISTRY_SOCKET": str(tmp_path / "none.sock")}
    p = run_ls("--opp-path", str(opp), "--json", env=env)
    assert p.returncode == 0, p.stderr
    assert statuses(json.loads(p.stdout)["plugins"]) == {"uw": "ok"}
    assert "warning" in p.stderr and str(blocker) in p.stderr and "not a folder" in p.stderr, p.stderr
    # An explicit cache in a folder that cannot be written: the same.
    p = run_ls("--opp-path", str(opp), "--cache", str(blocker / "x" / "registry.json"), env=env)
    assert p.returncode == 0 and "uw" in p.stdout
    assert "warning" in p.stderr and "cannot write" in p.stderr, p.stderr


# ---- a daemon run by a normal user ------------------------------------------------------------

@pytest.fixture
def user_base():
    """A folder every user can reach (pytest's own folder is root's, 0700),
    holding an opp folder (root's plugins are safe for any user) and a home."""
    import shutil
    import tempfile
    base = tempfile.mkdtemp(prefix="ge-reg-user-", dir="/tmp")
    os.chmod(base, 0o755)
    for sub in ("opp", "home"):
        os.mkdir(os.path.join(base, sub))
        os.chmod(os.path.join(base, sub), 0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def as_user_kwargs(home):
    """Runs a child as `nobody` when the tests run as root (else as this
    user), with `home` made theirs."""
    if os.geteuid() != 0:
        return {}, os.geteuid()
    import pwd
    nobody = pwd.getpwnam("nobody")
    for d, dirs, files in os.walk(str(home)):
        os.chown(d, nobody.pw_uid, nobody.pw_gid)

    def demote():
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    return {"preexec_fn": demote}, nobody.pw_uid


def test_user_daemon_creates_private_xdg_folders(user_base):
    from pathlib import Path
    opp, home = Path(user_base) / "opp", Path(user_base) / "home"
    make_plugin(opp, "usr", "OpsUsr")
    kwargs, uid = as_user_kwargs(home)
    run = home / "run"  # a missing XDG_RUNTIME_DIR is created 0700
    env = {k: v for k, v in os.environ.items()
           if k not in ("GE_PLUGIN_REGISTRY_CACHE", "GE_PLUGIN_REGISTRY_SOCKET", "CACHE_DIRECTORY",
                        "RUNTIME_DIRECTORY", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(run))
    proc = subprocess.Popen([os.path.join(BIN, "ge-plugin-registryd"), "--foreground", "--opp-path", str(opp)],
                            env=env, stderr=subprocess.PIPE, **kwargs)
    cache = home / ".cache" / "ge-plugin" / "registry.json"
    try:
        assert wait_for(lambda: cache.exists() or proc.poll() is not None, 30), "no cache"
        assert proc.poll() is None, proc.stderr.read()
        assert read_json(cache)["opp_path"] == [str(opp)]
        for folder in (home / ".cache", home / ".cache" / "ge-plugin", run):
            assert mode(folder) == 0o700, folder
            assert os.lstat(folder).st_uid == uid
        sock = run / "ge-plugin-registry.sock"
        assert wait_for(sock.exists, 10)
        st = Client(str(sock)).request({"cmd": "status"})
        assert st["cache"] == str(cache) and st["cache_error"] is None
    finally:
        proc.terminate()
        proc.wait(15)


def test_user_daemon_refuses_a_runtime_folder_open_to_others(user_base):
    from pathlib import Path
    opp, home = Path(user_base) / "opp", Path(user_base) / "home"
    make_plugin(opp, "usr2", "OpsUsr2")
    run = home / "run"
    run.mkdir()
    kwargs, uid = as_user_kwargs(home)
    os.chmod(run, 0o777)
    env = {k: v for k, v in os.environ.items() if k not in ("GE_PLUGIN_REGISTRY_SOCKET", "RUNTIME_DIRECTORY")}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(run), GE_PLUGIN_REGISTRY_CACHE=str(home / "c.json"))
    p = subprocess.run([os.path.join(BIN, "ge-plugin-registryd"), "--foreground", "--opp-path", str(opp)],
                       env=env, capture_output=True, text=True, timeout=60, **kwargs)
    assert p.returncode == 1, p.stderr
    assert str(run) in p.stderr and "0777" in p.stderr and "open to other users" in p.stderr
    assert not (run / "ge-plugin-registry.sock").exists()
    if os.geteuid() == 0:
        # A folder of another user (root's, for nobody) is refused too.
        os.chown(run, 0, 0)
        os.chmod(run, 0o700)
        p = subprocess.run([os.path.join(BIN, "ge-plugin-registryd"), "--foreground", "--opp-path", str(opp)],
                           env=env, capture_output=True, text=True, timeout=60, **kwargs)
        assert p.returncode == 1 and "belongs to uid 0" in p.stderr, p.stderr


def test_user_daemon_with_unwritable_cache_folder_serves_from_memory(opp, tmp_path):
    make_plugin(opp, "uwd", "OpsUwd")
    blocker = tmp_path / "blocker"
    blocker.write_text("x\n")
    sock = tmp_path / "u.sock"
    env = {k: v for k, v in os.environ.items() if k not in ("GE_PLUGIN_REGISTRY_CACHE", "CACHE_DIRECTORY")}
    env.update(XDG_CACHE_HOME=str(blocker / "cache"))
    if os.geteuid() == 0:
        pytest.skip("root's daemon uses the system cache; the per-user default is for other users")
    proc = subprocess.Popen([os.path.join(BIN, "ge-plugin-registryd"), "--foreground", "--opp-path", str(opp),
                             "--socket", str(sock)], env=env, stderr=subprocess.PIPE)
    try:
        assert wait_for(sock.exists, 30)
        st = Client(str(sock)).request({"cmd": "status"})
        assert st["plugins"] == 1 and st["cache_error"] and "cache" in st["cache_error"]
    finally:
        proc.terminate()
        proc.wait(15)


# ---- scan progress -----------------------------------------------------------------------------

def test_hanging_plugin_does_not_hide_the_others(opp, tmp_path, daemon_factory):
    make_plugin(opp, "base", "OpsBase")
    d = daemon_factory(opp, extra=["--timeout", "12"]).start()
    c = d.client()
    assert c.request({"cmd": "status"})["scan"] == {"in_progress": False, "pending": []}
    # Five plugins at once; the one that hangs comes first in path order, so
    # the others are queued behind it in its scanner.
    staging = tmp_path / "staging"
    staging.mkdir()
    make_plugin(staging, "a_hang", "OpsHang", body=HANG)
    for i in range(4):
        make_plugin(staging, f"b{i}", f"OpsB{i}")
    for f in sorted(os.listdir(staging)):
        os.rename(staging / f, opp / f)

    def four_listed():
        j = c.request({"cmd": "list"})
        return j if {f"b{i}" for i in range(4)} <= set(statuses(j["plugins"])) else None
    # Listed while the hanging one is still loading (its limit is 12 s).
    assert wait_for(four_listed, 10), d.read_log()
    j = four_listed()
    assert all(s == "ok" for n, s in statuses(j["plugins"]).items() if n != "a_hang")
    # The hanging one is still being scanned, and the listing says so.
    assert j["scan"]["in_progress"] is True
    assert j["scan"]["pending"] == [str(opp / "a_hang.py")]
    assert "a_hang" not in statuses(j["plugins"])
    env = {"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "x.json")}
    p = run_ls("--socket", d.socket, "--json", env=env)
    lj = json.loads(p.stdout)
    assert lj["source"] == "daemon" and lj["scan"]["in_progress"] is True
    assert lj["scan"]["pending"] == [str(opp / "a_hang.py")]
    p = run_ls("--socket", d.socket, env=env)
    assert "scan in progress: 1 plugin(s) still being scanned: " + str(opp / "a_hang.py") in p.stdout
    # At the limit it is marked hung and the scan is over.
    assert wait_for(lambda: c.request({"cmd": "status"})["scan"]["in_progress"] is False, 30), d.read_log()
    j = c.request({"cmd": "list"})
    assert statuses(j["plugins"])["a_hang"] == "hung"
    assert j["scan"] == {"in_progress": False, "pending": []}
    p = run_ls("--socket", d.socket, env=env)
    assert "scan in progress" not in p.stdout


def test_listing_scan_hands_queued_plugins_past_a_hanging_one(opp, tmp_path):
    """ge-plugin-ls scanning itself: the plugins queued behind a hanging one
    are scanned in the other scanner slot (a child gets its next plugin only
    after its record); each plugin
    still gets its own verdict (the hanging one "hung", the others "ok";
    killing the hanging plugin's child marks nothing else)."""
    make_plugin(opp, "a_hang", "OpsHang2", body=HANG)
    for i in range(6):
        make_plugin(opp, f"c{i}", f"OpsC{i}")
    env = no_daemon_env(tmp_path, tmp_path / "c.json")
    p = run_ls("--opp-path", str(opp), "--json", "--timeout", "4", env=env)
    j = json.loads(p.stdout)
    st = statuses(j["plugins"])
    assert st.pop("a_hang") == "hung"
    assert st == {f"c{i}": "ok" for i in range(6)}


# ---- --check -----------------------------------------------------------------------------------

def verdict_lines(out):
    return [ln for ln in out.splitlines() if "problems found" in ln or "problem(s) found" in ln]


def test_check_finds_conflicts_against_the_daemon_without_opp_path(opp, tmp_path, daemon_factory):
    make_plugin(opp, "installed", "OpsShared")
    d = daemon_factory(opp).start()
    mine = tmp_path / "mine.py"
    make_plugin(tmp_path, "mine", "OpsShared")
    env = {"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "none.json")}
    env_no_opp = {k: v for k, v in os.environ.items() if k != "ASCEND_CUSTOM_OPP_PATH"}
    env_no_opp.update(env)
    p = subprocess.run([os.path.join(BIN, "ge-plugin-ls"), "--check", str(mine), "--socket", d.socket],
                       capture_output=True, text=True, env=env_no_opp, timeout=60)
    assert p.returncode == 1, p.stdout
    assert "op_type 'OpsShared' is also defined by " + str(opp / "installed.py") in p.stdout
    assert "checked against: the registry daemon at " + d.socket in p.stdout
    lines = p.stdout.strip().splitlines()
    assert verdict_lines(p.stdout) == [lines[-1]] and lines[-1].startswith("1 problem(s) found")
    assert not any(ln.endswith(": ok") or ": ok (" in ln for ln in lines), p.stdout
    p = subprocess.run([os.path.join(BIN, "ge-plugin-ls"), "--check", str(mine), "--socket", d.socket, "--json"],
                       capture_output=True, text=True, env=env_no_opp, timeout=60)
    j = json.loads(p.stdout)
    assert j["ok"] is False and j["registry"]["source"] == "daemon" and j["registry"]["plugins"] == 1


def test_check_uses_the_cache_when_no_daemon_runs(opp, tmp_path, daemon_factory):
    make_plugin(opp, "cached", "OpsCached")
    d = daemon_factory(opp).start()
    d.stop()  # a daemon not running: its socket is gone, its cache stays
    make_plugin(tmp_path, "mine2", "OpsCached")
    env_no_opp = {k: v for k, v in os.environ.items() if k != "ASCEND_CUSTOM_OPP_PATH"}
    env_no_opp["GE_PLUGIN_REGISTRY_CACHE"] = str(tmp_path / "none.json")
    p = subprocess.run([os.path.join(BIN, "ge-plugin-ls"), "--check", str(tmp_path / "mine2.py"), "--socket",
                        d.socket, "--cache", d.cache], capture_output=True, text=True, env=env_no_opp, timeout=60)
    assert p.returncode == 1, p.stdout
    assert "also defined by " + str(opp / "cached.py") in p.stdout
    assert "checked against: the cache " + d.cache in p.stdout
    # Without --cache, the default cache (here GE_PLUGIN_REGISTRY_CACHE) is read.
    env_no_opp["GE_PLUGIN_REGISTRY_CACHE"] = d.cache
    p = subprocess.run([os.path.join(BIN, "ge-plugin-ls"), "--check", str(tmp_path / "mine2.py"), "--socket",
                        d.socket, "--json"], capture_output=True, text=True, env=env_no_opp, timeout=60)
    j = json.loads(p.stdout)
    assert j["registry"]["source"] == "cache" and j["ok"] is False
    # Nothing installed anywhere: checked on its own, and it says so.
    env_no_opp["GE_PLUGIN_REGISTRY_CACHE"] = str(tmp_path / "none.json")
    p = subprocess.run([os.path.join(BIN, "ge-plugin-ls"), "--check", str(tmp_path / "mine2.py"), "--socket",
                        d.socket], capture_output=True, text=True, env=env_no_opp, timeout=60)
    assert p.returncode == 0 and "checked against: nothing installed" in p.stdout
    assert p.stdout.strip().splitlines()[-1] == "no problems found (1 plugin(s) checked)"


def test_check_of_a_folder_with_several_plugins_checks_each(tmp_path):
    folder = tmp_path / "several"
    folder.mkdir()
    os.chmod(tmp_path, 0o755)
    make_plugin(folder, "one", "OpsOne")
    make_plugin(folder, "two", "OpsTwo")
    make_plugin(folder, "three", "OpsOne")  # conflicts with one
    env = no_daemon_env(tmp_path, tmp_path / "none.json")
    p = run_ls("--check", str(folder), env=env)
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.count("checking ") == 3
    lines = p.stdout.strip().splitlines()
    assert verdict_lines(p.stdout) == [lines[-1]]
    assert lines[-1] == "1 problem(s) found in 1 of 3 plugin(s) checked"
    j = json.loads(run_ls("--check", str(folder), "--json", env=env).stdout)
    assert [os.path.basename(r["path"]) for r in j["plugins"]] == ["one.py", "three.py", "two.py"]
    assert [r["ok"] for r in j["plugins"]] == [True, False, True]


def test_check_of_a_folder_with_init_and_several_plugins_says_why(tmp_path):
    """A folder with __init__.py is one package plugin (the discovery's rule);
    when it registers nothing but holds modules, the hint says how to make it
    an opp folder."""
    folder = tmp_path / "pk"
    folder.mkdir()
    os.chmod(tmp_path, 0o755)
    make_plugin(folder, "one", "OpsPkOne")
    make_plugin(folder, "two", "OpsPkTwo")
    (folder / "__init__.py").write_text("")
    env = no_daemon_env(tmp_path, tmp_path / "none.json")
    p = run_ls("--check", str(folder), env=env)
    assert p.returncode == 1
    assert str(folder) + " registers no op" in p.stdout and "remove its __init__.py" in p.stdout
    # Without it, the folder is an opp folder: each plugin is checked.
    os.unlink(folder / "__init__.py")
    p = run_ls("--check", str(folder), env=env)
    assert p.returncode == 0 and p.stdout.count("checking ") == 2
    assert p.stdout.strip().splitlines()[-1] == "no problems found (2 plugin(s) checked)"


def test_check_of_an_opp_root_with_init_checks_each(tmp_path):
    """An opp root is checked as one, even with an __init__.py: a package has
    no op_graph/lib/linux/<arch>/ folder."""
    from registry_helpers import make_opp_root
    root = tmp_path / "root"
    root.mkdir()
    os.chmod(tmp_path, 0o755)
    lib_dir = make_opp_root(root, [])
    make_plugin(root, "rp1", "OpsRp1")
    make_plugin(root, "rp2", "OpsRp2")
    (root / "__init__.py").write_text("")
    os.chmod(root / "__init__.py", 0o644)
    assert os.path.isdir(lib_dir)
    env = no_daemon_env(tmp_path, tmp_path / "none.json")
    p = run_ls("--check", str(root), "--json", env=env)
    j = json.loads(p.stdout)
    assert sorted(os.path.basename(r["path"]) for r in j["plugins"]) == ["rp1.py", "rp2.py"], p.stdout
