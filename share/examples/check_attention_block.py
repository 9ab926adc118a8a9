#!/usr/bin/python3
"""Independent numpy reference of share/examples/attention_block.json.

Usage: check_attention_block.py OUTPUT_DIR [--tol T]
Recomputes every graph output from the graph's inputs with numpy alone (no ge
code), prints the max abs error per output and exits 1 when one exceeds the
tolerance (default 1e-5), 2 on a missing output.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def reference(graph):
    inputs = {}
    for spec in graph["inputs"]:
        if "file" in spec:
            inputs[spec["name"]] = np.load(os.path.join(HERE, spec["file"]))
        else:
            inputs[spec["name"]] = np.asarray(spec["data"], dtype=spec["dtype"]).reshape(spec["shape"])
    q, k, v, gamma = (inputs[n].astype(np.float64) for n in ("q", "k", "v", "gamma"))
    attrs = {n["name"]: n.get("attrs", {}) for n in graph["nodes"]}
    scores = (q @ k.T) * attrs["scores"]["scale"]
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = e / e.sum(axis=-1, keepdims=True)
    context = probs @ v

    def rms(x, g, eps):
        r = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
        return r * g if g is not None else r

    norm = rms(context, gamma, attrs["norm"]["epsilon"])
    norm_plain = rms(q, None, 1e-6)
    act = 0.5 * norm * (1 + np.tanh(math.sqrt(2 / math.pi) * (norm + 0.044715 * norm ** 3)))
    merged = np.concatenate([act, norm_plain, q], axis=1)
    return {"out:0": np.maximum(merged, 0), "probs:0": probs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output_dir")
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    with open(os.path.join(HERE, "attention_block.json")) as f:
        graph = json.load(f)
    worst = 0.0
    for ref, expected in reference(graph).items():
        node, index = ref.split(":")
        path = os.path.join(args.output_dir, f"{node}_{index}.npy")
        if not os.path.exists(path):
            print(f"missing output {path}", file=sys.stderr)
            return 2
        got = np.load(path)
        if got.shape != expected.shape:
            print(f"{ref}: shape {got.shape}, expected {expected.shape}", file=sys.stderr)
            return 1
        err = float(np.max(np.abs(got.astype(np.float64) - expected)))
        worst = max(worst, err)
        print(f"{ref}: {got.dtype}{list(got.shape)} max abs error vs numpy reference = {err:.3e}")
    status = "OK" if worst <= args.tol else "FAILED"
    print(f"{status}: max abs error {worst:.3e} (tolerance {args.tol:g})")
    return 0 if worst <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
