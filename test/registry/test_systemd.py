"""ge-plugin-registryd as the systemd units run it (share/systemd/, share/docs/registry.md,
"systemd"): socket activation (the socket is systemd's), Type=notify (READY=1 once
serving, STOPPING=1), and a daemon that is not root still loads root-owned plugins
(when the tests run as root, the daemon runs as nobody: the unit's DynamicUser=)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile

import pytest

from registry_helpers import BIN, Client, make_plugin

NOBODY = 65534


def _notifications(sock, timeout):
    """Every sd_notify datagram received within `timeout` seconds after the first."""
    sock.settimeout(timeout)
    got = []
    try:
        while True:
            got.append(sock.recv(4096).decode())
            sock.settimeout(0.2)
    except socket.timeout:
        pass
    return got


@pytest.fixture
def world():
    """A folder everyone may traverse: an opp folder with a root-owned plugin,
    a cache folder the daemon's user owns, the listening and notify sockets."""
    d = tempfile.mkdtemp(prefix="ge-sd-", dir="/tmp")
    os.chmod(d, 0o755)
    opp = os.path.join(d, "opp")
    os.mkdir(opp)
    os.chmod(opp, 0o755)
    make_plugin(opp, "sd_probe", "SdProbeCustom")
    cache = os.path.join(d, "cache")
    os.mkdir(cache)
    if os.geteuid() == 0:
        os.chown(cache, NOBODY, NOBODY)
    yield d, opp, cache
    shutil.rmtree(d, ignore_errors=True)


def test_socket_activation_and_notify_as_a_user_without_privileges(world):
    d, opp, cache = world
    path = os.path.join(d, "registry.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o666)  # the .socket unit's SocketMode/Group play this part
    listener.listen(16)
    notify_path = os.path.join(d, "notify.sock")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    os.chmod(notify_path, 0o666)

    env = dict(os.environ, NOTIFY_SOCKET=notify_path, LISTEN_FDS="1")
    env.pop("GE_PLUGIN_REGISTRY_SOCKET", None)
    # LISTEN_PID is the daemon's own pid: a shell sets it and execs the daemon.
    cmd = ["sh", "-c", 'LISTEN_PID=$$ exec "$0" "$@"', os.path.join(BIN, "ge-plugin-registryd"), "--foreground",
           "--opp-path", opp, "--cache", os.path.join(cache, "registry.json"), "--log-level", "info"]
    as_root = os.geteuid() == 0
    if as_root:
        if shutil.which("setpriv") is None:
            pytest.skip("setpriv (util-linux) is needed to run the daemon as nobody")
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] + cmd
    fd = listener.fileno()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: os.dup2(fd, 3), pass_fds=(3,))
    try:
        ready = _notifications(notify, 30)
        assert any(m.startswith("READY=1") for m in ready), (ready, proc.poll())
        assert any(path in m for m in ready), ready  # STATUS names the inherited socket
        # Served over the socket systemd (here: the test) made; the daemon never bound one.
        c = Client(path)
        r = c.request({"cmd": "list"})
        c.close()
        assert r["ok"], r
        assert {p["name"]: p["status"] for p in r["plugins"]} == {"sd_probe": "ok"}, r
        if as_root:
            with open(f"/proc/{proc.pid}/status") as f:
                uid_line = next(line for line in f if line.startswith("Uid:"))
            assert uid_line.split()[1:] == [str(NOBODY)] * 4, uid_line
        # The cache is written by the unprivileged daemon.
        with open(os.path.join(cache, "registry.json")) as f:
            assert any(r["path"].endswith("sd_probe.py") for r in json.load(f)["plugins"])
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=30)[0].decode()
        assert proc.returncode == 0, out
        assert any(m.startswith("STOPPING=1") for m in _notifications(notify, 5))
        # The socket file is the socket unit's: the daemon leaves it in place.
        assert os.path.exists(path)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        listener.close()
        notify.close()


def test_socket_activation_with_a_socket_that_does_not_listen_is_an_error(world):
    d, opp, cache = world
    a, b = socket.socketpair()
    cmd = ["sh", "-c", 'LISTEN_PID=$$ exec "$0" "$@"', os.path.join(BIN, "ge-plugin-registryd"), "--foreground",
           "--opp-path", opp, "--cache", os.path.join(cache, "registry.json")]
    fd = a.fileno()
    p = subprocess.run(cmd, env=dict(os.environ, LISTEN_FDS="1"), capture_output=True, text=True, timeout=30,
                       preexec_fn=lambda: os.dup2(fd, 3), pass_fds=(3,))
    a.close()
    b.close()
    assert p.returncode == 1, p.stderr
    assert "not a listening Unix stream socket" in p.stderr, p.stderr
