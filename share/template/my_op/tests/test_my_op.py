"""Unit tests of MyOpCustom outside the host, with ge.testing.

Run from the folder that contains my_op (your opp folder), with the ge package
(the host's build/python, or the installed Python directory) on PYTHONPATH:

    PYTHONPATH=<ge python dir>:<opp folder> /usr/bin/python3 -m pytest <opp folder>/my_op/tests
"""
import pytest

import my_op  # importing the package registers its op (prototype and implementation)
from ge.graph import DataType
from ge.runtime import TensorDesc
from ge.testing import host_tensor, run_compile, run_execute, run_infer_meta

OP = my_op.OP_TYPE


def test_infer_meta_keeps_shape_and_dtype() -> None:
    (y,) = run_infer_meta(OP, [TensorDesc([2, 3], DataType.DT_DOUBLE)], {"scale": 2.0})
    assert y == TensorDesc([2, 3], DataType.DT_DOUBLE)


def test_infer_meta_rejects_integer_inputs() -> None:
    with pytest.raises(TypeError, match="float32 and float64"):
        run_infer_meta(OP, [TensorDesc([4], DataType.DT_INT32)])


def test_execute_computes_scale_and_bias() -> None:
    x = host_tensor([1.0, -2.0, 0.5, 4.0], DataType.DT_FLOAT, shape=[2, 2])
    (y,) = run_execute(OP, [x], {"scale": 2.0, "bias": 0.5})
    assert y.shape == [2, 2] and y.data_type == DataType.DT_FLOAT
    assert y.tolist() == [2.5, -3.5, 1.5, 8.5]


def test_execute_uses_the_attribute_defaults() -> None:
    (y,) = run_execute(OP, [host_tensor([1.5, -3.0], DataType.DT_DOUBLE)])
    assert y.tolist() == [1.5, -3.0]  # scale 1.0, bias 0.0


def test_compile_tiling_follows_the_option_and_execute_uses_it() -> None:
    x = TensorDesc([10], DataType.DT_FLOAT)
    inst = run_compile(OP, [x], options={my_op.MAX_BLOCK_DIM_OPTION: "1"})
    assert inst.tilings[((10,), int(DataType.DT_FLOAT))] == (1, 10)
    inst = run_compile(OP, [x], options={my_op.MAX_BLOCK_DIM_OPTION: "3"})
    block_dim, per_block = inst.tilings[((10,), int(DataType.DT_FLOAT))]
    assert 1 <= block_dim <= 3 and block_dim * per_block >= 10
    # execute with the instance compile prepared, as the host does (one instance per op_type).
    values = [float(i) for i in range(10)]
    (y,) = run_execute(OP, [host_tensor(values, DataType.DT_FLOAT)], {"scale": 0.5}, instance=inst)
    assert y.tolist() == [v * 0.5 for v in values]


def test_compile_rejects_a_bad_option() -> None:
    with pytest.raises(ValueError, match="max_block_dim must be positive"):
        run_compile(OP, [TensorDesc([4], DataType.DT_FLOAT)], options={my_op.MAX_BLOCK_DIM_OPTION: "0"})
