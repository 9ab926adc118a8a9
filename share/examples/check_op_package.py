#!/usr/bin/python3
"""Checks share/examples/op_package.json's outputs against numpy: a C++
prototype with a Python implementation (ScaledAddCustom), a C++ custom op
(SquareCppCustom) and a Python plugin (GeluCustom) in one graph.
Usage: check_op_package.py OUTPUT_DIR [--tol T]"""
import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output_dir")
    ap.add_argument("--tol", type=float, default=1e-4)
    args = ap.parse_args()
    a = np.load(os.path.join(HERE, "data", "a.npy")).astype(np.float64)
    b = np.load(os.path.join(HERE, "data", "b.npy")).astype(np.float64)
    square = (0.5 * a + b) ** 2
    act = 0.5 * square * (1 + np.tanh(math.sqrt(2 / math.pi) * (square + 0.044715 * square ** 3)))
    out = 1.0 * act + a  # the prototype's default alpha (1.0)
    worst = 0.0
    for name, ref in (("default_alpha_0", out), ("square_0", square)):
        got = np.load(os.path.join(args.output_dir, name + ".npy"))
        err = float(np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref))))
        worst = max(worst, err)
        print(f"{name}: {got.dtype}{list(got.shape)} max error vs numpy reference = {err:.3e}")
    print(f"{'OK' if worst <= args.tol else 'FAILED'}: max error {worst:.3e} (tolerance {args.tol:g})")
    return 0 if worst <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
