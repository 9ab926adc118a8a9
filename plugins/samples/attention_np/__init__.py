"""Attention pieces with numpy: MatMulCustom, SoftmaxCustom, ConcatCustom.

numpy loads in only one interpreter per process, so this plugin declares
isolation = "main" in its pyproject.toml. Tensors are shared with numpy without
copies through ``numpy.asarray(tensor)`` (the array interface).
"""
from typing import List

import numpy as np

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc

_FLOATS = (DataType.DT_FLOAT, DataType.DT_DOUBLE, DataType.DT_FLOAT16)


@register_op(op_type="MatMulCustom")
def matmul(a: TensorDesc, b: TensorDesc, *, transpose_b: bool = False, scale: float = 1.0) -> TensorDesc:
    sa, sb = a.shape.storage_shape.dims, b.shape.storage_shape.dims
    if len(sa) != 2 or len(sb) != 2:
        raise ValueError(f"MatMulCustom takes 2-D inputs, got {sa} and {sb}")
    if a.data_type != b.data_type or a.data_type not in _FLOATS:
        raise TypeError("MatMulCustom needs two inputs of the same floating dtype")
    k_b, n = (sb[1], sb[0]) if transpose_b else (sb[0], sb[1])
    if sa[1] != k_b:
        raise ValueError(f"MatMulCustom: inner dims differ ({sa} x {sb}, transpose_b={transpose_b})")
    return TensorDesc([sa[0], n], a.data_type)


@register_op_impl(op_type="MatMulCustom")
class MatMul:
    def execute(self, a: Tensor, b: Tensor, *, transpose_b: bool, scale: float) -> None:
        na, nb = np.asarray(a), np.asarray(b)
        out = (na @ (nb.T if transpose_b else nb)) * na.dtype.type(scale)
        y = get_execute_ctx().malloc_output_tensor(0, StorageShape(list(out.shape), list(out.shape)), StorageFormat(), a.data_type)
        np.asarray(y)[...] = out


@register_op(op_type="SoftmaxCustom")
def softmax(x: TensorDesc, *, axis: int = -1) -> TensorDesc:
    rank = x.shape.storage_shape.dim_num
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    if x.data_type not in _FLOATS:
        raise TypeError("SoftmaxCustom needs a floating input")
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


@register_op_impl(op_type="SoftmaxCustom")
class Softmax:
    def execute(self, x: Tensor, *, axis: int) -> None:
        nx = np.asarray(x)
        y = get_execute_ctx().malloc_output_tensor(0, StorageShape(list(nx.shape), list(nx.shape)), StorageFormat(), x.data_type)
        if nx.size == 0:  # no elements: max() has no identity, and there is nothing to write
            return
        e = np.exp(nx - nx.max(axis=axis, keepdims=True))
        np.asarray(y)[...] = e / e.sum(axis=axis, keepdims=True)


@register_op(op_type="ConcatCustom")
def concat(xs: List[TensorDesc], *, axis: int = 0) -> TensorDesc:
    if not xs:
        raise ValueError("ConcatCustom needs at least one input")
    dims = xs[0].shape.storage_shape.dims
    if not -len(dims) <= axis < len(dims):
        raise ValueError(f"axis {axis} out of range for rank {len(dims)}")
    ax = axis % len(dims)
    total = 0
    for i, x in enumerate(xs):
        d = x.shape.storage_shape.dims
        if x.data_type != xs[0].data_type:
            raise TypeError(f"xs[{i}] has dtype {DataType(x.data_type).name}, xs[0] {DataType(xs[0].data_type).name}")
        if len(d) != len(dims) or any(a != b for j, (a, b) in enumerate(zip(d, dims)) if j != ax):
            raise ValueError(f"xs[{i}] has shape {d}, incompatible with {dims} on axis {ax}")
        total += d[ax]
    out = list(dims)
    out[ax] = total
    return TensorDesc(out, xs[0].data_type)


@register_op_impl(op_type="ConcatCustom")
class Concat:
    def execute(self, xs: List[Tensor], *, axis: int) -> None:
        out = np.concatenate([np.asarray(x) for x in xs], axis=axis)
        y = get_execute_ctx().malloc_output_tensor(0, StorageShape(list(out.shape), list(out.shape)), StorageFormat(), xs[0].data_type)
        np.asarray(y)[...] = out
