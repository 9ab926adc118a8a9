"""The daemon under pressure (share/docs/registry.md, "Limits"): a connection
cap, an idle timeout, backing off when out of file descriptors (no spinning, a
rate-limited log), and failed cache writes that `status` reports."""
import os
import resource
import socket
import time

import pytest

from registry_helpers import make_plugin, run_ls, wait_for


def raw_connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s


def read_line(s):
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_connections_over_the_cap_get_an_error_and_the_others_still_work(opp, daemon_factory):
    make_plugin(opp, "p1", "P1Op")
    d = daemon_factory(opp, extra=["--max-connections", "3"]).start()
    held = [raw_connect(d.socket) for _ in range(3)]
    over = raw_connect(d.socket)
    reply = read_line(over)
    assert b'"ok":false' in reply and b"too many connections (limit 3)" in reply, reply
    assert read_line(over) == b""  # closed after the answer
    held[0].close()
    # Once the daemon has seen the close (asynchronously), a new client is served again.
    got = []
    assert wait_for(lambda: _status_ok(d, got), 5)
    assert got[-1]["max_connections"] == 3 and got[-1]["connections"] <= 3
    for s in held[1:]:
        s.close()


def test_idle_connections_are_closed_after_the_timeout(opp, daemon_factory):
    make_plugin(opp, "p1", "P1Op")
    d = daemon_factory(opp, extra=["--idle-timeout", "0.3"]).start()
    idle = raw_connect(d.socket)
    start = time.monotonic()
    assert read_line(idle) == b""  # the daemon closed it
    assert 0.2 < time.monotonic() - start < 5
    # A client that keeps talking is never cut off by the timeout.
    c = d.client()
    for _ in range(4):
        time.sleep(0.15)
        assert c.request({"cmd": "status"})["ok"]
    assert c.request({"cmd": "status"})["idle_timeout_s"] == pytest.approx(0.3)


@pytest.mark.parametrize("args", [["--max-connections", "0"], ["--idle-timeout", "0"], ["--idle-timeout", "-1"],
                                  ["--max-connections", "x"]])
def test_bad_limits_are_usage_errors(opp, daemon_factory, args):
    import subprocess
    from registry_helpers import BIN
    p = subprocess.run([os.path.join(BIN, "ge-plugin-registryd"), "--foreground", "--opp-path", str(opp), *args],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, p.stderr


def test_out_of_file_descriptors_the_daemon_backs_off_instead_of_spinning(opp, daemon_factory):
    """prlimit --nofile=64 and 100 idle connections: accept fails with EMFILE."""
    make_plugin(opp, "p1", "P1Op")
    d = daemon_factory(opp)
    limit = (64, 64)
    import subprocess
    orig_popen = subprocess.Popen

    def limited(*a, **k):
        k["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, limit)
        return orig_popen(*a, **k)

    subprocess.Popen = limited
    try:
        d.start()
    finally:
        subprocess.Popen = orig_popen
    conns = []
    for _ in range(100):
        try:
            conns.append(raw_connect(d.socket))
        except OSError:
            break
    log_before = len(d.read_log().splitlines())
    cpu_before = cpu_seconds(d.proc.pid)
    time.sleep(3)
    cpu = cpu_seconds(d.proc.pid) - cpu_before
    lines = d.read_log().splitlines()[log_before:]
    accept_lines = [line for line in lines if "accept failed" in line]
    assert cpu < 0.5, f"the daemon used {cpu:.2f} s of CPU in 3 s while out of descriptors"
    assert len(accept_lines) <= 3, f"{len(accept_lines)} accept warnings in 3 s:\n" + "\n".join(accept_lines[:10])
    assert d.proc.poll() is None
    for s in conns:
        s.close()
    # Descriptors are free again: the daemon serves (after at most one back-off).
    assert wait_for(lambda: _status_ok(d), 10)


def _status_ok(d, got=None):
    """True when a new client gets through the handshake and a status (appended to ``got``)."""
    try:
        c = d.client()
    except (OSError, AssertionError, TypeError):
        return False
    try:
        status = c.request({"cmd": "status"})
        if got is not None:
            got.append(status)
        return bool(status["ok"])
    except (OSError, TypeError):
        return False
    finally:
        c.close()


def test_a_failed_cache_write_is_reported_by_status_and_ls(opp, daemon_factory, tmp_path):
    make_plugin(opp, "p1", "P1Op")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder should be")
    cache = str(blocker / "registry.json")
    d = daemon_factory(opp)
    d.cache = cache
    d.start()
    status = d.client().request({"cmd": "status"})
    assert status["ok"] and status["cache_error"] and "cannot write" in status["cache_error"], status
    assert status["counts"].get("ok") == 1  # the listing itself is served
    res = run_ls("--opp-path", str(opp), "--no-daemon", "--cache", cache, "--json")
    assert res.returncode == 0, res.stderr
    assert "ge-plugin-ls: warning: cannot write" in res.stderr, res.stderr


def test_status_reports_no_cache_error_when_the_write_worked(opp, daemon_factory):
    make_plugin(opp, "p1", "P1Op")
    d = daemon_factory(opp).start()
    assert d.client().request({"cmd": "status"})["cache_error"] is None
