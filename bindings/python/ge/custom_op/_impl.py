"""Operator implementations: ``register_op_impl`` and the implementation registry.

GE's ``register_op_impl(*, op_type)`` (share/docs/plugin-authors.md,
"The implementation"). The decorator reflects a class's callback methods, in the
fixed order ``execute`` -> ``"eager_execute"``, ``compile`` -> ``"compilable"``,
``declare_launch_args`` -> ``"annotated_args"``, records a frozen
:class:`OpImplDescriptor` in a per-interpreter registry and sets it on the class
as ``__ge_op_impl_descriptor__``. Registration neither instantiates the class
nor checks callback signatures; :mod:`ge.custom_op._validate` does that when
the plugin is loaded.

Rules (GE's where GE has one, ours where it is silent; see the docs):

* ``class_name`` is ``cls.__name__`` (the key reads "module:ClassName:op_type"
  even for a class defined inside a function).
* Methods are looked up along the class's MRO without triggering descriptors:
  an inherited method, a ``staticmethod`` and a ``classmethod`` count. A
  non-callable ``execute`` / ``declare_launch_args`` attribute is ignored (as
  in GE); a non-callable ``compile`` raises "compile must be callable".
* Decorating a class for an op_type (or descriptor key) already registered
  raises ``ValueError``, even for the same class.
* ``get_registered_op_impls()`` is sorted by op_type (like the prototypes);
  ``get_registered_op_impl_by_descriptor_key`` returns None for an unknown key.
* The dict view (:meth:`OpImplDescriptor.to_bridge_dict`) is plain data (no
  class); the host's ``collect`` adds the class under ``"cls"``.
"""

from __future__ import annotations  # annotations are text: no typing import (see _proto)

import abc

from ._record import FrozenRecord

__all__ = [
    "OpImplDescriptor",
    "InterfaceList",
    "METHOD_INTERFACES",
    "register_op_impl",
    "get_registered_op_impls",
    "get_registered_op_impl_dicts",
    "get_registered_op_impl_by_descriptor_key",
    "clear_registered_op_impls",
]

#: Callback method name -> capability (interface) name, in the fixed reflection order.
METHOD_INTERFACES: Tuple[Tuple[str, str], ...] = (
    ("execute", "eager_execute"),
    ("compile", "compilable"),
    ("declare_launch_args", "annotated_args"),
)
INTERFACE_METHODS: Dict[str, str] = {iface: method for method, iface in METHOD_INTERFACES}

_MISSING = object()


class InterfaceList(tuple):
    """The capability names of an implementation: immutable, and equal to a list.

    GE's descriptors carry ``interfaces`` as a list, and plugins compare it with
    one (``d.interfaces == ["eager_execute"]``); ours is a tuple subclass, so
    the frozen descriptor cannot be changed through it, that also compares equal
    to a list (or tuple) with the same items. ``repr`` reads as a list.
    """
    __slots__ = ()

    def __eq__(self, other: Any) -> Any:
        if isinstance(other, (list, tuple)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __ne__(self, other: Any) -> Any:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return repr(list(self))


class OpImplDescriptor(FrozenRecord):
    """The frozen record of one registered implementation class (GE's ``OpImplDescriptor``).

    Fields: ``descriptor_key`` ("module:ClassName:op_type"), ``op_type``,
    ``module_name``, ``class_name``, ``interfaces`` (an :class:`InterfaceList` of
    capability names in the fixed order eager_execute, compilable,
    annotated_args; equal to the list of the same names), ``cls``.
    """
    # A frozen value class (``_record.FrozenRecord``): the behaviour of
    # ``@dataclasses.dataclass(frozen=True)`` without importing dataclasses/inspect.
    _fields = ("descriptor_key", "op_type", "module_name", "class_name", "interfaces", "cls")
    descriptor_key: str
    op_type: str
    module_name: str
    class_name: str
    interfaces: Tuple[str, ...]
    cls: Any

    def __init__(self, descriptor_key: str, op_type: str, module_name: str, class_name: str,
                 interfaces: Sequence[str], cls: Any) -> None:
        set_ = object.__setattr__
        set_(self, "descriptor_key", descriptor_key)
        set_(self, "op_type", op_type)
        set_(self, "module_name", module_name)
        set_(self, "class_name", class_name)
        set_(self, "interfaces", InterfaceList(interfaces))
        set_(self, "cls", cls)

    def to_bridge_dict(self) -> Dict[str, Any]:
        """Plain data, a new copy each call (what ``get_registered_op_impl_dicts()``
        yields): ``descriptor_key``, ``op_type``, ``module_name``, ``class_name``,
        ``interfaces`` (list of str). The class is not included."""
        return {
            "descriptor_key": self.descriptor_key,
            "op_type": self.op_type,
            "module_name": self.module_name,
            "class_name": self.class_name,
            "interfaces": list(self.interfaces),
        }


def lookup_class_attr(cls: type, name: str) -> Any:
    """The raw attribute ``name`` along ``cls.__mro__`` (no descriptor is invoked).

    Returns the object stored in the first class dict that has the name (a plain
    function, a ``staticmethod`` / ``classmethod`` object, ...) or a private
    sentinel when absent (test with :func:`is_missing`).
    """
    for klass in cls.__mro__:  # inspect.getmro
        namespace = vars(klass)
        if name in namespace:
            return namespace[name]
    return _MISSING


def is_missing(value: Any) -> bool:
    """True for the sentinel returned by :func:`lookup_class_attr` for an absent name."""
    return value is _MISSING


def unwrap_method(raw: Any) -> Any:
    """The callable behind a class attribute (``staticmethod``/``classmethod`` unwrapped)."""
    if isinstance(raw, (staticmethod, classmethod)):
        return raw.__func__
    return raw


def no_supported_method_message(cls: type, where: str) -> str:
    """The one text of a class with none of the three callbacks.

    Each public GE release words this refusal its own way and plugins' tests
    match on those words, so the text holds every release's fragment: the
    newest ("must implement at least one supported method: execute, compile,
    declare_launch_args"), 9.2.0-beta.2 and develop (whose list lacks
    compile) and 9.2.0-beta.1 ("register_op_impl expects a BaseCustomOp
    subclass", "expects a supported BaseCustomOp subclass")."""
    return (f"register_op_impl class '{cls.__module__}.{cls.__qualname__}' must implement at least one "
            f"supported method: execute, compile, declare_launch_args {where}; GE 9.2.0-beta.2 and develop "
            f"list the methods without compile ('{cls.__qualname__}' must implement at least one supported "
            f"method: execute, declare_launch_args) and GE 9.2.0-beta.1 says register_op_impl expects a "
            f"BaseCustomOp subclass (register_op_impl expects a supported BaseCustomOp subclass: one that "
            f"defines execute)")


_TPFLAGS_IS_ABSTRACT = 1 << 20


def _isabstract(cls: type) -> bool:
    """:func:`inspect.isabstract` for a class (without importing inspect)."""
    if cls.__flags__ & _TPFLAGS_IS_ABSTRACT:
        return True
    if not issubclass(type(cls), abc.ABCMeta):
        return False
    if hasattr(cls, "__abstractmethods__"):
        # A finished ABC without the abstract flag has no abstract methods left.
        return False
    # ABCMeta.__new__ has not finished yet (e.g. called from __init_subclass__).
    for value in cls.__dict__.values():
        if getattr(value, "__isabstractmethod__", False):
            return True
    for base in cls.__bases__:
        for name in getattr(base, "__abstractmethods__", ()):
            value = getattr(cls, name, None)
            if getattr(value, "__isabstractmethod__", False):
                return True
    return False


_IMPLS: Dict[str, OpImplDescriptor] = {}      # descriptor_key -> descriptor
_KEY_BY_OP_TYPE: Dict[str, str] = {}          # op_type -> descriptor_key


def register_op_impl(*, op_type: str):
    """Class decorator registering an operator implementation (GE's ``register_op_impl``).

    Args:
        op_type: non-empty ``str``, the operator type the class implements.

    Returns:
        A decorator that reflects the class's callbacks in the fixed order
        ``execute`` -> "eager_execute", ``compile`` -> "compilable",
        ``declare_launch_args`` -> "annotated_args" (inherited, ``staticmethod``
        and ``classmethod`` count; a non-callable ``execute`` or
        ``declare_launch_args`` attribute is ignored, as in GE), builds an
        :class:`OpImplDescriptor`, registers it, sets it as
        ``cls.__ge_op_impl_descriptor__`` and returns the class. The class is
        not instantiated and callback signatures are not checked here (that is
        validation against the canonical IR, when the plugin is loaded).

    Raises:
        TypeError: bad ``op_type`` ("register_op_impl op_type must be a
            non-empty string", raised before the class is seen); "register_op_impl
            expects a class"; "register_op_impl expects a concrete class" (an
            abstract class); "compile must be callable" (a ``compile`` attribute
            that is not callable); "register_op_impl class '<module>.<Class>'
            must implement at least one supported method: execute, compile,
            declare_launch_args".
        ValueError: "python op impl type already exists: <op_type>", or
            "python op impl descriptor_key already exists: <key>".
    """
    if not isinstance(op_type, str) or not op_type:
        raise TypeError(f"register_op_impl op_type must be a non-empty string, got {op_type!r}")

    def decorator(cls):
        descriptor = _build_descriptor(op_type, cls)
        _register(descriptor)
        cls.__ge_op_impl_descriptor__ = descriptor
        return cls

    return decorator


def _build_descriptor(op_type: str, cls: Any) -> OpImplDescriptor:
    where = f"(op_type '{op_type}')"
    if not isinstance(cls, type):  # inspect.isclass
        raise TypeError(f"register_op_impl expects a class, got {type(cls).__name__} {where}")
    if _isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ()))) or "?"
        raise TypeError(f"register_op_impl expects a concrete class: {cls.__qualname__} is "
                        f"abstract (abstract methods: {missing}) {where}")
    interfaces = []
    for method, interface in METHOD_INTERFACES:
        raw = lookup_class_attr(cls, method)
        if raw is _MISSING:
            continue
        if not callable(unwrap_method(raw)):
            if method == "compile":  # GE: only a non-callable compile is an error
                raise TypeError(f"compile must be callable, got {type(raw).__name__} on class "
                                f"{cls.__qualname__} {where}")
            continue
        interfaces.append(interface)
    if not interfaces:
        raise TypeError(no_supported_method_message(cls, where))
    module_name = cls.__module__ if isinstance(cls.__module__, str) else str(cls.__module__)
    return OpImplDescriptor(
        descriptor_key=f"{module_name}:{cls.__name__}:{op_type}",
        op_type=op_type,
        module_name=module_name,
        class_name=cls.__name__,
        interfaces=interfaces,
        cls=cls,
    )


def _register(descriptor: OpImplDescriptor) -> None:
    if descriptor.descriptor_key in _IMPLS:
        raise ValueError(f"python op impl descriptor_key already exists: "
                         f"{descriptor.descriptor_key}")
    existing_key = _KEY_BY_OP_TYPE.get(descriptor.op_type)
    if existing_key is not None:
        raise ValueError(f"python op impl type already exists: {descriptor.op_type} "
                         f"(registered by {existing_key}; duplicate from "
                         f"{descriptor.descriptor_key})")
    _IMPLS[descriptor.descriptor_key] = descriptor
    _KEY_BY_OP_TYPE[descriptor.op_type] = descriptor.descriptor_key


def _unregister_op_impl(descriptor_key: str) -> None:
    """Internal (used by ``_host``): forget one implementation and its class attribute."""
    descriptor = _IMPLS.pop(descriptor_key, None)
    if descriptor is None:
        return
    if _KEY_BY_OP_TYPE.get(descriptor.op_type) == descriptor_key:
        del _KEY_BY_OP_TYPE[descriptor.op_type]
    cls = descriptor.cls
    if vars(cls).get("__ge_op_impl_descriptor__") is descriptor:
        try:
            delattr(cls, "__ge_op_impl_descriptor__")
        except (AttributeError, TypeError):  # pragma: no cover - exotic metaclass
            pass


def get_registered_op_impls() -> List[OpImplDescriptor]:
    """All registered implementation descriptors of this interpreter, sorted by op_type."""
    return [_IMPLS[_KEY_BY_OP_TYPE[t]] for t in sorted(_KEY_BY_OP_TYPE)]


def get_registered_op_impl_dicts() -> List[Dict[str, Any]]:
    """``to_bridge_dict()`` of every registered descriptor, sorted by op_type (new copies)."""
    return [d.to_bridge_dict() for d in get_registered_op_impls()]


def get_registered_op_impl_by_descriptor_key(descriptor_key: str) -> Optional[OpImplDescriptor]:
    """The descriptor registered under ``descriptor_key`` ("module:ClassName:op_type"), or None.

    Raises:
        TypeError: ``descriptor_key`` is not a str.
    """
    if not isinstance(descriptor_key, str):
        raise TypeError("descriptor_key must be a str, actual "
                        f"{type(descriptor_key).__name__}")
    return _IMPLS.get(descriptor_key)


def get_registered_op_impl_by_op_type(op_type: str) -> Optional[OpImplDescriptor]:
    """The descriptor registered for ``op_type``, or None (helper for the host)."""
    key = _KEY_BY_OP_TYPE.get(op_type)
    return None if key is None else _IMPLS[key]


def clear_registered_op_impls() -> None:
    """Forget every registered implementation of this interpreter.

    The ``__ge_op_impl_descriptor__`` attributes already set on classes are left
    as they are.
    """
    _IMPLS.clear()
    _KEY_BY_OP_TYPE.clear()
