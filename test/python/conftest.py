"""Shared fixtures of the pure-Python ``ge.custom_op`` tests.

Run with the built package on the path, e.g.
``PYTHONPATH=build/python /usr/bin/python3 -m pytest -q test/python``.
"""
import contextlib

import pytest

from ge.custom_op import _impl, _proto


@pytest.fixture(autouse=True)
def clean_registries():
    """Every test starts and ends with empty prototype and implementation registries."""
    _proto.clear_registered_op_protos()
    _impl.clear_registered_op_impls()
    yield
    _proto.clear_registered_op_protos()
    _impl.clear_registered_op_impls()


@pytest.fixture
def raises():
    """``with raises(ExcType, "fragment", ...)``: exactly ExcType, message holds every fragment."""

    @contextlib.contextmanager
    def _raises(exc_type, *fragments):
        with pytest.raises(BaseException) as info:
            yield info
        assert type(info.value) is exc_type, (
            f"expected {exc_type.__name__}, got {type(info.value).__name__}: {info.value}")
        message = str(info.value)
        for fragment in fragments:
            assert fragment in message, f"{fragment!r} not in {message!r}"

    return _raises


@pytest.fixture
def exec_plugin():
    """Execute plugin source text as module ``name`` and return its namespace.

    Lets tests use ``from __future__ import annotations`` (string annotations)
    and module-level definitions without writing files.
    """

    def _exec(source, name="plugin_mod"):
        namespace = {"__name__": name}
        exec(compile(source, f"<{name}>", "exec"), namespace)
        return namespace

    return _exec
