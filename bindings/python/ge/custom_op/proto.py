"""ge.custom_op.proto: the prototype registry helpers (API.md section 1).

Prototypes are registered with :func:`ge.custom_op.register_op` (API.md section
2); this module gives read access to the registry of the current interpreter:

* :func:`get_registered_op_protos` -> list of :class:`OpProto`, sorted by op_type;
* :func:`get_registered_op_proto_by_op_type` -> :class:`OpProto` or None;
* :func:`get_registered_op_proto_dicts` / :func:`get_registered_op_proto_dict_by_op_type`
  -> the same as plain dicts (``OpProto.to_dict()``);
* :func:`clear_registered_op_protos` empties the registry.

The record types :class:`OpProto`, :class:`IrInput`, :class:`IrOutput` and
:class:`IrAttr` are re-exported for type checks and tests.
"""
from ._proto import (IrAttr, IrInput, IrOutput, OpProto, clear_registered_op_protos,
                     get_registered_op_proto_by_op_type, get_registered_op_proto_dict_by_op_type,
                     get_registered_op_proto_dicts, get_registered_op_protos)

__all__ = [
    "get_registered_op_protos",
    "get_registered_op_proto_by_op_type",
    "get_registered_op_proto_dicts",
    "get_registered_op_proto_dict_by_op_type",
    "clear_registered_op_protos",
    "OpProto",
    "IrInput",
    "IrOutput",
    "IrAttr",
]
