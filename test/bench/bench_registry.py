#!/usr/bin/env python3
"""Registry benchmark: generates N small plugins (default 1000), then reports
the cold scan time per plugin and the warm `ge-plugin-ls --json` wall time
through the daemon and through the cache (medians). Targets (share/docs/host-design.md, "Targets"):
cold scan <= 5 ms per plugin, warm ls --json over 1000 plugins <= 20 ms.

usage: bench_registry.py [--plugins N] [--repeat R] [--bin DIR]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "registry"))
from registry_helpers import make_plugin, wait_for  # noqa: E402


def timed(cmd, env):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed: {p.stderr.decode()}")
    return dt, json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugins", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--bin", default=os.environ.get("GE_REGISTRY_BIN", "build/bin"))
    a = ap.parse_args()
    ls = os.path.join(a.bin, "ge-plugin-ls")
    regd = os.path.join(a.bin, "ge-plugin-registryd")
    work = tempfile.mkdtemp(prefix="ge-reg-bench-")
    os.chmod(work, 0o755)
    opp = os.path.join(work, "opp")
    os.mkdir(opp)
    for i in range(a.plugins):
        make_plugin(opp, f"p{i:05d}", f"BenchRegOp{i}", version=f"1.0.{i}")
    env = dict(os.environ)
    env["GE_PLUGIN_REGISTRY_CACHE"] = os.path.join(work, "cache.json")
    env["GE_PLUGIN_REGISTRY_SOCKET"] = os.path.join(work, "none.sock")
    env.pop("GE_LOG_LEVEL", None)
    try:
        # cold: no cache, scan everything (2 scanner processes)
        dt, j = timed([ls, "--opp-path", opp, "--json", "--no-daemon"], env)
        assert j["source"] == "scan" and len(j["plugins"]) == a.plugins
        bad = [p for p in j["plugins"] if p["status"] != "ok"]
        assert not bad, bad[:3]
        cold_ms = dt * 1000 / a.plugins
        # warm, through the cache
        cache_t = []
        for _ in range(a.repeat):
            dt, j = timed([ls, "--opp-path", opp, "--json", "--no-daemon"], env)
            assert j["source"] == "cache"
            cache_t.append(dt * 1000)
        # warm, through the daemon
        sock = os.path.join(work, "d.sock")
        d = subprocess.Popen([regd, "--foreground", "--opp-path", opp, "--socket", sock, "--cache",
                              os.path.join(work, "dcache.json")], stderr=subprocess.DEVNULL)
        t0 = time.perf_counter()
        assert wait_for(lambda: os.path.exists(sock), 120)
        daemon_cold_ms = (time.perf_counter() - t0) * 1000 / a.plugins
        daemon_t = []
        for _ in range(a.repeat):
            dt, j = timed([ls, "--socket", sock, "--json"], env)
            assert j["source"] == "daemon" and len(j["plugins"]) == a.plugins
            daemon_t.append(dt * 1000)
        d.send_signal(signal.SIGTERM)
        d.wait(30)
        print(f"registry benchmark: {a.plugins} plugins, {a.repeat} runs each (median)")
        print(f"  cold scan (ge-plugin-ls --no-daemon, no cache): {cold_ms:.2f} ms/plugin   (target <= 5)")
        print(f"  cold scan (daemon start-up, incl. process start):  {daemon_cold_ms:.2f} ms/plugin")
        print(f"  warm ge-plugin-ls --json via daemon: {statistics.median(daemon_t):.1f} ms wall   (target <= 20)")
        print(f"  warm ge-plugin-ls --json via cache:  {statistics.median(cache_t):.1f} ms wall   (target <= 20)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
