"""ge.testing: run a plugin's callbacks outside the host, for authors' unit tests.

Works in a plain ``/usr/bin/python3`` (and in the host). ``run_execute`` binds
tensors and attributes exactly as the host does (the same C++ dispatch code):
inputs by IR order, attributes as keywords with defaults applied, a borrowed
EagerOpExecutionContext from ``get_execute_ctx()``, and every borrowed object
expired when the callback returns. It also checks what the host checks: unknown
attribute names are refused, the prototype's infer_meta runs first and sizes the
outputs (dynamic ones included), and after ``execute`` every output must be
allocated with infer_meta's dtype and shape. Exceptions raised by infer_meta
and ``execute`` propagate unchanged.

Example::

    from ge.testing import host_tensor, run_execute
    (y,) = run_execute("GeluCustom", [host_tensor([1.0, -2.0], DataType.DT_FLOAT)])
    assert y.tolist() == [...]
"""
import functools
import os
import struct
import warnings
from typing import Any, List, Mapping, Optional, Sequence

import _ge_native

from ge.graph import DataType
from ge.runtime import TensorDesc

from . import custom_op
from .custom_op import _proto
from .custom_op._impl import get_registered_op_impl_by_op_type
from .custom_op._validate import execute_rules, validate_descriptor, validate_impl

__all__ = ["HostTensor", "host_tensor", "run_execute", "run_infer_meta", "run_compile", "run_declare_launch_args"]

_STRUCT = {
    DataType.DT_FLOAT: "f", DataType.DT_FLOAT16: "e", DataType.DT_DOUBLE: "d", DataType.DT_INT8: "b",
    DataType.DT_INT16: "h", DataType.DT_INT32: "i", DataType.DT_INT64: "q", DataType.DT_UINT8: "B",
    DataType.DT_UINT16: "H", DataType.DT_UINT32: "I", DataType.DT_UINT64: "Q", DataType.DT_BOOL: "?",
}


class HostTensor:
    """An owned host tensor: raw little-endian bytes, a shape and a DataType."""

    __slots__ = ("data", "shape", "data_type")

    def __init__(self, data: bytes, shape: List[int], data_type: DataType):
        self.data = bytes(data)
        self.shape = list(shape)
        self.data_type = DataType(data_type)

    def __eq__(self, other):
        return (isinstance(other, HostTensor) and (self.data, self.shape, self.data_type)
                == (other.data, other.shape, other.data_type))

    def __repr__(self):
        return f"HostTensor(shape={self.shape}, data_type={DataType(self.data_type).name}, {len(self.data)} bytes)"

    def tolist(self) -> list:
        """Flat list of the elements (struct-decoded; not for bfloat16)."""
        fmt = _STRUCT.get(DataType(self.data_type))
        if fmt is None:
            raise TypeError(f"no element format for {DataType(self.data_type).name}")
        n = len(self.data) // struct.calcsize(fmt)
        return list(struct.unpack(f"<{n}{fmt}", self.data))

    def _spec(self):
        return (self.data, list(self.shape), DataType(self.data_type))


def host_tensor(values: Sequence[Any], data_type: DataType, shape: Optional[Sequence[int]] = None) -> HostTensor:
    """Build a HostTensor from a flat sequence of numbers (shape defaults to [len])."""
    fmt = _STRUCT.get(DataType(data_type))
    if fmt is None:
        raise TypeError(f"host_tensor cannot encode {DataType(data_type).name}; pass bytes to HostTensor")
    values = list(values)
    shape = [len(values)] if shape is None else list(shape)
    count = 1
    for d in shape:
        count *= d
    if count != len(values):
        raise ValueError(f"{len(values)} values do not fill shape {shape}")
    return HostTensor(struct.pack(f"<{len(values)}{fmt}", *values), shape, DataType(data_type))


def _spec(x):
    if x is None:
        return None
    if isinstance(x, list):
        return [_spec(i) for i in x]
    if isinstance(x, HostTensor):
        return x._spec()
    raise TypeError(f"inputs must be HostTensor, None or a list of HostTensor, got {type(x).__name__}")


def _desc(x):
    """The TensorDesc infer_meta receives for an input entry (as the engine builds it)."""
    if x is None:
        return None
    if isinstance(x, list):
        return [_desc(i) for i in x]
    return TensorDesc(list(x.shape), DataType(x.data_type))


def _check_inputs(proto, inputs):
    """The input checks of the native binding, made before infer_meta runs."""
    if len(inputs) != len(proto.inputs):
        raise TypeError(f"expected {len(proto.inputs)} inputs for {proto.op_type}, got {len(inputs)}")
    for ir, x in zip(proto.inputs, inputs):
        what = f"input '{ir.name}'"
        if ir.kind == "dynamic":
            if not isinstance(x, list):
                raise TypeError(f"{what} is dynamic: pass a list")
            for item in x:
                if not isinstance(item, HostTensor):
                    raise TypeError(f"{what}: inputs must be HostTensor, None or a list of HostTensor, "
                                    f"got {type(item).__name__}")
        elif x is None:
            if ir.kind == "required":
                raise TypeError(f"{what} is required")
        elif not isinstance(x, HostTensor):
            raise TypeError(f"inputs must be HostTensor, None or a list of HostTensor, got {type(x).__name__}")


def _ir(op_type):
    """The canonical IR (``_proto.OpProto``) registered for ``op_type``, or None."""
    return _proto.canonical_ir(_proto.get_registered_op_proto_by_op_type(op_type))


def _check_attrs(proto, attrs):
    """Unknown and missing required attributes, as the host refuses them for a graph node."""
    known = [a.name for a in proto.attrs]
    unknown = sorted(str(k) for k in attrs if k not in known)
    if unknown:
        raise TypeError(f"op_type '{proto.op_type}': unknown attribute(s) {', '.join(map(repr, unknown))}; "
                        f"the IR's attrs: {', '.join(known) if known else '(none)'}")
    for a in proto.attrs:
        if a.required and a.name not in attrs:
            raise TypeError(f"missing required attr '{a.name}'")


def _output_names(proto, flat):
    """A display name per flattened output: ``'y'``, or ``'ys'[1]`` for a dynamic one."""
    names, seen = [], {}
    for index, _ in flat:
        out = proto.outputs[index]
        if out.kind == "dynamic":
            names.append(f"'{out.name}'[{seen.get(index, 0)}]")
            seen[index] = seen.get(index, 0) + 1
        else:
            names.append(f"'{out.name}'")
    return names


def _expanded_proto_dict(proto, flat):
    """``proto.to_dict()`` with each dynamic output replaced by one required output
    per instance infer_meta returned.

    The native ``_testing_execute`` sizes a dynamic output as 0 instances; the
    execute context only exposes flattened output indexes, so this layout is the
    one the engine builds from infer_meta.
    """
    d = proto.to_dict()
    counts = [0] * len(proto.outputs)
    for index, _ in flat:
        counts[index] += 1
    if all(o.kind != "dynamic" for o in proto.outputs):
        return d
    outputs, first = [], []
    for out, count in zip(proto.outputs, counts):
        first.append(len(outputs))
        if out.kind == "dynamic":
            outputs += [{"name": f"{out.name}[{i}]", "kind": "required"} for i in range(count)]
        else:
            outputs.append({"name": out.name, "kind": "required"})
    d["outputs"] = outputs
    d["mutates"] = [[name, first[index]] for name, index in d.get("mutates", [])]
    return d


def run_execute(op_type: str, inputs: Sequence[Any], attrs: Optional[Mapping[str, Any]] = None,
                instance: Any = None) -> List[HostTensor]:
    """Run the registered implementation's ``execute`` for ``op_type``, checked as the host checks it.

    ``inputs`` follow the IR's input order: a HostTensor for a required input,
    None for an absent optional one, a list for a dynamic one. ``attrs`` maps
    attribute names to Python values (defaults applied for missing ones).
    ``instance`` reuses an implementation instance (a new one otherwise).

    As the engine does, the prototype's infer_meta runs first (on TensorDescs
    of the inputs; its exceptions propagate) and gives the outputs: their
    number (a dynamic output has as many instances as infer_meta returned),
    dtypes and shapes. After ``execute`` every output must be allocated and
    match what infer_meta returned.

    The implementation's class decides which GE release's rules apply, as in
    the host (share/docs/plugin-authors.md, "Plugins from earlier GE
    releases"): a legacy ``execute(self, ctx)`` / ``execute(self, inputs)``
    gets the context, and an ``EagerExecuteOp`` subclass's result is not
    checked.

    Returns the outputs, flattened, as HostTensors. Raises RuntimeError when
    op_type has no prototype or no implementation, when execute did not
    allocate an output ("execute did not allocate output N") or an output's
    dtype or shape differs from infer_meta's; TypeError for an unknown
    attribute name, a missing required attribute or bad inputs; ValueError for
    bad attribute values; and whatever infer_meta or execute raises.
    """
    proto = _ir(op_type)
    impl = get_registered_op_impl_by_op_type(op_type)
    if impl is None:
        raise RuntimeError(f"no implementation registered for op_type '{op_type}'")
    if "eager_execute" not in impl.interfaces:  # as the engine refuses such a node
        raise RuntimeError(f"op_type '{op_type}' ({impl.descriptor_key}) has no execute: its implementation can "
                           f"neither execute nor declare launch args here (capabilities: "
                           f"{', '.join(impl.interfaces)}); run_compile / run_declare_launch_args run the others")
    validate_impl(impl, "execute", proto)
    try:  # execute's verdict is above; what a load would warn about (compile is checked by run_compile)
        decided = validate_descriptor(impl, proto) if proto is not None else None
    except (RuntimeError, TypeError, ValueError):
        decided = None
    if decided is not None:
        # Loads in the host too, with the same warnings in its log.
        for note in decided.warnings:
            warnings.warn(note, UserWarning, stacklevel=2)
        if decided.rules == "newest" and decided.newest_refusal:
            warnings.warn(f"op_type '{op_type}' loads here, but the newest GE refuses it: {decided.newest_refusal}",
                          UserWarning, stacklevel=2)
    if proto is None:  # a legacy execute registers without one; running it needs one (as in the engine)
        validate_descriptor(impl, None)  # the host refuses the plugin when compile or declare_launch_args needs it
        raise RuntimeError(f"op_type '{op_type}' has no prototype (canonical IR): its implementation "
                           f"{impl.descriptor_key} has a legacy execute (one that takes the execute context, or "
                           f"GE 9.2.0-beta.1's input list), which registers without one, but a node needs one to "
                           f"run: register one with register_op(op_type='{op_type}')")
    _, call = execute_rules(impl.cls, proto)
    inputs = list(inputs)
    attrs = dict(attrs or {})
    _check_inputs(proto, inputs)
    _check_attrs(proto, attrs)
    full = {a["name"]: a["default"] for a in proto.to_dict()["attrs"] if not a["required"]}
    full.update(attrs)
    flat = _proto.call_infer_meta(proto, [_desc(x) for x in inputs], full)
    obj = instance if instance is not None else impl.cls()
    outs = _ge_native._testing_execute(obj.execute, custom_op._EXECUTE_CTX, _expanded_proto_dict(proto, flat),
                                       [_spec(x) for x in inputs], attrs, call)
    if len(outs) != len(flat):  # cannot happen with the layout above; never return a partial check
        raise RuntimeError(f"op_type '{op_type}': execute produced {len(outs)} output slot(s), "
                           f"infer_meta returned {len(flat)}")
    names = _output_names(proto, flat)
    result = []
    for i, (o, (_, want), name) in enumerate(zip(outs, flat, names)):
        if o is None:
            raise RuntimeError(f"op_type '{op_type}': execute did not allocate output {i} ({name})")
        got = HostTensor(o[0], list(o[1]), DataType(o[2]))
        want_dtype, want_shape = DataType(want.data_type), list(want.shape.storage_shape.dims)
        if got.data_type != want_dtype:
            raise RuntimeError(f"op_type '{op_type}': output {i} ({name}) has dtype {got.data_type.name}, "
                               f"expected {want_dtype.name} (from infer_meta)")
        if got.shape != want_shape:
            raise RuntimeError(f"op_type '{op_type}': output {i} ({name}) has shape {got.shape}, "
                               f"expected {want_shape} (from infer_meta)")
        result.append(got)
    return result


def run_infer_meta(op_type: str, inputs: Sequence[Any], attrs: Optional[Mapping[str, Any]] = None) -> list:
    """Call ``op_type``'s prototype as infer_meta (TensorDesc inputs, attrs with
    defaults applied) and return the flattened output TensorDescs."""
    proto = _ir(op_type)
    if proto is None:
        raise RuntimeError(f"no prototype registered for op_type '{op_type}'")
    full = {a["name"]: a["default"] for a in proto.to_dict()["attrs"] if not a["required"]}
    full.update(attrs or {})
    return [desc for _, desc in _proto.call_infer_meta(proto, list(inputs), full)]


def _outputs_by_ir(proto, inputs, attrs):
    """infer_meta's outputs grouped by IR output: a TensorDesc, or a list for a dynamic one."""
    full = {a["name"]: a["default"] for a in proto.to_dict()["attrs"] if not a["required"]}
    full.update(attrs or {})
    flat = _proto.call_infer_meta(proto, list(inputs), full)
    grouped = []
    for index, out in enumerate(proto.outputs):
        descs = [d for i, d in flat if i == index]
        grouped.append(descs if out.kind == "dynamic" else descs[0])
    return grouped


def _default_platform_dir():
    env = os.environ.get("GE_PLATFORM_DIR")
    if env:
        return env
    # The nearest ancestor holding share/platform (source or build tree) or
    # share/ge-plugin/platform (an installed prefix, whatever its libdir).
    here = os.path.dirname(os.path.realpath(__file__))
    for _ in range(8):
        for rel in ("share/platform", "share/ge-plugin/platform"):
            cand = os.path.join(here, rel)
            if os.path.isdir(cand):
                return cand
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return "share/platform"


def run_compile(op_type: str, inputs: Sequence[Any], outputs: Optional[Sequence[Any]] = None,
                attrs: Optional[Mapping[str, Any]] = None, options: Optional[Mapping[str, str]] = None,
                soc: str = "host", platform_dir: Optional[str] = None, instance: Any = None) -> Any:
    """Run the registered implementation's ``compile`` for ``op_type``.

    ``inputs`` are TensorDescs by IR order (None for an absent optional input,
    a list for a dynamic one); ``outputs`` likewise, computed with the
    prototype's infer_meta when omitted. ``options`` are the compile options,
    ``soc`` the platform ("host" or a share/platform ini name). The signature is
    validated first, as the host does on every call. Returns the instance used
    (pass it to run_execute to run with the state compile prepared). Raises
    whatever compile raises.
    """
    proto = _ir(op_type)
    impl = get_registered_op_impl_by_op_type(op_type)
    if impl is None:
        raise RuntimeError(f"no implementation registered for op_type '{op_type}'")
    validate_impl(impl, "compile", proto)
    if outputs is None:
        outputs = _outputs_by_ir(proto, inputs, attrs)
    obj = instance if instance is not None else impl.cls()
    revalidate = functools.partial(validate_impl, impl, "compile", proto)
    _ge_native._testing_compile(obj.compile, revalidate, custom_op._COMPILE_CTX, custom_op._COMPILE_PLATFORM,
                                proto.to_dict(), list(inputs), list(outputs), dict(attrs or {}),
                                dict(options or {}), soc, platform_dir or _default_platform_dir())
    return obj


def run_declare_launch_args(op_type: str, inputs: Sequence[Any], outputs: Optional[Sequence[Any]] = None,
                            attrs: Optional[Mapping[str, Any]] = None, instance: Any = None, stream_id: int = 0) -> dict:
    """Run the registered implementation's ``declare_launch_args`` for ``op_type``.

    ``inputs``/``outputs`` are TensorDescs by IR order (outputs computed with
    infer_meta when omitted). Pass the ``instance`` returned by run_compile to
    see what compile prepared. Returns the declared task plan:
    ``{"launches": [{"kernel_name", "kernel_bin", "block_dim", "stream_id",
    "args": [(kind, value), ...]}], "workspaces": [size, ...]}`` where kind is
    "input", "output", "workspace" or "scalar". Raises whatever the callback
    raises, and RuntimeError when it declares no launch.
    """
    proto = _ir(op_type)
    impl = get_registered_op_impl_by_op_type(op_type)
    if impl is None:
        raise RuntimeError(f"no implementation registered for op_type '{op_type}'")
    validate_impl(impl, "declare_launch_args", proto)
    if outputs is None:
        outputs = _outputs_by_ir(proto, inputs, attrs)
    obj = instance if instance is not None else impl.cls()
    return _ge_native._testing_declare(obj.declare_launch_args, custom_op._LAUNCH_CTX, proto.to_dict(), list(inputs),
                                       list(outputs), dict(attrs or {}), stream_id)
