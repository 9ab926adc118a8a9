"""CmpAttrs(x) -> verdicts: all 12 attribute kinds as compile sees them.

The graph gives GRAPH_ATTRS (below; the test reads it from this file). compile
checks every value, that the tensor attribute is a read-only Tensor (every
setter raises "borrowed object is read-only", its data is a read-only
memoryview of the values) and that its views expire when compile returns; the
verdicts (1.0 = as specified) are kept in the instance and written by execute,
in CHECKS order.
"""
import struct
from typing import List

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType, Format
from ge.runtime import ExpandDimsType, StorageFormat, StorageShape, Tensor, TensorDesc

READ_ONLY = "borrowed object is read-only"
EXPIRED = "Borrowed native object has expired"

GRAPH_ATTRS = {
    "i": -7, "f": 0.1, "b": True, "s": "h\u00e9llo", "dt": "DT_FLOAT16",
    "t": {"dtype": "DT_INT32", "shape": [2, 2], "data": [[1, 2], [3, 4]]},
    "li": [1, -2, 3], "lf": [0.5, 0.25], "lb": [True, False], "ls": ["a", "", "c"],
    "ldt": ["DT_INT8", "DT_DOUBLE"], "lli": [[1, 2], [], [3]],
}

CHECKS = [
    "int", "float (float32)", "bool", "str", "DataType", "List[int]", "List[float]", "List[bool]", "List[str]",
    "List[DataType]", "List[List[int]]",
    "tensor attr is a Tensor with the graph's dtype and shape",
    "tensor attr data is a read-only memoryview of the values",
    "every tensor attr setter raises 'borrowed object is read-only'",
    "the tensor attr is unchanged after the refused setters",
    "input tensor has no data in compile (RuntimeError)",
    "tensor attr views expire when compile returns",
]


def _raises(fn, exc, *fragments):
    try:
        fn()
    except exc as e:
        return all(f in str(e) for f in fragments)
    except BaseException:
        return False
    return False


def _setters(t):
    return [
        lambda: t.shape.set_origin_shape([9]), lambda: t.shape.set_storage_shape([9]),
        lambda: t.storage_shape.set_dim(0, 9), lambda: t.storage_shape.append_dim(9),
        lambda: t.storage_shape.set_scalar(), lambda: t.origin_shape.set_dim(0, 9),
        lambda: t.origin_shape.append_dim(9), lambda: t.origin_shape.set_scalar(),
        lambda: t.format.set_origin_format(Format.FORMAT_NHWC),
        lambda: t.format.set_storage_format(Format.FORMAT_NHWC),
        lambda: t.format.set_expand_dims_type(ExpandDimsType("1")),
        lambda: t.expand_dims_type.set_expand_index(0), lambda: t.format.expand_dims_type.set_expand_index(0),
    ]


def _data_ok(t):
    try:
        mv = t.data
        return mv.readonly and mv.cast("B").cast("i").tolist() == [1, 2, 3, 4]
    except BaseException:
        return False


@register_op(op_type="CmpAttrs")
def cmp_attrs(x: TensorDesc, *, i: int, f: float, b: bool, s: str, dt: DataType, t: Tensor, li: List[int],
              lf: List[float], lb: List[bool], ls: List[str], ldt: List[DataType],
              lli: List[List[int]]) -> TensorDesc:
    return TensorDesc([len(CHECKS)], DataType.DT_FLOAT)


@register_op_impl(op_type="CmpAttrs")
class CmpAttrs:
    def __init__(self):
        self.verdicts = None
        self.kept = None

    def compile(self, x: Tensor, y: Tensor, *, i: int, f: float, b: bool, s: str, dt: DataType, t: Tensor,
                li: List[int], lf: List[float], lb: List[bool], ls: List[str], ldt: List[DataType],
                lli: List[List[int]]) -> None:
        before = (t.storage_shape.dims, t.origin_shape.dims, t.format.origin_format, t.format.storage_format)
        self.kept = (t, t.shape, t.storage_shape, t.format)
        self.verdicts = [
            type(i) is int and i == -7,
            type(f) is float and f == struct.unpack("f", struct.pack("f", 0.1))[0],
            b is True,
            s == "h\u00e9llo",
            dt is DataType.DT_FLOAT16,
            li == [1, -2, 3],
            lf == [0.5, 0.25],
            lb == [True, False] and all(type(v) is bool for v in lb),
            ls == ["a", "", "c"],
            ldt == [DataType.DT_INT8, DataType.DT_DOUBLE] and all(isinstance(d, DataType) for d in ldt),
            lli == [[1, 2], [], [3]],
            isinstance(t, Tensor) and t.data_type == DataType.DT_INT32 and t.storage_shape.dims == [2, 2],
            _data_ok(t),
            all(_raises(setter, RuntimeError, READ_ONLY) for setter in _setters(t)),
            (t.storage_shape.dims, t.origin_shape.dims, t.format.origin_format, t.format.storage_format) == before,
            _raises(lambda: x.data, RuntimeError),
        ]

    def execute(self, x: Tensor, *, i: int, f: float, b: bool, s: str, dt: DataType, t: Tensor, li: List[int],
                lf: List[float], lb: List[bool], ls: List[str], ldt: List[DataType], lli: List[List[int]]) -> None:
        t, shape, storage, fmt = self.kept
        verdicts = list(self.verdicts) + [
            all(_raises(fn, RuntimeError, EXPIRED) for fn in (lambda: t.data_type, lambda: t.data,
                                                               lambda: shape.storage_shape, lambda: storage.dims,
                                                               lambda: fmt.origin_format)),
        ]
        y = get_execute_ctx().malloc_output_tensor(0, StorageShape([len(verdicts)], [len(verdicts)]), StorageFormat(), DataType.DT_FLOAT)
        out = y.data.cast("B").cast("f")
        for k, v in enumerate(verdicts):
            out[k] = 1.0 if v else 0.0
