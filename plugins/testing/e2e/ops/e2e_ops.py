"""General ops for the ge-run end-to-end tests (sub-interpreter, pure Python).

E2eSum       dynamic + optional inputs, float attrs with defaults
E2eAttrDump  every Python-side attribute kind, one required; dumps them as float64
E2eCast      output dtype from a DataType attribute (zero-filled)
E2eCopy      byte copy of any dtype
E2eFloatOnly infer_meta raises TypeError for a non-float32 input
E2eBadShape  execute allocates a shape other than the one infer_meta gives
E2eRaise     execute raises ValueError
E2ePrint     prints a marker line to stdout, then copies its input
E2eClampInPlace  mutates_args=("x",): clamps x at 0 in place, output 0 is x
E2eTwice     x + 1*x into a new output (a reader of the same value as E2eClampInPlace)
E2eWriteInput    writes into its input without declaring it mutated (must fail)
E2eSetInputDim   sets a dim of its input's shape without declaring it mutated (must fail)
"""
import struct
from typing import List, Optional

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc


def _floats(t):
    return t.data.cast("B").cast("f")


def _copy_bytes(src, dst):
    if src.size:
        dst.data.cast("B")[:] = src.data.cast("B")


@register_op(op_type="E2eSum")
def e2e_sum(xs: List[TensorDesc], bias: Optional[TensorDesc], *, scale: float = 2.0,
            offset: int = 3) -> TensorDesc:
    if not xs:
        raise ValueError("E2eSum needs at least one input")
    dims = xs[0].shape.storage_shape.dims
    for i, x in enumerate(xs):
        if x.data_type != DataType.DT_FLOAT:
            raise TypeError(f"E2eSum: xs[{i}] must be float32")
        if x.shape.storage_shape.dims != dims:
            raise ValueError(f"E2eSum: xs[{i}] has shape {x.shape.storage_shape.dims}, xs[0] {dims}")
    if bias is not None and bias.shape.storage_shape.dims != dims:
        raise ValueError("E2eSum: bias shape differs")
    return TensorDesc(dims, DataType.DT_FLOAT)


@register_op_impl(op_type="E2eSum")
class E2eSumImpl:
    def execute(self, xs: List[Tensor], bias: Optional[Tensor], *, scale: float, offset: int) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, xs[0].shape, xs[0].format, DataType.DT_FLOAT)
        out = _floats(y)
        srcs = [_floats(x) for x in xs]
        b = _floats(bias) if bias is not None else None
        for i in range(len(out)):
            acc = sum(s[i] for s in srcs) + (b[i] if b is not None else 0.0)
            out[i] = acc * scale + offset


@register_op(op_type="E2eAttrDump")
def e2e_attr_dump(x: TensorDesc, *, i: int, f: float = 0.5, b: bool = True, s: str = "abc",
                  dt: DataType = DataType.DT_INT8, li: List[int] = [1, 2], lf: List[float] = [0.25],
                  lb: List[bool] = [True, False, True], ls: List[str] = ["xy", "z"],
                  ldt: List[DataType] = [DataType.DT_FLOAT16],
                  lli: List[List[int]] = [[1], [2, 3]]) -> TensorDesc:
    return TensorDesc([13], DataType.DT_DOUBLE)


@register_op_impl(op_type="E2eAttrDump")
class E2eAttrDumpImpl:
    def execute(self, x: Tensor, *, i: int, f: float, b: bool, s: str, dt: DataType, li: List[int],
                lf: List[float], lb: List[bool], ls: List[str], ldt: List[DataType],
                lli: List[List[int]]) -> None:
        values = [
            i, f, 1.0 if b else 0.0, len(s), int(dt), sum(li), sum(lf), sum(lb), len("".join(ls)),
            sum(int(d) for d in ldt), sum(sum(r) for r in lli),
            1.0 if isinstance(dt, DataType) and all(isinstance(d, DataType) for d in ldt) else 0.0,
            1.0 if type(i) is int and type(f) is float and type(b) is bool and type(s) is str else 0.0,
        ]
        y = get_execute_ctx().malloc_output_tensor(0, StorageShape([len(values)], [len(values)]), StorageFormat(), DataType.DT_DOUBLE)
        y.data.cast("B")[:] = struct.pack(f"<{len(values)}d", *values)


@register_op(op_type="E2eCast")
def e2e_cast(x: TensorDesc, *, dtype: DataType) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, dtype)


@register_op_impl(op_type="E2eCast")
class E2eCastImpl:
    def execute(self, x: Tensor, *, dtype: DataType) -> None:
        get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, dtype)


@register_op(op_type="E2eCopy")
def e2e_copy(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="E2eCopy")
class E2eCopyImpl:
    def execute(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        _copy_bytes(x, y)


@register_op(op_type="E2eFloatOnly")
def e2e_float_only(x: TensorDesc) -> TensorDesc:
    if x.data_type != DataType.DT_FLOAT:
        raise TypeError(f"E2eFloatOnly supports float32 only, got {DataType(x.data_type).name}")
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="E2eFloatOnly")
class E2eFloatOnlyImpl:
    def execute(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        _copy_bytes(x, y)


@register_op(op_type="E2eBadShape")
def e2e_bad_shape(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="E2eBadShape")
class E2eBadShapeImpl:
    def execute(self, x: Tensor) -> None:
        dims = x.storage_shape.dims
        get_execute_ctx().malloc_output_tensor(0, StorageShape(dims[:-1] + [dims[-1] + 1], dims[:-1] + [dims[-1] + 1]), StorageFormat(), x.data_type)


@register_op(op_type="E2eRaise")
def e2e_raise(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


def _fail_deep(n):
    raise ValueError(f"e2e deliberate failure {n}")


@register_op_impl(op_type="E2eRaise")
class E2eRaiseImpl:
    def execute(self, x: Tensor) -> None:
        _fail_deep(4242)


@register_op(op_type="E2ePrint")
def e2e_print(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="E2ePrint")
class E2ePrintImpl:
    def execute(self, x: Tensor) -> None:
        print("e2e-stdout-marker", x.shape_size)
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        _copy_bytes(x, y)


@register_op(op_type="E2eClampInPlace", mutates_args=("x",))
def e2e_clamp_in_place(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="E2eClampInPlace")
class E2eClampInPlaceImpl:
    def execute(self, x: Tensor) -> None:
        y = _floats(get_execute_ctx().make_output_ref_input(0, 0))
        for i in range(len(y)):
            y[i] = max(y[i], 0.0)


@register_op(op_type="E2eTwice")
def e2e_twice(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="E2eTwice")
class E2eTwiceImpl:
    def execute(self, x: Tensor) -> None:
        y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        src, dst = _floats(x), _floats(y)
        for i in range(len(src)):
            dst[i] = src[i] + 1 * src[i]


@register_op(op_type="E2eWriteInput")
def e2e_write_input(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="E2eWriteInput")
class E2eWriteInputImpl:
    def execute(self, x: Tensor) -> None:
        _floats(x)[0] = 100.0  # x is not in mutates_args: its data is read-only
        get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)


@register_op(op_type="E2eSetInputDim")
def e2e_set_input_dim(x: TensorDesc) -> TensorDesc:
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="E2eSetInputDim")
class E2eSetInputDimImpl:
    def execute(self, x: Tensor) -> None:
        x.storage_shape.set_dim(0, 1)  # x is not in mutates_args: read-only
        get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
