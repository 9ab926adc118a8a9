"""ge: the Python side of the GE plugin host.

Subpackages: ``ge.custom_op`` (register_op, register_op_impl, contexts),
``ge.runtime`` (Tensor, TensorDesc, shapes, formats) and ``ge.graph``
(DataType, Format). Compatible with the Python custom-operator API of Huawei
CANN's Graph Engine; see share/docs for the differences.

The package imports in the host (where ``_ge_native`` is built in) and in a
plain ``/usr/bin/python3`` (where ``_ge_native`` is the extension module next to
this package), so plugin authors can unit-test with ``ge.testing``.
"""

__version__ = "1.0.0"
