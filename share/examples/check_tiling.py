#!/usr/bin/python3
"""Checks share/examples/tiling.json's outputs: the softmax against numpy, and
prints the tiling compile chose. Usage: check_tiling.py OUTPUT_DIR [--tol T]"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output_dir")
    ap.add_argument("--tol", type=float, default=1e-6)
    args = ap.parse_args()
    x = np.load(os.path.join(HERE, "data", "logits.npy")).astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    ref = e / e.sum(axis=-1, keepdims=True)
    got = np.load(os.path.join(args.output_dir, "softmax_0.npy"))
    tiling = np.load(os.path.join(args.output_dir, "softmax_1.npy"))
    err = float(np.max(np.abs(got - ref)))
    print(f"tiling chosen by compile: block_dim={tiling[0]}, rows_per_block={tiling[1]}, core_num={tiling[2]}")
    print(f"{'OK' if err <= args.tol else 'FAILED'}: softmax max abs error vs numpy reference {err:.3e}")
    return 0 if err <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
