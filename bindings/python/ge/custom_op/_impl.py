"""Operator implementations: ``register_op_impl`` and the implementation registry.

Implements section 3 of the plugin-author contract (API.md, "Implementation:
``register_op_impl(*, op_type)``").  The decorator reflects a class's callback
methods, in the fixed order ``execute`` -> ``"eager_execute"``, ``compile`` ->
``"compilable"``, ``declare_launch_args`` -> ``"annotated_args"``, records a frozen
:class:`OpImplDescriptor` in a per-interpreter registry and sets it on the class as
``__ge_op_impl_descriptor__``.  Registration neither instantiates the class nor
checks callback signatures; that is :mod:`ge.custom_op._validate`'s job (section 5).

Decisions where API.md is silent (also recorded in the project docs):

* ``class_name`` is ``cls.__name__`` (so the key reads "module:ClassName:op_type"
  even for a class defined inside a function).
* Methods are looked up along the class's MRO without triggering descriptors:
  an inherited method, a ``staticmethod`` and a ``classmethod`` count; any other
  attribute of one of the three names that is not callable (a property, ``None``,
  a number) raises ``TypeError`` "<name> must be callable".
* Decorating a class for an op_type (or descriptor key) already registered raises
  ``ValueError``, even when it is the same class: unlike prototypes, the contract
  lists no idempotent case for implementations.
* ``get_registered_op_impls()`` is sorted by op_type (like the prototypes);
  ``get_registered_op_impl_by_descriptor_key`` returns None for an unknown key.
* The dict view (:meth:`OpImplDescriptor.to_dict`) is plain data (no class); the
  host's ``collect`` adds the class under ``"cls"``.
"""

from __future__ import annotations  # annotations are text: no typing import (see _proto)

import abc

from ._record import FrozenRecord

__all__ = [
    "OpImplDescriptor",
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


class OpImplDescriptor(FrozenRecord):
    """The frozen record of one registered implementation class.

    Fields: ``descriptor_key`` ("module:ClassName:op_type"), ``op_type``,
    ``module_name``, ``class_name``, ``interfaces`` (tuple of capability names in
    the fixed order eager_execute, compilable, annotated_args), ``cls``.
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
                 interfaces: Tuple[str, ...], cls: Any) -> None:
        set_ = object.__setattr__
        set_(self, "descriptor_key", descriptor_key)
        set_(self, "op_type", op_type)
        set_(self, "module_name", module_name)
        set_(self, "class_name", class_name)
        set_(self, "interfaces", interfaces)
        set_(self, "cls", cls)

    def to_dict(self) -> Dict[str, Any]:
        """Plain-data view: keys ``descriptor_key``, ``op_type``, ``module_name``,
        ``class_name``, ``interfaces`` (list of str).  The class is not included."""
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


def _prefix(op_type: str) -> str:
    return f"register_op_impl op_type '{op_type}' failed: "


def register_op_impl(*, op_type: str):
    """Class decorator registering an operator implementation (API.md section 3).

    Args:
        op_type: non-empty ``str``, the operator type the class implements.

    Returns:
        A decorator that reflects the class's ``execute`` / ``compile`` /
        ``declare_launch_args`` callables (inherited, ``staticmethod`` and
        ``classmethod`` count), builds an :class:`OpImplDescriptor`, registers it,
        sets it as ``cls.__ge_op_impl_descriptor__`` and returns the class.  The
        class is not instantiated and callback signatures are not checked here.

    Raises:
        TypeError: bad ``op_type`` (raised here, before the class is seen); not a
            class; an abstract class; none of the supported callables (the message
            lists "execute, compile, declare_launch_args"); one of them exists but
            is not callable ("<name> must be callable", e.g. "compile must be
            callable").
        ValueError: the op_type or the descriptor key is already registered.
    """
    if not isinstance(op_type, str) or not op_type:
        raise TypeError("register_op_impl op_type must be a non-empty str, "
                        f"actual {op_type!r} ({type(op_type).__name__})")

    def decorator(cls):
        descriptor = _build_descriptor(op_type, cls)
        _register(descriptor)
        cls.__ge_op_impl_descriptor__ = descriptor
        return cls

    return decorator


def _build_descriptor(op_type: str, cls: Any) -> OpImplDescriptor:
    p = _prefix(op_type)
    if not isinstance(cls, type):  # inspect.isclass
        raise TypeError(p + f"register_op_impl decorates a class, actual "
                        f"{type(cls).__name__} {cls!r}")
    if _isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ()))) or "?"
        raise TypeError(p + f"class {cls.__qualname__} is abstract (abstract methods: "
                        f"{missing}) and cannot be instantiated")
    interfaces = []
    for method, interface in METHOD_INTERFACES:
        raw = lookup_class_attr(cls, method)
        if raw is _MISSING:
            continue
        if not callable(unwrap_method(raw)):
            raise TypeError(p + f"{method} must be callable, actual "
                            f"{type(raw).__name__} on class {cls.__qualname__}")
        interfaces.append(interface)
    if not interfaces:
        raise TypeError(p + f"class {cls.__qualname__} defines no supported callable: "
                        "expected at least one of execute, compile, declare_launch_args")
    module_name = cls.__module__ if isinstance(cls.__module__, str) else str(cls.__module__)
    return OpImplDescriptor(
        descriptor_key=f"{module_name}:{cls.__name__}:{op_type}",
        op_type=op_type,
        module_name=module_name,
        class_name=cls.__name__,
        interfaces=tuple(interfaces),
        cls=cls,
    )


def _register(descriptor: OpImplDescriptor) -> None:
    p = _prefix(descriptor.op_type)
    existing_key = _KEY_BY_OP_TYPE.get(descriptor.op_type)
    if existing_key is not None:
        raise ValueError(p + f"op_type '{descriptor.op_type}' already has an implementation "
                         f"({existing_key}); duplicate from {descriptor.descriptor_key}")
    if descriptor.descriptor_key in _IMPLS:
        raise ValueError(p + f"descriptor key '{descriptor.descriptor_key}' is already "
                         "registered")
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
    """``to_dict()`` of every registered descriptor, sorted by op_type."""
    return [d.to_dict() for d in get_registered_op_impls()]


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
