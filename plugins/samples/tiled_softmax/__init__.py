"""TiledSoftmaxCustom: row softmax whose tiling is decided by ``compile``.

``compile`` runs once per node while the graph is compiled. It reads the
target platform (the core count of the default core type) and the compile
option ``tiling.max_block_dim``, splits the rows into ``block_dim`` blocks, and
keeps the decision in the instance, keyed by (shape, dtype). ``execute`` then
processes the rows block by block with that tiling, and writes the decision to
its second output so that it is visible: ``[block_dim, rows_per_block,
core_num]``. Compile for another SoC (``ge-run --soc``) and the tiling changes;
the softmax does not. Pure Python (sub-interpreter), float32.
"""
import math
from typing import Tuple

from ge.custom_op import (get_compile_ctx, get_compile_platform_info, get_execute_ctx, register_op,
                          register_op_impl)
from ge.graph import DataType
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc


@register_op(op_type="TiledSoftmaxCustom")
def tiled_softmax(x: TensorDesc) -> Tuple[TensorDesc, TensorDesc]:
    dims = x.shape.storage_shape.dims
    if x.data_type != DataType.DT_FLOAT or not dims:
        raise TypeError("TiledSoftmaxCustom takes a float32 tensor of rank >= 1")
    return TensorDesc(dims, DataType.DT_FLOAT), TensorDesc([3], DataType.DT_INT64)


@register_op_impl(op_type="TiledSoftmaxCustom")
class TiledSoftmax:
    def __init__(self):
        self._tilings = {}

    @staticmethod
    def _key(t):
        return tuple(t.storage_shape.dims), int(t.data_type)

    def compile(self, x: Tensor, y: Tensor, tiling: Tensor) -> None:
        platform = get_compile_platform_info()
        cores = platform.get_core_num()
        try:
            cap = int(get_compile_ctx().get_option("tiling.max_block_dim"))
        except KeyError:
            cap = cores
        if cap <= 0:
            raise ValueError(f"tiling.max_block_dim must be positive, got {cap}")
        dims = x.storage_shape.dims
        rows = math.prod(dims[:-1]) if len(dims) > 1 else 1
        block_dim = max(1, min(cores, cap, rows))
        rows_per_block = math.ceil(rows / block_dim)
        self._tilings[self._key(x)] = (block_dim, rows_per_block, cores)
        print(f"{platform.get_soc_version()}: {rows} rows on {cores} cores -> "
              f"block_dim={block_dim}, rows_per_block={rows_per_block}")

    def execute(self, x: Tensor) -> None:
        tiling = self._tilings.get(self._key(x))
        if tiling is None:
            raise RuntimeError(f"no tiling for shape {x.storage_shape.dims}: compile did not run for it")
        block_dim, rows_per_block, cores = tiling
        ctx = get_execute_ctx()
        y = ctx.malloc_output_tensor(0, x.shape, x.format, DataType.DT_FLOAT)
        t = ctx.malloc_output_tensor(1, StorageShape([3], [3]), StorageFormat(), DataType.DT_INT64)
        cols = x.storage_shape.dims[-1]
        src = x.data.cast("B").cast("f")
        dst = y.data.cast("B").cast("f")
        rows = len(src) // cols if cols else 0
        for block in range(block_dim):  # what a kernel would run as one block per core
            for r in range(block * rows_per_block, min(rows, (block + 1) * rows_per_block)):
                row = src[r * cols:(r + 1) * cols].tolist()
                m = max(row)
                e = [math.exp(v - m) for v in row]
                s = sum(e)
                for c, v in enumerate(e):
                    dst[r * cols + c] = v / s
        out = t.data.cast("B").cast("q")
        out[0], out[1], out[2] = block_dim, rows_per_block, cores
