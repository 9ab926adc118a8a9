#!/usr/bin/python3
"""`make bench`'s dispatch figures, each beside its peer as a ratio, from one run.

Runs ge-bench-dispatch once (its console table is shown as it runs) and the
torch.library peer (test/bench/bench_torch_peer.py) right after, then prints:
  eager dispatch / bare Python call    goal <= 4x   (same execute, same run)
  torch op / eager dispatch            goal >= 3x   (skipped with a note without python3-torch)
  MiB RSS per sub-interpreter plugin   goal <= 1.76
All times are CPU time per call (medians), so that the other processes of a
shared machine do not move them. Goals: share/docs/host-design.md, "Targets".
Figures, not pass/fail: the exit status is 0 whether or not a goal is met
(non-zero only when a benchmark cannot run).

usage: bench_dispatch_ratios.py [--bin DIR] [--min-time S] [--python PY]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def median_cpu_ns(benchmarks, name):
    """CPU ns of `name`'s median aggregate (or of its single run)."""
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    mine = [b for b in benchmarks if b.get("run_name", b.get("name", "")).split("/")[0] == name]
    for b in mine:
        if b.get("aggregate_name") == "median":
            return b["cpu_time"] * scale[b["time_unit"]]
    if mine:
        return mine[0]["cpu_time"] * scale[mine[0]["time_unit"]]
    raise SystemExit(f"bench_dispatch_ratios: {name} missing from ge-bench-dispatch's output")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/bin", help="folder of ge-bench-dispatch (default build/bin)")
    ap.add_argument("--min-time", default="0.2", help="--benchmark_min_time of each benchmark (default 0.2)")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the torch peer")
    a = ap.parse_args()
    exe = os.path.join(a.bin, "ge-bench-dispatch")
    if not os.access(exe, os.X_OK):
        raise SystemExit(f"bench_dispatch_ratios: {exe} not found (build first: make build)")
    with tempfile.TemporaryDirectory(prefix="ge-bench-") as tmp:
        out = os.path.join(tmp, "dispatch.json")
        rc = subprocess.call([exe, f"--benchmark_min_time={a.min_time}", f"--benchmark_out={out}",
                              "--benchmark_out_format=json"])
        if rc != 0:
            raise SystemExit(f"bench_dispatch_ratios: {exe} exited with {rc}")
        with open(out) as f:
            benchmarks = json.load(f)["benchmarks"]
    peer = subprocess.run([a.python, os.path.join(HERE, "bench_torch_peer.py")], stdout=subprocess.PIPE, text=True)
    if peer.returncode != 0:
        raise SystemExit(f"bench_dispatch_ratios: bench_torch_peer.py exited with {peer.returncode}")
    torch = json.loads(peer.stdout)

    dispatch = median_cpu_ns(benchmarks, "BM_EagerDispatch")
    bare = median_cpu_ns(benchmarks, "BM_BarePythonCall")
    rss = next((b.get("MiB_RSS_per_plugin") for b in benchmarks if "SubinterpreterPlugin" in b.get("name", "")), None)
    print()
    print("== eager dispatch, one run (CPU ns per call, medians; goals: share/docs/host-design.md, \"Targets\")")
    print(f"  eager dispatch (C++ -> Python execute)  {dispatch:8.0f} ns")
    print(f"  bare Python call of the same execute    {bare:8.0f} ns")
    print(f"  dispatch / bare call                    {dispatch / bare:8.2f}x   (goal <= 4x)")
    if "skipped" in torch:
        print(f"  torch.library op: skipped: {torch['skipped']}")
    else:
        print(f"  torch.library op (torch {torch['torch']})       {torch['op_ns']:8.0f} ns"
              f"   (its bare kernel call: {torch['bare_kernel_ns']:.0f} ns)")
        print(f"  torch op / dispatch                     {torch['op_ns'] / dispatch:8.2f}x   (goal >= 3x)")
    if rss is not None:
        print(f"  RSS per sub-interpreter plugin          {rss:8.2f} MiB (goal <= 1.76 MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
