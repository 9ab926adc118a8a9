#!/usr/bin/python3
"""Checks share/examples/kernel_block.json's outputs against numpy.
Usage: check_kernel_block.py OUTPUT_DIR [--tol T]"""
import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output_dir")
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    a = np.load(os.path.join(HERE, "data", "a.npy")).astype(np.float64)
    b = np.load(os.path.join(HERE, "data", "b.npy")).astype(np.float64)
    axpy = 0.5 * a + b
    act = 0.5 * axpy * (1 + np.tanh(math.sqrt(2 / math.pi) * (axpy + 0.044715 * axpy ** 3)))
    out = np.maximum(-2.0 * act + a, 0)
    worst = 0.0
    for name, ref in (("out_0", out), ("axpy_0", axpy)):
        got = np.load(os.path.join(args.output_dir, name + ".npy"))
        err = float(np.max(np.abs(got - ref)))
        worst = max(worst, err)
        print(f"{name}: {got.dtype}{list(got.shape)} max abs error vs numpy reference = {err:.3e}")
    print(f"{'OK' if worst <= args.tol else 'FAILED'}: max abs error {worst:.3e} (tolerance {args.tol:g})")
    return 0 if worst <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
