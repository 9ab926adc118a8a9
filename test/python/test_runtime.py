"""ge.runtime value types and class rules (share/docs/plugin-authors.md, "Tensors and lifetimes"), in plain python3."""
import gc
import os
import subprocess
import sys

import pytest

import ge.custom_op
import ge.runtime
from ge.graph import DataType, Format
from ge.runtime import (ExpandDimsType, Shape, StorageFormat, StorageShape, Tensor, TensorDesc,
                        TensorPlacement)
from ge_test_helpers import expect, expired

MAX_RANK = 8


_SHAPE_OWNERS = []  # a view expires with its owner: keep each helper StorageShape alive


def shape_of(dims):
    """A Shape (Shape itself cannot be constructed): the origin view of a StorageShape that
    is kept alive here, since a view expires when the object it was taken from is freed."""
    owner = StorageShape(list(dims), list(dims))
    _SHAPE_OWNERS.append(owner)
    return owner.origin_shape


def test_shape_view_expires_with_its_storage_shape():
    view = StorageShape([2, 3], [6]).origin_shape  # the owner is freed at once
    gc.collect()
    expired(lambda: view.dims)
    expect(RuntimeError, lambda: view.dims, "its owning StorageShape handle has expired")


# ---- Shape ------------------------------------------------------------------------------

def test_shape_dims_dim_num_size():
    s = shape_of([2, 3, 4])
    assert isinstance(s, Shape)
    assert s.dims == [2, 3, 4]
    assert s.dim_num == 3
    assert s.size == 24


def test_shape_dims_is_a_copy():
    s = shape_of([2, 3])
    d = s.dims
    d.append(9)
    assert s.dims == [2, 3]


def test_shape_get_dim_and_out_of_range():
    s = shape_of([5, 7])
    assert s.get_dim(0) == 5 and s.get_dim(1) == 7
    with pytest.raises(ValueError):
        s.get_dim(2)
    with pytest.raises(ValueError):
        s.get_dim(-1)


def test_shape_set_dim():
    s = shape_of([5, 7])
    s.set_dim(1, 11)
    assert s.dims == [5, 11] and s.size == 55


@pytest.mark.parametrize("index", [2, 100, -1])
def test_shape_set_dim_out_of_range_is_value_error(index):
    s = shape_of([5, 7])
    with pytest.raises(ValueError):
        s.set_dim(index, 1)
    assert s.dims == [5, 7]


def test_shape_append_dim_up_to_the_maximum_rank():
    s = shape_of([])
    for i in range(MAX_RANK):
        s.append_dim(i + 1)
    assert s.dim_num == MAX_RANK
    with pytest.raises(ValueError):
        s.append_dim(1)
    assert s.dim_num == MAX_RANK


def test_shape_scalar():
    s = shape_of([])
    assert s.is_scalar() and s.dim_num == 0 and s.size == 1
    s2 = shape_of([3])
    assert not s2.is_scalar()
    s2.set_scalar()
    assert s2.is_scalar() and s2.dims == []


def test_shape_view_writes_through_to_its_owner():
    ss = StorageShape([2, 3], [6])
    ss.origin_shape.set_dim(0, 4)
    ss.storage_shape.append_dim(1)
    assert ss.origin_shape.dims == [4, 3]
    assert ss.storage_shape.dims == [6, 1]


def test_shape_wrong_argument_types():
    s = shape_of([2])
    with pytest.raises(TypeError):
        s.get_dim("0")
    with pytest.raises(TypeError):
        s.set_dim(0, 1.5)


# ---- StorageShape -----------------------------------------------------------------------

def test_storage_shape_default_is_scalar():
    ss = StorageShape()
    assert ss.origin_shape.dims == [] and ss.storage_shape.dims == []


def test_storage_shape_origin_and_storage():
    ss = StorageShape([2, 3], [3, 2, 1])
    assert ss.origin_shape.dims == [2, 3]
    assert ss.storage_shape.dims == [3, 2, 1]
    assert isinstance(ss.origin_shape, Shape) and isinstance(ss.storage_shape, Shape)


def test_storage_shape_setters():
    ss = StorageShape()
    ss.set_origin_shape([4, 5])
    ss.set_storage_shape([20])
    assert ss.origin_shape.dims == [4, 5]
    assert ss.storage_shape.dims == [20]


@pytest.mark.parametrize("origin,storage", [([1] * (MAX_RANK + 1), [1]), ([1], [1] * (MAX_RANK + 1))])
def test_storage_shape_too_many_dims(origin, storage):
    expect(ValueError, lambda: StorageShape(origin, storage),
           f"has {MAX_RANK + 1} dims, more than the maximum dimension count {MAX_RANK}")


def test_storage_shape_setters_too_many_dims():
    ss = StorageShape([1], [1])
    expect(ValueError, lambda: ss.set_origin_shape([1] * (MAX_RANK + 1)),
           f"more than the maximum dimension count {MAX_RANK}")
    expect(ValueError, lambda: ss.set_storage_shape([1] * (MAX_RANK + 1)),
           f"more than the maximum dimension count {MAX_RANK}")
    assert ss.origin_shape.dims == [1] and ss.storage_shape.dims == [1]


def test_storage_shape_maximum_rank_is_allowed():
    ss = StorageShape([1] * MAX_RANK, [2] * MAX_RANK)
    assert ss.origin_shape.dim_num == MAX_RANK


# ---- TensorDesc --------------------------------------------------------------------------

def test_tensor_desc_from_list():
    td = TensorDesc([2, 3], DataType.DT_FLOAT16)
    assert td.shape.origin_shape.dims == [2, 3]
    assert td.shape.storage_shape.dims == [2, 3]
    assert td.data_type == DataType.DT_FLOAT16
    assert isinstance(td.data_type, DataType)


def test_tensor_desc_from_none_is_scalar():
    td = TensorDesc(None, DataType.DT_INT32)
    assert td.shape.storage_shape.is_scalar() and td.shape.origin_shape.is_scalar()


def test_tensor_desc_copies_a_storage_shape():
    ss = StorageShape([2, 3], [6])
    td = TensorDesc(ss, DataType.DT_FLOAT)
    assert td.shape.origin_shape.dims == [2, 3] and td.shape.storage_shape.dims == [6]
    ss.set_origin_shape([9])
    ss.storage_shape.set_dim(0, 99)
    assert td.shape.origin_shape.dims == [2, 3] and td.shape.storage_shape.dims == [6]
    td.shape.set_origin_shape([7])
    assert ss.origin_shape.dims == [9]


def test_tensor_desc_shape_view_is_a_view_of_the_desc():
    td = TensorDesc([2], DataType.DT_FLOAT)
    view = td.shape
    view.set_storage_shape([4, 4])
    assert td.shape.storage_shape.dims == [4, 4]


def test_tensor_desc_shape_view_after_the_desc_is_gone_never_reads_freed_memory():
    td = TensorDesc([2, 5], DataType.DT_FLOAT)
    view = td.shape
    del td
    gc.collect()
    expect(RuntimeError, lambda: view.storage_shape.dims,
           "Borrowed native object has expired: its owning TensorDesc handle has expired")


def test_tensor_desc_shape_is_settable():
    td = TensorDesc([2, 3], DataType.DT_FLOAT)
    td.shape = StorageShape([4], [5])
    assert td.shape.origin_shape.dims == [4] and td.shape.storage_shape.dims == [5]
    td.shape = [7, 8]
    assert td.shape.origin_shape.dims == [7, 8] and td.shape.storage_shape.dims == [7, 8]
    td.shape = None
    assert td.shape.origin_shape.is_scalar() and td.shape.storage_shape.is_scalar()
    with pytest.raises(TypeError, match="TensorDesc shape must be a StorageShape, list of integers, or None"):
        td.shape = (1, 2)
    assert td.shape.origin_shape.is_scalar()


SHAPE_TYPE_ERROR = "TensorDesc shape must be a StorageShape, list of integers, or None, got "


@pytest.mark.parametrize("bad,got", [
    ((2, 3), "tuple"), ("23", "str"), (3, "int"), ({"a": 1}, "dict"),
    (StorageFormat(), "StorageFormat"), ([1, True], "a list holding bool at index 1"),
    ([1, 2.0], "a list holding float at index 1"),
], ids=repr)
def test_tensor_desc_bad_shape_type(bad, got):
    expect(TypeError, lambda: TensorDesc(bad, DataType.DT_FLOAT), SHAPE_TYPE_ERROR + got)


@pytest.mark.parametrize("bad", [0, 1.0, "DT_FLOAT", None, Format.FORMAT_ND])
def test_tensor_desc_data_type_must_be_a_datatype(bad):
    expect(TypeError, lambda: TensorDesc([1], bad),
           f"must be a DataType (ge.graph.DataType), got {type(bad).__name__}")


def test_tensor_desc_data_type_at_dt_max_is_value_error():
    expect(ValueError, lambda: TensorDesc([1], DataType.DT_MAX),
           "must be less than DataType.DT_MAX (29), got 29")


def test_tensor_desc_too_many_dims_is_value_error():
    expect(ValueError, lambda: TensorDesc([1] * (MAX_RANK + 1), DataType.DT_FLOAT),
           f"TensorDesc shape exceeds the maximum dimension count {MAX_RANK}: got {MAX_RANK + 1} dims")


def test_tensor_desc_bad_dim_type():
    expect(TypeError, lambda: TensorDesc([1, "2"], DataType.DT_FLOAT),
           SHAPE_TYPE_ERROR + "a list holding str at index 1")


def test_tensor_desc_set_data_type():
    td = TensorDesc([1], DataType.DT_FLOAT)
    td.data_type = DataType.DT_BF16
    assert td.data_type == DataType.DT_BF16
    with pytest.raises(TypeError):
        td.data_type = "float"
    with pytest.raises(ValueError):
        td.data_type = DataType.DT_MAX
    assert td.data_type == DataType.DT_BF16


def test_tensor_desc_equality():
    assert TensorDesc([2], DataType.DT_FLOAT) == TensorDesc([2], DataType.DT_FLOAT)
    assert not TensorDesc([2], DataType.DT_FLOAT) == TensorDesc([3], DataType.DT_FLOAT)
    assert not TensorDesc([2], DataType.DT_FLOAT) == TensorDesc([2], DataType.DT_INT8)


# ---- StorageFormat, ExpandDimsType, TensorPlacement -------------------------------------------

def test_storage_format_values():
    edt = ExpandDimsType("1")
    sf = StorageFormat(Format.FORMAT_NCHW, Format.FORMAT_NHWC, edt)
    assert sf.origin_format == Format.FORMAT_NCHW
    assert sf.storage_format == Format.FORMAT_NHWC
    assert sf.expand_dims_type == edt
    sf.set_origin_format(Format.FORMAT_ND)
    sf.set_storage_format(Format.FORMAT_NCHW)
    sf.set_expand_dims_type(ExpandDimsType("10"))
    assert sf.origin_format == Format.FORMAT_ND and sf.storage_format == Format.FORMAT_NCHW
    assert sf.expand_dims_type == ExpandDimsType("10")


def test_storage_format_expand_dims_type_is_a_view():
    sf = StorageFormat(Format.FORMAT_ND, Format.FORMAT_ND, ExpandDimsType("10"))
    view = sf.expand_dims_type
    view.set_expand_index(1)
    assert sf.expand_dims_type.rule == "11"
    del sf
    gc.collect()
    expect(RuntimeError, lambda: view.rule, "its owning StorageFormat handle has expired")


def test_expand_dims_type_full_size_and_set_expand_index():
    e = ExpandDimsType("1010")
    assert e.full_size == 4
    e.set_expand_index(1)
    assert e.rule == "1110" and e.is_expand_index(1)


def test_storage_format_bad_expand_dims_type():
    with pytest.raises(TypeError):
        StorageFormat(Format.FORMAT_ND, Format.FORMAT_ND, "101")


def test_expand_dims_type_from_rule_string():
    e = ExpandDimsType("101")
    assert e.rule == "101"
    assert e.rule_size == 3
    assert e.is_expand_index(0) and not e.is_expand_index(1) and e.is_expand_index(2)


def test_expand_dims_type_from_int_mask():
    assert ExpandDimsType(0b101) == ExpandDimsType("101")
    assert ExpandDimsType(0b101).mask == ExpandDimsType("101").mask == 5
    assert ExpandDimsType("011") != ExpandDimsType("110")


def test_expand_dims_type_bad_rules():
    with pytest.raises(ValueError):
        ExpandDimsType("1x1")
    with pytest.raises(TypeError):
        ExpandDimsType(1.5)
    with pytest.raises(TypeError):
        ExpandDimsType(True)


def test_tensor_placement_members():
    assert [m.name for m in TensorPlacement] == ["ON_DEVICE_HBM", "ON_HOST", "FOLLOWING", "ON_DEVICE_P2P", "END"]
    assert [int(m) for m in TensorPlacement] == [0, 1, 2, 3, 4]


def test_datatype_and_format_numbering():
    expected = {"DT_FLOAT": 0, "DT_FLOAT16": 1, "DT_INT8": 2, "DT_INT32": 3, "DT_UINT8": 4, "DT_INT16": 6,
                "DT_UINT16": 7, "DT_UINT32": 8, "DT_INT64": 9, "DT_UINT64": 10, "DT_DOUBLE": 11, "DT_BOOL": 12,
                "DT_BF16": 27, "DT_UNDEFINED": 28}
    assert {k: int(getattr(DataType, k)) for k in expected} == expected
    assert (Format.FORMAT_NCHW, Format.FORMAT_NHWC, Format.FORMAT_ND) == (0, 1, 2)


# ---- class rules -------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [Tensor, Shape, ge.custom_op.EagerOpExecutionContext,
                                 ge.custom_op.OpCompileContext, ge.custom_op.CompilePlatformInfo,
                                 ge.custom_op.AnnotatedArgsContext, ge.custom_op.AnnotatedKernelArgs,
                                 ge.custom_op.WorkspaceAddr, ge.custom_op.InferMetaContext],
                         ids=lambda c: c.__name__)
def test_native_classes_are_not_constructible(cls):
    with pytest.raises(TypeError):
        cls()


def test_owned_value_types_are_constructible():
    assert isinstance(TensorDesc([1], DataType.DT_FLOAT), TensorDesc)
    assert isinstance(StorageShape(), StorageShape)
    assert isinstance(StorageFormat(), StorageFormat)
    assert isinstance(ExpandDimsType("1"), ExpandDimsType)
    info = ge.custom_op.AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin=b"\x7fELF", block_dim=1, stream_id=0)
    assert info.kernel_name == "k" and info.block_dim == 1


@pytest.mark.parametrize("cls", [Tensor, Shape, StorageShape, StorageFormat, ExpandDimsType, TensorDesc,
                                 ge.custom_op.EagerOpExecutionContext], ids=lambda c: c.__name__)
def test_native_class_objects_cannot_be_modified(cls):
    with pytest.raises(TypeError):
        setattr(cls, "injected", 1)
    with pytest.raises(TypeError):
        setattr(cls, "__repr__", lambda self: "hacked")
    assert not hasattr(cls, "injected")


def test_tensor_class_attribute_cannot_be_replaced_or_deleted():
    with pytest.raises(TypeError):
        ge.runtime.Tensor.data = property(lambda self: b"")
    with pytest.raises(TypeError):
        del ge.runtime.Tensor.shape
    # Properties of the shared classes are frozen descriptors: re-initializing
    # one (property.__init__ again) cannot change it for other plugins.
    desc = Tensor.__dict__["data"]
    assert type(desc).__name__ == "frozen_property"
    assert not isinstance(desc, property)
    desc.__init__(lambda self: 1)
    assert Tensor.__dict__["data"] is desc
    with pytest.raises(AttributeError):
        desc.fget = lambda self: 1
    with pytest.raises(TypeError):
        type(desc)()


def test_runtime_exports():
    assert set(ge.runtime.__all__) == {"Tensor", "TensorDesc", "Shape", "StorageShape", "StorageFormat",
                                       "ExpandDimsType", "TensorPlacement"}
    for name in ge.runtime.__all__:
        assert getattr(ge.runtime, name) is not None


def test_package_imports_in_plain_system_python3():
    pkg_dir = os.path.dirname(os.path.dirname(ge.runtime.__file__))
    env = dict(os.environ, PYTHONPATH=pkg_dir, PYTHONDONTWRITEBYTECODE="1")
    code = ("import sys, ge, ge.custom_op, ge.custom_op.proto, ge.runtime, ge.graph, ge.testing; "
            "print(sys.executable); print(ge.runtime.Tensor.__name__)")
    p = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["/usr/bin/python3", "Tensor"]
