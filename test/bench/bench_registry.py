#!/usr/bin/env python3
"""Registry benchmark, beside its peer: GStreamer's registry of Python elements.

Generates N small plugins (default 1000) and, when `gst-inspect-1.0` and
GStreamer's Python plugin loader (Debian: gstreamer1.0-tools,
gstreamer1.0-python3-plugin-loader) are installed, N Python elements for
GStreamer (a `python/` folder under a GST_PLUGIN_PATH folder, one .py file per
element registering it through `__gstelementfactory__`). Then, in one run:

- cold scan: ours per plugin (`ge-plugin-ls --no-daemon`, no cache) and
  GStreamer's per element (its registry built from nothing, GST_REGISTRY a
  temporary file); each as (time with N - time with none) / N;
- warm listing: `gst-inspect-1.0` listing every feature from its registry,
  and `ge-plugin-ls --json` through the cache and through the daemon, the
  three alternating run by run. Judged by CPU time (user + system of the
  process, from wait4): the ratio of each round (ours / GStreamer's of the
  same round), the median over the rounds. Wall times are printed for the
  record: on a shared machine they are mostly time spent waiting for a CPU.

Each figure is printed beside its peer as a ratio. The goals (share/docs/host-design.md,
"Targets"): a warm `ge-plugin-ls --json` at most 0.5x a warm `gst-inspect-1.0`
listing in CPU time, from the cache and via the daemon; a cold scan per
plugin no slower than GStreamer's per element (ratio <= 1). Without the peer
(gst-inspect-1.0 or its Python plugin loader missing) the figures are printed
alone, with a note saying what is missing.

--warm-only measures the warm listings alone (no cold figures; the cache,
GStreamer's registry and the daemon's cache are still made once, by a first
untimed run of each); with --work DIR the generated plugins, elements, caches
and registries are kept in DIR and reused by the next such run (same
--plugins), so that a warm-only run costs only its rounds.

usage: bench_registry.py [--plugins N] [--repeat R] [--bin DIR] [--no-peer] [--warm-only [--work DIR]]
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

WARM_GOAL = 0.5   # warm listing: at most half of GStreamer's
COLD_GOAL = 1.0   # cold scan per plugin: no slower than GStreamer's per element

GST_ELEMENT = '''"""Benchmark element {i} (a BaseTransform that passes buffers through)."""
import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstBase", "1.0")
from gi.repository import Gst, GObject, GstBase  # noqa: E402
Gst.init(None)


class {cls}(GstBase.BaseTransform):
    __gstmetadata__ = ("{cls}", "Filter", "benchmark element {i}", "ge-plugin-host benchmark")
    __gsttemplates__ = (Gst.PadTemplate.new("src", Gst.PadDirection.SRC, Gst.PadPresence.ALWAYS, Gst.Caps.new_any()),
                        Gst.PadTemplate.new("sink", Gst.PadDirection.SINK, Gst.PadPresence.ALWAYS, Gst.Caps.new_any()))


GObject.type_register({cls})
__gstelementfactory__ = ("{name}", Gst.Rank.NONE, {cls})
'''


def children_cpu():
    """CPU seconds (user + sys) of the waited-for descendants so far: a cold
    scan's own figure that a loaded machine moves less than the wall time."""
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, env, check=True):
    """Wall time of one run (seconds) and its stdout."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    dt = time.perf_counter() - t0
    if check and p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.decode(errors='replace')[-2000:]}")
    return dt, p.stdout


def run_cpu(cmd, env):
    """Wall time and CPU time (user + system, from wait4) of one run, in ms, and its stdout."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: the child never blocks on it
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env)
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)  # reaped here (not by Popen), with its rusage
        wall = (time.perf_counter() - t0) * 1000
        p.returncode = os.waitstatus_to_exitcode(status)
        p.stdout.close()
        if p.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {err.read().decode(errors='replace')[-2000:]}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000, out


def gst_peer_missing():
    """Why the GStreamer peer cannot run here ("" when it can)."""
    if not shutil.which("gst-inspect-1.0"):
        return "gst-inspect-1.0 is not installed (Debian: gstreamer1.0-tools)"
    p = subprocess.run(["gst-inspect-1.0", "python"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if p.returncode != 0:
        return "GStreamer's Python plugin loader is not installed (Debian: gstreamer1.0-python3-plugin-loader)"
    return ""


def gst_env(folder, registry):
    env = dict(os.environ)
    env["GST_PLUGIN_PATH"] = folder
    env["GST_REGISTRY"] = registry
    env.pop("GST_REGISTRY_UPDATE", None)  # the default: check the plugins' stamps, as a warm listing does
    return env


def make_gst_elements(folder, n):
    py = os.path.join(folder, "python")
    os.makedirs(py)
    for i in range(n):
        with open(os.path.join(py, f"gebench{i:05d}.py"), "w") as f:
            f.write(GST_ELEMENT.format(i=i, cls=f"GeBench{i:05d}", name=f"gebench{i:05d}"))


def ensure_plugins(opp, n):
    """The N benchmark plugins in `opp`, generated unless a previous --work run left them complete."""
    done = os.path.join(os.path.dirname(opp), f"opp-{n}.done")
    if os.path.exists(done):
        return
    shutil.rmtree(opp, ignore_errors=True)
    os.mkdir(opp)
    for i in range(n):
        make_plugin(opp, f"p{i:05d}", f"BenchRegOp{i}", version=f"1.0.{i}")
    open(done, "w").close()


def ensure_gst_elements(folder, n):
    """The N GStreamer elements in `folder`, as ensure_plugins."""
    done = folder + f"-{n}.done"
    if os.path.exists(done):
        return
    shutil.rmtree(folder, ignore_errors=True)
    make_gst_elements(folder, n)
    open(done, "w").close()


def ratio(ours, peer, goal):
    r = ours / peer
    return f"ratio {r:.2f} (goal <= {goal:g}{', met' if r <= goal else ', NOT met'})"


def cold_figures(a, ls, env, work, peer_missing):
    """The cold scans, ours and GStreamer's: (ms per plugin, CPU ms per plugin,
    GStreamer's ms per element, its CPU ms per element; None without the peer)."""
    # ---- cold: ours per plugin, (N plugins - none) / N --------------------------------
    opp, empty = os.path.join(work, "opp"), os.path.join(work, "opp-empty")
    os.mkdir(opp)
    os.mkdir(empty)
    for i in range(a.plugins):
        make_plugin(opp, f"p{i:05d}", f"BenchRegOp{i}", version=f"1.0.{i}")
    env["GE_PLUGIN_REGISTRY_CACHE"] = os.path.join(work, "cache-empty.json")
    c0 = children_cpu()
    base, _ = run([ls, "--opp-path", empty, "--json", "--no-daemon"], env)
    c1 = children_cpu()
    env["GE_PLUGIN_REGISTRY_CACHE"] = os.path.join(work, "cache.json")
    dt, out = run([ls, "--opp-path", opp, "--json", "--no-daemon"], env)
    c2 = children_cpu()
    # One zygote; forked scanner children, up to 16 plugins each (share/docs/registry.md, "Processes").
    cold_cpu_ms = ((c2 - c1) - (c1 - c0)) * 1000 / a.plugins
    j = json.loads(out)
    assert j["source"] == "scan" and len(j["plugins"]) == a.plugins, j["source"]
    bad = [p for p in j["plugins"] if p["status"] != "ok"]
    assert not bad, bad[:3]
    cold_ms = (dt - base) * 1000 / a.plugins
    # ---- cold: GStreamer per element ---------------------------------------------------
    gst_cold_ms = gst_cold_cpu_ms = None
    if not peer_missing:
        gst, gst_empty = os.path.join(work, "gst"), os.path.join(work, "gst-empty")
        make_gst_elements(gst, a.plugins)
        make_gst_elements(gst_empty, 0)
        c0 = children_cpu()
        gbase, _ = run(["gst-inspect-1.0"], gst_env(gst_empty, os.path.join(work, "gst-empty.bin")))
        c1 = children_cpu()
        gdt, out = run(["gst-inspect-1.0"], gst_env(gst, os.path.join(work, "gst.bin")))
        c2 = children_cpu()
        gst_cold_cpu_ms = ((c2 - c1) - (c1 - c0)) * 1000 / a.plugins
        last = out.decode(errors="replace").strip().splitlines()[-1]
        found = sum(1 for line in out.decode(errors="replace").splitlines() if "gebench" in line)
        assert found == a.plugins, f"GStreamer registered {found} of {a.plugins} elements ({last})"
        gst_cold_ms = (gdt - gbase) * 1000 / a.plugins
    return cold_ms, cold_cpu_ms, gst_cold_ms, gst_cold_cpu_ms


# The part of a cold scan that no scanner design can remove while each plugin
# is loaded into a fresh sub-interpreter, as the engine loads it: creating and
# ending one (nothing imported), then with `enum` (the one standard module the
# `ge` package needs that a new interpreter lacks). Measured in the Python the
# host embeds, by a child process (share/docs/registry.md, "Figures").
FLOOR_CODE = r"""
import _xxsubinterpreters as si, sys, time
n = int(sys.argv[1])
for code in ("pass", "import enum"):
    si.destroy(si.create())  # the first one pays for loading the shared library code
    c0 = time.process_time()
    for _ in range(n):
        i = si.create()
        si.run_string(i, code)
        si.destroy(i)
    print((time.process_time() - c0) * 1000 / n)
"""


# The other design, one plugin per forked child of a Python that has `ge`
# imported (the zygote), pays for the pages the child writes: every page it
# touches is copied (copy-on-write), however little the plugin does. A child
# importing a four-line module, CPU and minor page faults per child.
FORK_FLOOR_CODE = r"""
import os, resource, sys, tempfile
import ge._entry  # what the zygote holds
n = int(sys.argv[1])
d = tempfile.mkdtemp()
for i in range(n):
    with open(os.path.join(d, f"fp{i}.py"), "w") as f:
        f.write("X = [i * i for i in range(100)]\nclass A:\n    def f(self):\n        return 1\n")
sys.path.insert(0, d)
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
for i in range(n):
    pid = os.fork()
    if pid == 0:
        __import__(f"fp{i}")
        os._exit(0)
    os.waitpid(pid, 0)
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
print((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000 / n, (r1.ru_minflt - r0.ru_minflt) / n)
for i in range(n):
    os.remove(os.path.join(d, f"fp{i}.py"))
os.rmdir(d)
"""


def isolation_floor(n, python_dir):
    """(CPU ms per fresh sub-interpreter, the same with enum imported, CPU ms
    per forked child importing a tiny module, its page faults)."""
    out = subprocess.run(["/usr/bin/python3", "-S", "-c", FLOOR_CODE, str(n)], check=True,
                         capture_output=True, text=True).stdout.split()
    env = dict(os.environ, PYTHONPATH=python_dir, PYTHONDONTWRITEBYTECODE="1")
    fork = subprocess.run(["/usr/bin/python3", "-S", "-c", FORK_FLOOR_CODE, str(n)], check=True,
                          capture_output=True, text=True, env=env).stdout.split()
    return float(out[0]), float(out[1]), float(fork[0]), float(fork[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugins", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--bin", default=os.environ.get("GE_REGISTRY_BIN", "build/bin"))
    ap.add_argument("--no-peer", action="store_true", help="skip the GStreamer peer")
    ap.add_argument("--warm-only", action="store_true",
                    help="only the warm listings (cache, daemon, gst-inspect-1.0); no cold figures")
    ap.add_argument("--work", metavar="DIR",
                    help="with --warm-only: keep the plugins, elements, caches and registries in DIR and reuse "
                         "them when run again (default: a temporary folder, removed)")
    a = ap.parse_args()
    if a.work and not a.warm_only:
        ap.error("--work needs --warm-only (the cold figures need a folder without caches)")
    ls = os.path.join(a.bin, "ge-plugin-ls")
    python_dir = os.path.abspath(os.environ.get("GE_PLUGIN_PYTHON_DIR") or os.path.join(a.bin, "..", "python"))
    regd = os.path.join(a.bin, "ge-plugin-registryd")
    if a.work:
        work = os.path.abspath(a.work)
        os.makedirs(work, exist_ok=True)
    else:
        work = tempfile.mkdtemp(prefix="ge-reg-bench-")
    os.chmod(work, 0o755)
    peer_missing = "--no-peer given" if a.no_peer else gst_peer_missing()
    env = dict(os.environ)
    env["GE_PLUGIN_REGISTRY_SOCKET"] = os.path.join(work, "none.sock")
    env.pop("GE_LOG_LEVEL", None)
    d = None
    try:
        opp, gst = os.path.join(work, "opp"), os.path.join(work, "gst")
        if a.warm_only:
            ensure_plugins(opp, a.plugins)
            env["GE_PLUGIN_REGISTRY_CACHE"] = os.path.join(work, "cache.json")
            _, out = run([ls, "--opp-path", opp, "--json", "--no-daemon"], env)  # makes the cache when missing
            j = json.loads(out)
            bad = [p for p in j["plugins"] if p["status"] != "ok"]
            assert len(j["plugins"]) == a.plugins and not bad, (len(j["plugins"]), bad[:3])
            if not peer_missing:
                ensure_gst_elements(gst, a.plugins)
                run(["gst-inspect-1.0"], gst_env(gst, os.path.join(work, "gst.bin")))  # makes its registry
        else:
            cold_ms, cold_cpu_ms, gst_cold_ms, gst_cold_cpu_ms = cold_figures(a, ls, env, work, peer_missing)
        # ---- the daemon ---------------------------------------------------------------------
        sock = os.path.join(work, "d.sock")
        if os.path.exists(sock):  # left by an interrupted --work run
            os.remove(sock)
        t0 = time.perf_counter()
        d = subprocess.Popen([regd, "--foreground", "--opp-path", opp, "--socket", sock, "--cache",
                              os.path.join(work, "dcache.json")], stderr=subprocess.DEVNULL)
        assert wait_for(lambda: os.path.exists(sock), 600), "the daemon did not come up"
        daemon_cold_ms = (time.perf_counter() - t0) * 1000 / a.plugins
        # ---- warm, alternating --------------------------------------------------------------
        cache_cmd = [ls, "--opp-path", opp, "--json", "--no-daemon"]
        daemon_cmd = [ls, "--socket", sock, "--json"]
        gst_cmd = ["gst-inspect-1.0"]
        genv = gst_env(gst, os.path.join(work, "gst.bin")) if not peer_missing else None
        # (wall ms, CPU ms) per counted round
        cache_t, daemon_t, gst_t = [], [], []
        for k in range(a.repeat + 1):  # the first round warms the page cache and is not counted
            wall, cpu, out = run_cpu(cache_cmd, env)
            assert json.loads(out)["source"] == "cache"
            if k:
                cache_t.append((wall, cpu))
            wall, cpu, out = run_cpu(daemon_cmd, env)
            j = json.loads(out)
            assert j["source"] == "daemon" and len(j["plugins"]) == a.plugins
            if k:
                daemon_t.append((wall, cpu))
            if genv:
                wall, cpu, _ = run_cpu(gst_cmd, genv)
                if k:
                    gst_t.append((wall, cpu))
        d.send_signal(signal.SIGTERM)
        d.wait(30)
        d = None

        def med(ts, i):
            return statistics.median(t[i] for t in ts)

        def warm_line(what, ts):
            line = f"  warm {what}: CPU {med(ts, 1):.1f} ms (wall {med(ts, 0):.1f} ms)"
            if not gst_t:
                return line
            # The ratio of each round, against GStreamer's run of the same round.
            r = statistics.median(t[1] / g[1] for t, g in zip(ts, gst_t))
            return f"{line}   CPU ratio {r:.2f} (median of the rounds; goal <= {WARM_GOAL:g}, " \
                   f"{'met' if r <= WARM_GOAL else 'NOT met'})"

        print(f"registry benchmark: {a.plugins} plugins, {a.repeat} alternating rounds "
              f"(medians; goal: warm listing <= {WARM_GOAL:g}x GStreamer's CPU time, from the cache and via the daemon)")
        if a.warm_only:
            if peer_missing:
                print(f"  GStreamer peer skipped: {peer_missing}")
            else:
                print(f"  warm gst-inspect-1.0 listing ({a.plugins} Python elements): CPU {med(gst_t, 1):.1f} ms "
                      f"(wall {med(gst_t, 0):.1f} ms)")
            print(warm_line("ge-plugin-ls --json via cache ", cache_t))
            print(warm_line("ge-plugin-ls --json via daemon", daemon_t))
            print("  cold figures skipped (--warm-only)")
        elif peer_missing:
            print(f"  GStreamer peer skipped: {peer_missing}")
            print(warm_line("ge-plugin-ls --json via cache ", cache_t))
            print(warm_line("ge-plugin-ls --json via daemon", daemon_t))
            print(f"  cold scan per plugin (ge-plugin-ls --no-daemon, no cache): {cold_ms:.2f} ms "
                  f"(CPU {cold_cpu_ms:.2f} ms)")
        else:
            print(f"  warm gst-inspect-1.0 listing ({a.plugins} Python elements): CPU {med(gst_t, 1):.1f} ms "
                  f"(wall {med(gst_t, 0):.1f} ms)")
            print(warm_line("ge-plugin-ls --json via cache ", cache_t))
            print(warm_line("ge-plugin-ls --json via daemon", daemon_t))
            print(f"  cold scan per plugin (ge-plugin-ls --no-daemon, no cache): {cold_ms:.2f} ms; "
                  f"GStreamer's cold registry per Python element: {gst_cold_ms:.2f} ms   "
                  f"{ratio(cold_ms, gst_cold_ms, COLD_GOAL)}")
            print(f"  cold scan CPU per plugin (user+sys of all processes): {cold_cpu_ms:.2f} ms; "
                  f"GStreamer's per Python element: {gst_cold_cpu_ms:.2f} ms   "
                  f"{ratio(cold_cpu_ms, gst_cold_cpu_ms, COLD_GOAL)}")
            bare, with_enum, fork_ms, faults = isolation_floor(200, python_dir)
            print(f"  isolation floor, CPU per plugin: a fresh sub-interpreter {bare:.2f} ms "
                  f"({bare / gst_cold_cpu_ms:.2f}x GStreamer's CPU per element), with enum {with_enum:.2f} ms "
                  f"({with_enum / gst_cold_cpu_ms:.2f}x): a cold scan that loads each plugin as the engine does "
                  f"costs at least this")
            print(f"  isolation floor, one plugin per forked child of a Python with ge imported: {fork_ms:.2f} ms CPU "
                  f"per child ({fork_ms / gst_cold_cpu_ms:.2f}x GStreamer's), {faults:.0f} page faults "
                  f"(copy-on-write) each")
        if not a.warm_only:
            print(f"  cold scan per plugin (daemon start-up, incl. process start): {daemon_cold_ms:.2f} ms")
    finally:
        if d is not None:
            d.kill()
            d.wait()
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
