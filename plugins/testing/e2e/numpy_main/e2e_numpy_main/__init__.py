"""E2eNumpyZeroCopy: numpy.asarray(tensor) shares memory (isolation = "main").

Writes float32 verdicts (1.0 = as specified), in the order of CHECKS.
"""
import numpy as np

from ge.custom_op import get_execute_ctx, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import StorageFormat, StorageShape, Tensor, TensorDesc

CHECKS = [
    "asarray(input) points at the tensor's address",
    "asarray(input) has the tensor's shape and dtype",
    "asarray(input) equals the data read through Tensor.data",
    "asarray(output) points at the output's address",
    "a numpy write is seen through Tensor.data",
    "a Tensor.data write is seen through numpy",
    "__array_interface__ is version 3",
]


@register_op(op_type="E2eNumpyZeroCopy")
def e2e_numpy_zero_copy(x: TensorDesc) -> TensorDesc:
    return TensorDesc([len(CHECKS)], DataType.DT_FLOAT)


@register_op_impl(op_type="E2eNumpyZeroCopy")
class E2eNumpyZeroCopyImpl:
    def execute(self, x: Tensor) -> None:
        a = np.asarray(x)
        y = get_execute_ctx().malloc_output_tensor(0, StorageShape([len(CHECKS)], [len(CHECKS)]), StorageFormat(), DataType.DT_FLOAT)
        ay = np.asarray(y)
        ay[3] = 5.25
        numpy_write_seen = y.data.cast("B").cast("f")[3] == 5.25
        y.data.cast("B").cast("f")[4] = -1.5
        data_write_seen = ay[4] == -1.5
        verdicts = [
            a.__array_interface__["data"][0] == x.addr,
            list(a.shape) == x.storage_shape.dims and a.dtype == np.float32,
            a.ravel().tolist() == x.data.cast("B").cast("f").tolist(),
            ay.__array_interface__["data"][0] == y.addr,
            numpy_write_seen,
            data_write_seen,
            x.__array_interface__.get("version") == 3,
        ]
        ay[...] = np.array(verdicts, dtype=np.float32)
