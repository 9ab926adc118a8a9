"""Internal: frozen record classes without importing :mod:`dataclasses`.

``import dataclasses`` costs ``inspect`` and everything behind it (see
``_sig``), so the registry records (``IrInput``, ``IrOutput``, ``IrAttr``,
``OpProto``, ``OpImplDescriptor``) derive from :class:`FrozenRecord` instead of
being ``@dataclasses.dataclass(frozen=True)``.  A subclass lists its fields in
``_fields`` (in order), defines an explicit ``__init__`` that stores them with
``object.__setattr__`` and may give defaults as class attributes; it then
behaves like the frozen dataclass it replaces:

* ``repr``: ``ClassQualname(field=value!r, ...)``;
* ``==``: same class and equal field tuples (NotImplemented otherwise), no
  ordering; ``hash`` is the hash of the field tuple;
* assigning or deleting any attribute raises
  :class:`dataclasses.FrozenInstanceError` (an AttributeError) with the
  dataclass messages "cannot assign to field 'x'" / "cannot delete field 'x'";
  :mod:`dataclasses` is imported at that moment only (an error path);
* ``__match_args__`` is the field tuple; pickling and :mod:`copy` work on the
  instance ``__dict__`` as for a dataclass;
* ``dataclasses.fields`` / ``asdict`` / ``replace`` / ``is_dataclass`` keep
  working: ``__dataclass_fields__`` and ``__dataclass_params__`` are computed
  (importing :mod:`dataclasses`) on first access, from an equivalent dataclass.

The record modules use ``from __future__ import annotations`` so that they need
not import :mod:`typing` either; their field annotations are therefore text
(``"Tuple[IrInput, ...]"``).  The dataclass twin evaluates them (importing
``typing`` at that moment) so ``dataclasses.fields()`` reports the same types
as the frozen dataclasses did (``typing.Any``, ``typing.Tuple[IrInput, ...]``).
"""
from __future__ import annotations  # annotations are text: no typing import

import sys

__all__ = ["FrozenRecord"]


def _field_types(owner: type) -> dict:
    """The record class's own field annotations as objects (they are text here).

    Evaluated as the class body would have evaluated them without
    ``from __future__ import annotations``: the class namespace, then the
    module's globals, then the names the record modules used to import from
    :mod:`typing`.  Text that does not evaluate is kept as it is (dataclasses
    accept it).
    """
    import typing  # lazily: only the dataclasses API path gets here

    annotations = owner.__dict__.get("__annotations__", {})
    module = sys.modules.get(owner.__module__)
    namespace = dict(vars(typing))
    if module is not None:
        namespace.update(vars(module))
    local = dict(vars(owner))
    types_ = {}
    for name, annotation in annotations.items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace, local)  # noqa: S307 (our own text)
            except Exception:  # pragma: no cover - the records' annotations all evaluate
                pass
        types_[name] = annotation
    return types_


def _frozen_error(message: str) -> AttributeError:
    from dataclasses import FrozenInstanceError  # lazily: error path only

    return FrozenInstanceError(message)


class _LazyDataclassAttr:
    """Class attribute computed on first access from an equivalent frozen dataclass."""

    def __init__(self, name: str):
        self._name = name

    def __get__(self, instance: Any, owner: type) -> Any:
        fields = owner.__dict__.get("_fields")
        if fields is None:  # the base class itself is not a record
            raise AttributeError(self._name)
        import dataclasses  # lazily: only code that uses the dataclasses API gets here
        import typing

        annotations = _field_types(owner)
        spec = []
        for name in fields:
            if name in owner.__dict__:
                spec.append((name, annotations.get(name, typing.Any),
                             dataclasses.field(default=owner.__dict__[name])))
            else:
                spec.append((name, annotations.get(name, typing.Any)))
        twin = dataclasses.make_dataclass(owner.__name__, spec, frozen=True)
        for attr in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(owner, attr, twin.__dict__[attr])  # cache on the record class
        return owner.__dict__[self._name]


class FrozenRecord:
    """Base of the immutable registry records (see the module docstring)."""

    _fields: Tuple[str, ...] = ()

    __dataclass_fields__ = _LazyDataclassAttr("__dataclass_fields__")
    __dataclass_params__ = _LazyDataclassAttr("__dataclass_params__")

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        cls.__match_args__ = cls._fields

    def _astuple(self) -> Tuple[Any, ...]:
        d = self.__dict__
        return tuple(d[name] for name in self._fields)

    def __repr__(self) -> str:
        d = self.__dict__
        inner = ", ".join(f"{name}={d[name]!r}" for name in self._fields)
        return f"{type(self).__qualname__}({inner})"

    def __eq__(self, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return self._astuple() == other._astuple()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._astuple())

    def __setattr__(self, name: str, value: Any) -> None:
        raise _frozen_error(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise _frozen_error(f"cannot delete field {name!r}")
