"""Helpers shared by the pytest suites of test/python (plain functions, usable
inside lambdas; the ``raises`` fixture in conftest.py is the context-manager form)."""
import pytest

from ge.graph import DataType
from ge.runtime import TensorDesc

EXPIRED = "Borrowed native object has expired"


def desc(dims, dtype=DataType.DT_FLOAT):
    return TensorDesc(list(dims), dtype)


def expect(exc_type, fn, *fragments):
    """fn() raises exactly exc_type with every fragment in its message."""
    with pytest.raises(BaseException) as info:
        fn()
    assert type(info.value) is exc_type, f"expected {exc_type.__name__}, got {type(info.value).__name__}: {info.value}"
    for f in fragments:
        assert f in str(info.value), f"{f!r} not in {str(info.value)!r}"
    return info.value


def expired(fn):
    expect(RuntimeError, fn, EXPIRED)
