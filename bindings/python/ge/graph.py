"""ge.graph: the DataType and Format enums of the GE graph API.

Numbering matches GE's public C++ enums (ge::DataType, ge::Format in
graph/types.h) for every member listed, so integers stored by a GE plugin mean
the same thing here. DT_MAX is this project's bound: members at or past it are
not supported (TensorDesc raises ValueError).
"""
from enum import IntEnum

__all__ = ["DataType", "Format"]


class DataType(IntEnum):
    """Element type of a tensor (GE numbering; see module docstring)."""
    DT_FLOAT = 0
    DT_FLOAT16 = 1
    DT_INT8 = 2
    DT_INT32 = 3
    DT_UINT8 = 4
    DT_INT16 = 6
    DT_UINT16 = 7
    DT_UINT32 = 8
    DT_INT64 = 9
    DT_UINT64 = 10
    DT_DOUBLE = 11
    DT_BOOL = 12
    DT_STRING = 13
    DT_COMPLEX64 = 16
    DT_COMPLEX128 = 17
    DT_BF16 = 27
    DT_UNDEFINED = 28
    DT_MAX = 29


class Format(IntEnum):
    """Memory layout of a tensor (GE numbering)."""
    FORMAT_NCHW = 0
    FORMAT_NHWC = 1
    FORMAT_ND = 2
    FORMAT_NC1HWC0 = 3
    FORMAT_FRACTAL_Z = 4
    FORMAT_NC1HWC0_C04 = 12
    FORMAT_HWCN = 16
    FORMAT_FRACTAL_NZ = 29
    FORMAT_NCDHW = 30
    FORMAT_NDHWC = 27
