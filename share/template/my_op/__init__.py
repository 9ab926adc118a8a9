"""my_op: a GE plugin template (copy, rename, then replace the example op).

``MyOpCustom`` computes ``y = x * scale + bias`` element-wise on float32 or
float64 tensors of any shape. It shows the three parts of a plugin:

* the prototype (``@register_op``): the function's signature is the op's
  canonical IR (inputs, attributes with defaults, outputs) and its body is the
  op's infer_meta (it checks the inputs and describes the outputs);
* ``compile``: runs while a graph is compiled, once per node; it reads the
  target platform and the compile options and decides a tiling, kept in the
  instance (one instance per op_type serves all its callbacks);
* ``execute``: runs on every eager execution; it allocates the output and
  computes it through the zero-copy ``Tensor.data`` memoryviews.

Pure Python (no numpy), so it runs in its own sub-interpreter (pyproject.toml).
"""
from typing import Dict, List, Tuple

from ge.custom_op import get_compile_ctx, get_compile_platform_info, get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc

__version__ = "0.1.0"

OP_TYPE = "MyOpCustom"

# The struct format of each supported dtype (what Tensor.data holds).
_FORMATS = {DataType.DT_FLOAT: "f", DataType.DT_DOUBLE: "d"}

# Compile option read by compile (graph "options" or `ge-run --option my_op.max_block_dim=N`).
MAX_BLOCK_DIM_OPTION = "my_op.max_block_dim"


@register_op(op_type=OP_TYPE)
def my_op(x: TensorDesc, *, scale: float = 1.0, bias: float = 0.0) -> TensorDesc:
    """infer_meta: y has x's shape and dtype. Raise to reject a node early."""
    if x.data_type not in _FORMATS:
        raise TypeError(f"{OP_TYPE} supports float32 and float64, got {DataType(x.data_type).name}")
    return TensorDesc(x.shape.storage_shape.dims, x.data_type)


def _key(t: Tensor) -> Tuple[Tuple[int, ...], int]:
    # Keep copies (a tuple of ints), never the borrowed Tensor: it expires with its callback.
    return tuple(t.storage_shape.dims), int(t.data_type)


@register_op_impl(op_type=OP_TYPE)
class MyOp:
    def __init__(self) -> None:
        # (dims, dtype) -> (block_dim, elements_per_block), decided by compile.
        self.tilings: Dict[Tuple[Tuple[int, ...], int], Tuple[int, int]] = {}

    def compile(self, x: Tensor, y: Tensor, *, scale: float, bias: float) -> None:
        """Choose how many blocks to split the work into: at most one per core of
        the target platform, at most the option my_op.max_block_dim when set."""
        cores = get_compile_platform_info().get_core_num()
        try:
            cap = int(get_compile_ctx().get_option(MAX_BLOCK_DIM_OPTION))
        except KeyError:  # the option is not set
            cap = cores
        if cap <= 0:
            raise ValueError(f"{MAX_BLOCK_DIM_OPTION} must be positive, got {cap}")
        n = max(1, x.shape_size)
        block_dim = max(1, min(cores, cap, n))
        self.tilings[_key(x)] = (block_dim, (n + block_dim - 1) // block_dim)

    def execute(self, x: Tensor, *, scale: float, bias: float) -> None:
        ctx = get_execute_ctx()
        y = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
        fmt = _FORMATS[x.data_type]
        src = x.data.cast("B").cast(fmt)  # flat views of the elements
        dst = y.data.cast("B").cast(fmt)
        n = len(src)
        # Without a compile (e.g. a unit test of execute alone): one block.
        block_dim, per_block = self.tilings.get(_key(x), (1, n))
        for block in range(block_dim):  # what a device kernel would run as one block per core
            lo, hi = block * per_block, min(n, (block + 1) * per_block)
            values: List[float] = src[lo:hi].tolist()
            for i, v in enumerate(values, lo):
                dst[i] = v * scale + bias
