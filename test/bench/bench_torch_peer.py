#!/usr/bin/python3
"""The peer of ge-bench-dispatch's BM_EagerDispatch: a torch.library op with a
Python kernel, called from Python (torch.ops.gebench.noop(x, y, 1)).

The op has the benchmark op's signature, (Tensor x, Tensor y, int alpha) ->
Tensor, and a CPU kernel that does nothing but return x (a torch op must return
its declared output; returning an input is the cheapest way). Also timed, for
calibration, is the bare Python call of the same kernel function.

Prints one JSON object on stdout:
  {"torch": "<version>", "op_ns": <median CPU ns per call>,
   "bare_kernel_ns": <median ns per call>, "repeat": R, "number": N}
or {"skipped": "<why>"} (exit 0) when torch cannot be imported: torch is a
benchmark peer (Debian's python3-torch), not a dependency.

usage: bench_torch_peer.py [--number N] [--repeat R]
"""
import argparse
import json
import statistics
import sys
import time
import timeit


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--number", type=int, default=20000, help="calls per timing (default 20000)")
    ap.add_argument("--repeat", type=int, default=7, help="timings; the median is reported (default 7)")
    a = ap.parse_args()
    if a.number <= 0 or a.repeat <= 0:
        ap.error("--number and --repeat must be positive")
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        print(json.dumps({"skipped": f"torch not importable ({type(e).__name__}: {e}); install python3-torch"}))
        return 0

    lib = torch.library.Library("gebench", "DEF")
    lib.define("noop(Tensor x, Tensor y, int alpha) -> Tensor")

    def noop_kernel(x, y, alpha):
        return x

    lib.impl("noop", noop_kernel, "CPU")
    op = torch.ops.gebench.noop
    x = torch.zeros(4)
    y = torch.zeros(4)
    if op(x, y, 1) is None:
        raise SystemExit("torch.ops.gebench.noop returned None")

    def per_call_ns(stmt):
        # CPU time of the process, as ge-bench-dispatch reports it: other
        # processes on a shared machine do not inflate it.
        times = timeit.repeat(stmt, timer=time.process_time, repeat=a.repeat, number=a.number)
        return statistics.median(times) / a.number * 1e9

    op_ns = per_call_ns(lambda: op(x, y, 1))
    bare_ns = per_call_ns(lambda: noop_kernel(x, y, 1))
    # timeit's lambda adds one Python call to each figure; measured and removed.
    empty_ns = per_call_ns(lambda: None)
    print(json.dumps({"torch": torch.__version__, "op_ns": op_ns - empty_ns, "bare_kernel_ns": bare_ns - empty_ns,
                      "repeat": a.repeat, "number": a.number}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
