"""ge.custom_op.proto: operator prototypes (GE's ``ge.custom_op.proto``).

* :func:`register_op` (the same object as ``ge.custom_op.register_op``)
  declares a prototype: the function's signature is the operator's canonical
  IR and the function is its infer_meta (share/docs/plugin-authors.md, "The prototype").
* :class:`InputType` (REQUIRED 0, OPTIONAL 1, DYNAMIC 2) and
  :class:`OutputType` (REQUIRED 0, DYNAMIC 1): GE's kind numbering.
* Frozen records :class:`OpInput`, :class:`OpAttr`, :class:`OpOutput`,
  :class:`OpProtoDescriptor` (constructible; sequences are copied into
  tuples, list defaults frozen into tuples).
* The registry of the current interpreter:
  :func:`get_registered_op_protos` (sorted by op_type),
  :func:`get_registered_op_proto_by_op_type` and
  :func:`get_registered_op_proto_by_descriptor_key` (None when absent), the
  dict variants (``OpProtoDescriptor.to_bridge_dict()``) and
  :func:`clear_registered_op_protos`.
"""
from ._proto import (InputType, OpAttr, OpInput, OpOutput, OpProtoDescriptor, OutputType,
                     clear_registered_op_protos, get_registered_op_proto_by_descriptor_key,
                     get_registered_op_proto_by_op_type, get_registered_op_proto_dict_by_op_type,
                     get_registered_op_proto_dicts, get_registered_op_protos, register_op)

__all__ = [
    "register_op",
    "InputType",
    "OutputType",
    "OpInput",
    "OpAttr",
    "OpOutput",
    "OpProtoDescriptor",
    "get_registered_op_protos",
    "get_registered_op_proto_by_op_type",
    "get_registered_op_proto_by_descriptor_key",
    "get_registered_op_proto_dicts",
    "get_registered_op_proto_dict_by_op_type",
    "clear_registered_op_protos",
]
