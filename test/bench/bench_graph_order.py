#!/usr/bin/env python3
"""Graph compile time against graph size and listing order (share/docs/host-design.md,
"Engine semantics"): ge-run on chains of N ReluCpp nodes (the built-in op, no plugins)
listed producer-first and consumer-first, median wall time of --repeat runs
each, alternating. Prints per-node time and, per size, the ratio of the two
orders (goal: about 1, and the per-node time flat in N: linear whatever the
order). A figure, not a pass/fail test."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time


def chain(n, consumer_first):
    nodes = [{"name": f"n{k}", "op_type": "ReluCpp", "inputs": [f"n{k - 1}:0" if k else "x"]} for k in range(n)]
    if consumer_first:
        nodes.reverse()
    return {"name": f"chain{n}", "inputs": [{"name": "x", "dtype": "float32", "shape": [1], "data": [1.0]}],
            "nodes": nodes, "outputs": [f"n{n - 1}:0"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bin", required=True, help="folder holding ge-run")
    ap.add_argument("--sizes", default="10000,40000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ge-bench-order-")
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"graph order benchmark: ReluCpp chains, {args.repeat} alternating runs each (median wall)")
    per_node = {}
    for n in sizes:
        times = {False: [], True: []}
        paths = {}
        for cf in (False, True):
            paths[cf] = os.path.join(work, f"chain_{n}_{'consumer' if cf else 'producer'}.json")
            with open(paths[cf], "w") as f:
                json.dump(chain(n, cf), f)
        for _ in range(args.repeat):
            for cf in (False, True):
                t = time.perf_counter()
                p = subprocess.run([os.path.join(args.bin, "ge-run"), paths[cf], "--output-dir", os.path.join(work, "out")],
                                   capture_output=True, text=True, timeout=600)
                if p.returncode != 0:
                    raise SystemExit(f"ge-run failed on {paths[cf]}: {p.stderr}")
                times[cf].append(time.perf_counter() - t)
        prod, cons = statistics.median(times[False]), statistics.median(times[True])
        per_node[n] = cons / n
        print(f"  {n:>7} nodes: producer-first {prod:.2f} s, consumer-first {cons:.2f} s "
              f"(consumer/producer {cons / prod:.2f}x; {1e6 * cons / n:.1f} us per node)")
    if len(sizes) > 1:
        lo, hi = sizes[0], sizes[-1]
        print(f"  per-node time, {hi} against {lo} nodes, consumer-first: {per_node[hi] / per_node[lo]:.2f}x (linear: about 1)")


if __name__ == "__main__":
    main()
