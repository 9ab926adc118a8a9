"""ge-plugin-registryd: protocol, statuses of broken plugins, concurrency,
inotify, cache robustness, SO_PEERCRED, insecure plugins."""
import json
import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

from registry_helpers import BIN, PLUGIN, Client, make_plugin, run_ls, statuses, wait_for


def broken_set(opp):
    make_plugin(opp, "a_good", "RegGood", version="2.5")
    make_plugin(opp, "b_segv", "RegSegv", pre="import ctypes\nctypes.string_at(0)")
    make_plugin(opp, "c_loop", "RegLoop", pre="while True:\n    pass")
    make_plugin(opp, "d_exit", "RegExit", pre="import os\nos._exit(7)")
    make_plugin(opp, "e_syntax", "RegSyntax", body="def broken(:\n    pass\n")
    make_plugin(opp, "f_dup1", "RegDup")
    make_plugin(opp, "g_dup2", "RegDup")


def test_broken_plugins_each_get_their_status(opp, daemon_factory):
    broken_set(opp)
    d = daemon_factory(opp).start(timeout=60)
    c = d.client()
    r = c.request({"cmd": "list"})
    assert r["ok"] and r["source"] == "daemon"
    by = {p["name"]: p for p in r["plugins"]}
    assert statuses(r["plugins"]) == {"a_good": "ok", "b_segv": "crashed", "c_loop": "hung", "d_exit": "exited",
                                      "e_syntax": "error", "f_dup1": "ok", "g_dup2": "conflict"}
    assert "SIGSEGV" in by["b_segv"]["error"]
    assert "within 2 s" in by["c_loop"]["error"]
    assert "code 7" in by["d_exit"]["error"]
    assert "SyntaxError" in by["e_syntax"]["error"]
    assert "f_dup1.py" in by["g_dup2"]["error"] and "g_dup2.py" in by["g_dup2"]["error"]
    assert by["a_good"]["version"] == "2.5"
    assert by["a_good"]["ops"] == [{"op_type": "RegGood", "capabilities": ["eager_execute", "infer_meta"]}]
    # show: prototype, implementation, error location
    s = c.request({"cmd": "show", "name": "a_good"})
    assert s["ok"]
    op = s["plugin"]["ops"][0]
    assert op["prototype"]["inputs"] == [{"name": "x", "kind": "required"}]
    assert op["prototype"]["attrs"] == [{"name": "alpha", "type": "VT_INT", "required": False, "default": 1}]
    assert s["plugin"]["description"] == "Plugin a_good."
    e = c.request({"cmd": "show", "name": "e_syntax"})["plugin"]
    assert e["error_file"].endswith("e_syntax.py") and e["error_line"] == 1
    assert c.request({"cmd": "show", "name": "b_segv"})["plugin"]["signal_name"] == "SIGSEGV"
    assert c.request({"cmd": "show", "op_type": "RegGood"})["plugin"]["name"] == "a_good"
    assert not c.request({"cmd": "show", "name": "nope"})["ok"]
    st = c.request({"cmd": "status"})
    assert st["ok"] and st["plugins"] == 7 and st["counts"]["ok"] == 2 and st["pid"] == d.proc.pid
    # The marks stay until the files change: a refresh reuses them.
    os.utime(os.path.join(opp, "b_segv.py"))  # touched, content unchanged
    r2 = c.request({"cmd": "rescan", "path": "/nonexistent"})  # not a plugin of this registry: an error
    assert not r2["ok"] and "no plugin with path '/nonexistent'" in r2["error"]
    assert not c.request({"cmd": "rescan", "path": 5})["ok"]
    time.sleep(0.3)  # the touch's refresh (inotify) has run
    assert statuses(c.request({"cmd": "list"})["plugins"])["b_segv"] == "crashed"
    # Fixing it changes the files: rescanned and ok within 1 s.
    make_plugin(opp, "b_segv", "RegSegv")
    assert wait_for(lambda: statuses(c.request({"cmd": "list"})["plugins"])["b_segv"] == "ok", 1.0)
    # Removing the first of the duplicates makes the second win.
    os.remove(os.path.join(opp, "f_dup1.py"))
    assert wait_for(lambda: statuses(c.request({"cmd": "list"})["plugins"]).get("g_dup2") == "ok", 1.0)
    assert d.proc.poll() is None
    c.close()
    assert d.stop() == 0
    assert not os.path.exists(d.socket)


def test_add_change_remove_seen_within_1s(opp, daemon_factory):
    make_plugin(opp, "one", "RegOne")
    d = daemon_factory(opp).start()
    c = d.client()
    ops = lambda: {o["op_type"] for p in c.request({"cmd": "list"})["plugins"] for o in p["ops"]}  # noqa: E731
    assert ops() == {"RegOne"}
    t0 = time.monotonic()
    make_plugin(opp, "two", "RegTwo")
    assert wait_for(lambda: ops() == {"RegOne", "RegTwo"}, 1.0), time.monotonic() - t0
    make_plugin(opp, "two", "RegTwoChanged")
    assert wait_for(lambda: ops() == {"RegOne", "RegTwoChanged"}, 1.0)
    # a package plugin: a change inside it is seen too
    pkg = opp / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .impl import *\n")
    make_plugin(pkg, "impl", "RegPkg")
    assert wait_for(lambda: "RegPkg" in ops(), 1.0)
    make_plugin(pkg, "impl", "RegPkg2")
    assert wait_for(lambda: "RegPkg2" in ops() and "RegPkg" not in ops(), 1.0)
    os.remove(opp / "one.py")
    assert wait_for(lambda: ops() == {"RegTwoChanged", "RegPkg2"}, 1.0)
    c.close()


def test_a_plugin_added_during_the_first_scan_is_seen(opp, daemon_factory):
    # "first" writes "second.py" while the daemon's first scan imports it: the
    # daemon must already watch the folder then, or the new file waits for an
    # unrelated change (its watches were once set up only after that scan).
    second = PLUGIN.format(doc="Written during the first scan.", pre="", version="1.0", op="RegDuringScan2")
    pre = (f"import os as _os\n_p = _os.path.join({str(opp)!r}, 'second.py')\n"
           f"if not _os.path.exists(_p):\n"
           f"    open(_p + '.tmp', 'w').write({second!r})\n"
           f"    _os.chmod(_p + '.tmp', 0o644)\n"
           f"    _os.rename(_p + '.tmp', _p)\n")
    make_plugin(opp, "first", "RegDuringScan1", pre=pre)
    d = daemon_factory(opp).start()
    c = d.client()
    ops = lambda: {o["op_type"] for p in c.request({"cmd": "list"})["plugins"] for o in p["ops"]}  # noqa: E731
    assert (opp / "second.py").exists()
    assert wait_for(lambda: ops() == {"RegDuringScan1", "RegDuringScan2"}, 5.0), (ops(), d.read_log())
    c.close()


def test_concurrent_clients(opp, daemon_factory):
    for i in range(5):
        make_plugin(opp, f"p{i}", f"RegConc{i}")
    d = daemon_factory(opp).start()
    errors = []

    def worker(k):
        try:
            c = d.client()
            for i in range(200):
                req = {"cmd": "list"} if i % 3 else {"cmd": "status"}
                r = c.request(req)
                if not r or not r.get("ok"):
                    errors.append(r)
                elif req["cmd"] == "list" and len(r["plugins"]) != 5:
                    errors.append(r)
            c.close()
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert d.proc.poll() is None


def test_malformed_and_oversized_requests(opp, daemon_factory):
    make_plugin(opp, "p", "RegMal")
    d = daemon_factory(opp).start()
    c = Client(d.socket, hello=False)
    r = c.request({"cmd": "list"})
    assert not r["ok"] and "handshake" in r["error"]
    assert c.request({"cmd": "hello", "protocol": 1})["ok"]
    for raw in [b"not json\n", b"[1,2]\n", b"{\"cmd\": 5}\n", b"{}\n", b"\xff\xfe\n", b"\n"]:
        c.send_raw(raw)
        r = c.read()
        assert r and not r["ok"] and "malformed" in r["error"], raw
    r = c.request({"cmd": "frobnicate"})
    assert not r["ok"] and "unknown cmd" in r["error"]
    assert c.request({"cmd": "list"})["ok"]  # the connection still works
    c.close()
    # wrong protocol version: error and close
    c = Client(d.socket, hello=False)
    r = c.request({"cmd": "hello", "protocol": 99})
    assert not r["ok"] and r["protocol"] == 1
    assert c.read() is None
    c.close()
    # oversized: error reply, connection closed, daemon alive
    c = Client(d.socket)
    c.send_raw(b"{\"cmd\": \"list\", \"pad\": \"" + b"x" * 200000 + b"\"}\n")
    r = c.read()
    assert not r["ok"] and "exceeds" in r["error"]
    c.close()
    # a client that disconnects mid-line
    c = Client(d.socket)
    c.send_raw(b"{\"cmd\": \"li")
    c.close()
    c = d.client()
    assert c.request({"cmd": "list"})["ok"]
    c.close()
    assert d.proc.poll() is None


@pytest.mark.parametrize("damage", ["truncate", "garbage", "foreign", "older"])
def test_damaged_cache_is_rebuilt(opp, daemon_factory, damage):
    make_plugin(opp, "p", "RegCache")
    d = daemon_factory(opp).start()
    assert d.stop() == 0
    data = open(d.cache, "rb").read()
    version = json.loads(data)["version"]  # the build's (share/docs/registry.md, "Cache format")
    assert isinstance(version, int) and version >= 4
    if damage == "older":  # the previous format: its records lack fields, so it is not read
        j = json.loads(data)
        j["version"] = version - 1
        open(d.cache, "w").write(json.dumps(j))
    elif damage == "truncate":
        open(d.cache, "wb").write(data[: len(data) // 2])
    elif damage == "garbage":
        open(d.cache, "wb").write(b"\x00\x01garbage" * 10)
    else:
        j = json.loads(data)
        j["version"] = 999
        open(d.cache, "w").write(json.dumps(j))
    d.start()
    c = d.client()
    assert statuses(c.request({"cmd": "list"})["plugins"]) == {"p": "ok"}
    c.close()
    assert "rebuilding" in d.read_log()
    assert json.loads(open(d.cache, "rb").read())["version"] == version
    assert not [f for f in os.listdir(os.path.dirname(d.cache)) if ".tmp" in f]


def test_sighup_rescans_and_sigterm_stops(opp, daemon_factory):
    make_plugin(opp, "p", "RegHup")
    d = daemon_factory(opp).start()
    c = d.client()
    g0 = c.request({"cmd": "status"})["generation"]
    d.proc.send_signal(signal.SIGHUP)
    assert wait_for(lambda: c.request({"cmd": "status"})["generation"] > g0, 5)
    c.close()
    assert d.stop() == 0
    assert not os.path.exists(d.socket)


def test_socket_not_world_accessible(opp, daemon_factory):
    make_plugin(opp, "p", "RegPerm")
    d = daemon_factory(opp).start()
    assert os.stat(d.socket).st_mode & 0o007 == 0
    # a second daemon on the same socket refuses to start (exit 1)
    p = subprocess.run([os.path.join(BIN, "ge-plugin-registryd"), "--foreground", "--opp-path", str(opp), "--socket",
                        d.socket, "--cache", d.cache + ".2"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "another registry daemon" in p.stderr
    c = d.client()
    assert c.request({"cmd": "list"})["ok"]
    c.close()
    # usage errors exit 2
    for args in (["--bogus"], ["--opp"], ["--opp-path", str(opp), "--jobs", "0"]):
        p = subprocess.run([os.path.join(BIN, "ge-plugin-registryd"), "--foreground", *args], capture_output=True,
                           timeout=30)
        assert p.returncode == 2, args


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_other_user_cannot_rescan(opp, daemon_factory):
    make_plugin(opp, "p", "RegPeer")
    d = daemon_factory(opp, extra=["--socket-group", "nogroup"]).start()
    assert os.stat(d.socket).st_mode & 0o777 == 0o660
    script = (
        "import json,socket,sys\n"
        "s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f=s.makefile('rb')\n"
        "def q(r): s.sendall((json.dumps(r)+'\\n').encode()); return json.loads(f.readline())\n"
        "print(json.dumps([q({'cmd':'hello','protocol':1}), q({'cmd':'list'}), q({'cmd':'rescan'})]))\n")
    p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", "-c",
                        script, d.socket], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    hello, lst, rescan = json.loads(p.stdout)
    assert hello["ok"] and lst["ok"] and len(lst["plugins"]) == 1
    assert not rescan["ok"] and rescan["code"] == "forbidden" and "uid 65534" in rescan["error"]
    c = d.client()  # root may
    assert c.request({"cmd": "rescan"})["ok"]
    c.close()


def test_insecure_plugins_are_refused(opp, daemon_factory):
    make_plugin(opp, "fine", "RegFine")
    bad = make_plugin(opp, "writable", "RegWritable")
    os.chmod(bad, 0o666)
    if os.geteuid() == 0:
        owned = make_plugin(opp, "owned", "RegOwned")
        os.chown(owned, 65534, 65534)
    d = daemon_factory(opp).start()
    c = d.client()
    by = {p["name"]: p for p in c.request({"cmd": "list"})["plugins"]}
    assert by["fine"]["status"] == "ok"
    assert by["writable"]["status"] == "insecure" and "writable by others" in by["writable"]["error"]
    assert by["writable"]["ops"] == []
    if os.geteuid() == 0:
        assert by["owned"]["status"] == "insecure" and "owned by user nobody" in by["owned"]["error"]
    os.chmod(bad, 0o644)
    assert wait_for(lambda: statuses(c.request({"cmd": "list"})["plugins"])["writable"] == "ok", 1.0)
    c.close()
    d.stop()
    os.chmod(bad, 0o666)
    d2 = daemon_factory(opp, extra=["--allow-insecure"]).start()
    c = d2.client()
    assert statuses(c.request({"cmd": "list"})["plugins"])["writable"] == "ok"
    c.close()


def test_symlink_out_of_opp_folder_is_refused(opp, tmp_path, daemon_factory):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = make_plugin(outside, "evil", "RegEvil")
    os.symlink(target, opp / "evil.py")
    make_plugin(opp, "fine", "RegFine2")
    d = daemon_factory(opp).start()
    c = d.client()
    by = {p["name"]: p for p in c.request({"cmd": "list"})["plugins"]}
    assert by["evil"]["status"] == "insecure" and "outside its opp folder" in by["evil"]["error"]
    assert by["fine"]["status"] == "ok"
    c.close()
