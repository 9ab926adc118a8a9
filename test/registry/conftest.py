"""Fixtures for the registry tests: temporary opp folders, a daemon on a
temporary socket and cache, and a small protocol client."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from registry_helpers import BIN, Client, make_plugin, wait_for  # noqa: E402


@pytest.fixture(autouse=True)
def private_xdg(tmp_path, monkeypatch):
    """Every tool run by a test keeps its per-user cache (the listing caches
    of share/docs/registry.md, "Which cache") in the test's own folder, never
    in the real ~/.cache, and never meets the machine's daemon or cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    # Nor the machine's daemon or cache (which --check consults): a test
    # that wants one names it.
    monkeypatch.setenv("GE_PLUGIN_REGISTRY_SOCKET", str(tmp_path / "no-daemon.sock"))
    monkeypatch.setenv("GE_PLUGIN_REGISTRY_CACHE", str(tmp_path / "default-cache" / "registry.json"))


@pytest.fixture
def opp(tmp_path):
    d = tmp_path / "opp"
    d.mkdir()
    os.chmod(tmp_path, 0o755)
    return d


class Daemon:
    def __init__(self, opp_path, tmp, extra=()):
        self.dir = tempfile.mkdtemp(prefix="ge-reg-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        self.socket = os.path.join(self.dir, "s.sock")
        self.cache = os.path.join(self.dir, "cache", "registry.json")
        self.opp_path = str(opp_path)
        self.extra = list(extra)
        self.proc = None
        self.log = os.path.join(self.dir, "daemon.log")

    def start(self, timeout=20):
        limit = [] if "--timeout" in self.extra else ["--timeout", "2"]
        cmd = [os.path.join(BIN, "ge-plugin-registryd"), "--foreground", "--opp-path", self.opp_path,
               "--socket", self.socket, "--cache", self.cache, "--log-level", "info"] + limit + self.extra
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=self.logf)
        assert wait_for(lambda: self._accepts() or self.proc.poll() is not None, timeout), \
            "daemon did not come up"
        assert self.proc.poll() is None, self.read_log()
        return self

    def _accepts(self):
        """True once the socket accepts connections (the file exists a moment
        before the daemon listens on it)."""
        import socket as _socket
        if not os.path.exists(self.socket):
            return False
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            s.connect(self.socket)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def read_log(self):
        with open(self.log, "r", errors="replace") as f:
            return f.read()

    def client(self):
        return Client(self.socket)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.logf.close()
        return self.proc.returncode if self.proc else None


@pytest.fixture
def daemon_factory(tmp_path):
    made = []

    def make(opp_path, extra=()):
        d = Daemon(opp_path, tmp_path, extra)
        made.append(d)
        return d

    yield make
    for d in made:
        d.stop()
        subprocess.run(["rm", "-rf", d.dir])
