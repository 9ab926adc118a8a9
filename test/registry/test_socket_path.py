"""The daemon's socket path is user input (share/docs/registry.md): a path too
long for a Unix socket is an error naming it and the limit, however it is given;
anything at that path that is not a stale socket is never deleted."""
import os
import socket
import subprocess

import pytest

from registry_helpers import BIN, make_plugin, run_ls

LIMIT = 107  # sizeof(sockaddr_un.sun_path) - 1 on Linux


def long_path(tmp_path):
    d = tmp_path / ("d" * 60) / ("e" * 60)
    d.mkdir(parents=True)
    p = str(d / "registry.sock")
    assert len(p) > LIMIT
    return p


def run_daemon(opp, *args, env=None, timeout=30):
    e = dict(os.environ)
    for k in ("GE_PLUGIN_REGISTRY_SOCKET", "RUNTIME_DIRECTORY"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([os.path.join(BIN, "ge-plugin-registryd"), "--foreground", "--opp-path", str(opp),
                           "--timeout", "2", *args], capture_output=True, text=True, env=e, timeout=timeout)


@pytest.mark.parametrize("how", ["--socket", "GE_PLUGIN_REGISTRY_SOCKET", "RUNTIME_DIRECTORY"])
def test_daemon_refuses_a_socket_path_too_long(opp, tmp_path, how):
    make_plugin(opp, "p1", "P1Op")
    path = long_path(tmp_path)
    cache = str(tmp_path / "c.json")
    if how == "--socket":
        res = run_daemon(opp, "--socket", path, "--cache", cache)
    elif how == "GE_PLUGIN_REGISTRY_SOCKET":
        res = run_daemon(opp, "--cache", cache, env={how: path})
    else:
        path = os.path.join(os.path.dirname(path), "registry.sock")
        res = run_daemon(opp, "--cache", cache, env={how: os.path.dirname(path)})
    assert res.returncode == 1, (res.returncode, res.stderr)
    assert f"socket path {path} is {len(path)} bytes long" in res.stderr, res.stderr
    assert f"at most {LIMIT} bytes" in res.stderr
    assert "terminate called" not in res.stderr


def test_plugin_ls_refuses_a_socket_path_too_long(opp, tmp_path):
    path = long_path(tmp_path)
    res = run_ls("--opp-path", str(opp), "--socket", path, "--cache", str(tmp_path / "c.json"))
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert f"is {len(path)} bytes long" in res.stderr and f"at most {LIMIT} bytes" in res.stderr


@pytest.mark.parametrize("kind", ["file", "symlink", "dangling-symlink", "directory", "fifo"])
def test_daemon_never_deletes_what_is_not_a_socket(opp, tmp_path, kind):
    make_plugin(opp, "p1", "P1Op")
    at = tmp_path / "s.sock"
    target = tmp_path / "precious.json"
    target.write_text('{"keep": true}')
    if kind == "file":
        at.write_text("the cache, given as --socket by mistake")
    elif kind == "symlink":
        at.symlink_to(target)
    elif kind == "dangling-symlink":
        at.symlink_to(tmp_path / "nowhere")
    elif kind == "directory":
        at.mkdir()
    else:
        os.mkfifo(at)
    before = os.lstat(at)
    res = run_daemon(opp, "--socket", str(at), "--cache", str(tmp_path / "c.json"))
    assert res.returncode == 1, (res.returncode, res.stderr)
    assert f"cannot serve {at}: it exists and is not a socket" in res.stderr, res.stderr
    after = os.lstat(at)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert target.read_text() == '{"keep": true}'


def test_daemon_replaces_a_stale_socket(opp, tmp_path, daemon_factory):
    """A socket nobody listens on (a crashed daemon's) is replaced."""
    make_plugin(opp, "p1", "P1Op")
    d = daemon_factory(opp)
    os.makedirs(os.path.dirname(d.socket), exist_ok=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(d.socket)
    stale.close()
    d.start()
    assert d.client().request({"cmd": "list"})["ok"]
