"""Helpers of RmsNormCustom (a plugin-private module: `from . import _kernels`)."""
import array


def mean_square(row):
    return sum(v * v for v in row) / len(row)


def pack(values):
    """float32 memory of `values`, for slice assignment into a 'f' memoryview."""
    return memoryview(array.array("f", values))
