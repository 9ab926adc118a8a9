"""Internal: a function's parameters without importing :mod:`inspect`.

``import inspect`` pulls in ``ast``, ``dis``, ``tokenize``, ``linecache``, the
enum machinery and more (several MiB and milliseconds per sub-interpreter; see
share/docs/host-design.md, "Targets").  Every prototype and almost every implementation
method is a plain ``def``, whose parameters can be read straight from the code
object, so this module does that and only falls back to :mod:`inspect` (imported
lazily, at that moment) for the rare callables it does not model.

Fast path (:func:`signature`): a ``types.FunctionType`` with none of the
attributes that make :func:`inspect.signature` look elsewhere (``__wrapped__``
from :func:`functools.wraps`, ``__signature__``, ``_partialmethod``) and a dict
(or None) ``__annotations__``.  Its parameters come from ``co_argcount``,
``co_posonlyargcount``, ``co_kwonlyargcount``, ``co_varnames``, ``co_flags``
(``CO_VARARGS`` / ``CO_VARKEYWORDS``), ``__defaults__``, ``__kwdefaults__`` and
``__annotations__``, exactly as :func:`inspect.signature` reads them.

Fallback: anything else (a decorated function carrying ``__wrapped__``, a
``functools.partial``, a bound method, a builtin, an instance with
``__call__``, ...) goes through :func:`inspect.signature`, whose result is
converted to the same :class:`Param` records; its exceptions propagate
unchanged.  ``staticmethod`` / ``classmethod`` objects are unwrapped by the
callers (``__func__``) before they get here, so they take the fast path.

Parameter kinds use :class:`inspect.Parameter`'s numbering (``_ParameterKind``
is an IntEnum with these values), and :data:`EMPTY` plays the role of
``inspect.Parameter.empty`` / ``inspect.Signature.empty``.
"""

from __future__ import annotations  # annotations are text: no typing import (see _proto)

import types

__all__ = [
    "EMPTY", "POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL",
    "KEYWORD_ONLY", "VAR_KEYWORD", "POSITIONAL", "Param", "signature", "unwrap",
    "is_plain_function", "is_generator_or_coroutine_function",
]

# inspect._ParameterKind values.
POSITIONAL_ONLY = 0
POSITIONAL_OR_KEYWORD = 1
VAR_POSITIONAL = 2
KEYWORD_ONLY = 3
VAR_KEYWORD = 4
POSITIONAL = (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD)

# Code flags (Include/cpython/code.h; the same values as inspect.CO_*).
_CO_VARARGS = 0x04
_CO_VARKEYWORDS = 0x08
_CO_GENERATOR = 0x20
_CO_COROUTINE = 0x80
_CO_ASYNC_GENERATOR = 0x200


class _Empty:
    """The "no default" / "no annotation" marker (like ``inspect.Parameter.empty``)."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "<empty>"


EMPTY = _Empty()


class Param:
    """One parameter: ``name``, ``kind`` (0..4 as above), ``default``, ``annotation``."""
    __slots__ = ("name", "kind", "default", "annotation")

    def __init__(self, name: str, kind: int, default: Any = EMPTY, annotation: Any = EMPTY):
        self.name = name
        self.kind = kind
        self.default = default
        self.annotation = annotation

    def __repr__(self) -> str:
        return (f"Param({self.name!r}, kind={self.kind}, default={self.default!r}, "
                f"annotation={self.annotation!r})")


# Attributes that make inspect.signature() look past the code object.
_REDIRECTS = ("__wrapped__", "__signature__", "_partialmethod")


def is_plain_function(func: Any) -> bool:
    """True when :func:`signature` can read ``func`` from its code object alone."""
    if type(func) is not types.FunctionType:
        return False
    for name in _REDIRECTS:
        if hasattr(func, name):
            return False
    ann = func.__annotations__
    return ann is None or isinstance(ann, dict)


def signature(func: Any) -> Tuple[List[Param], Any]:
    """``(parameters in order, return annotation)`` of a callable.

    Same content as :func:`inspect.signature` (``__wrapped__`` followed);
    annotations are returned as written (strings stay strings).  Raises what
    :func:`inspect.signature` raises (TypeError / ValueError) for callables
    without a readable signature.
    """
    if not is_plain_function(func):
        return _signature_via_inspect(func)
    code = func.__code__
    n_pos = code.co_argcount
    n_posonly = code.co_posonlyargcount
    n_kwonly = code.co_kwonlyargcount
    names = code.co_varnames
    flags = code.co_flags
    annotations = func.__annotations__ or {}
    defaults = func.__defaults__ or ()
    kwdefaults = func.__kwdefaults__ or {}

    params: List[Param] = []
    first_default = n_pos - len(defaults)
    for i in range(n_pos):
        name = names[i]
        params.append(Param(
            name,
            POSITIONAL_ONLY if i < n_posonly else POSITIONAL_OR_KEYWORD,
            defaults[i - first_default] if i >= first_default else EMPTY,
            annotations.get(name, EMPTY)))
    index = n_pos
    if flags & _CO_VARARGS:
        name = names[n_pos + n_kwonly]
        params.append(Param(name, VAR_POSITIONAL, EMPTY, annotations.get(name, EMPTY)))
    for name in names[index:index + n_kwonly]:
        params.append(Param(name, KEYWORD_ONLY, kwdefaults.get(name, EMPTY),
                            annotations.get(name, EMPTY)))
    if flags & _CO_VARKEYWORDS:
        name = names[n_pos + n_kwonly + (1 if flags & _CO_VARARGS else 0)]
        params.append(Param(name, VAR_KEYWORD, EMPTY, annotations.get(name, EMPTY)))
    return params, annotations.get("return", EMPTY)


def _signature_via_inspect(func: Any) -> Tuple[List[Param], Any]:
    """The rare case: let :mod:`inspect` read the signature, then convert it."""
    import inspect  # lazily: only for callables the fast path does not model

    sig = inspect.signature(func)
    empty = inspect.Parameter.empty

    def conv(value: Any) -> Any:
        return EMPTY if value is empty else value

    params = [Param(p.name, int(p.kind), conv(p.default), conv(p.annotation))
              for p in sig.parameters.values()]
    return params, conv(sig.return_annotation)


def unwrap(func: Any) -> Any:
    """:func:`inspect.unwrap`: follow ``__wrapped__`` (inspect only when there is one)."""
    if not hasattr(func, "__wrapped__"):
        return func
    import inspect  # lazily: decorated callables only

    return inspect.unwrap(func)


def is_generator_or_coroutine_function(func: types.FunctionType) -> bool:
    """For a plain function: a generator, coroutine or async generator function.

    The same test as ``inspect.iscoroutinefunction(f) or
    inspect.isgeneratorfunction(f) or inspect.isasyncgenfunction(f)`` for a
    ``types.FunctionType`` (they read the code flags of the function itself).
    """
    return bool(func.__code__.co_flags & (_CO_GENERATOR | _CO_COROUTINE | _CO_ASYNC_GENERATOR))
