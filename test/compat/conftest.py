"""Shared fixtures of the upstream-compatibility suite (see test_*.py)."""
import pytest

from ge.custom_op import _impl, _proto


@pytest.fixture(autouse=True)
def clean_registries():
    """Each test starts and ends with empty prototype and implementation registries."""
    _proto.clear_registered_op_protos()
    _impl.clear_registered_op_impls()
    yield
    _proto.clear_registered_op_protos()
    _impl.clear_registered_op_impls()
