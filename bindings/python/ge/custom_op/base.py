"""ge.custom_op.base: the base classes of GE 9.2.0-beta.x implementations.

GE's 9.2.0-beta.1 and 9.2.0-beta.2 releases (and develop until its schema-bound
API) wrote an implementation as a subclass of :class:`EagerExecuteOp`; later
releases take any class. Both kinds load here unchanged; which release's rules
apply is decided by what the class is (share/docs/plugin-authors.md, "Plugins
from earlier GE releases"):

* :class:`BaseCustomOp`: the abstract root (an ``abc.ABC``), no methods.
* :class:`EagerExecuteOp`: a :class:`BaseCustomOp` with an abstract
  ``execute``. A subclass may define ``execute`` in one of three forms:

  - ``execute(self, ctx)`` (the parameter named ``ctx``, on any class, or
    annotated ``EagerOpExecutionContext``): the legacy form, called with the
    :class:`~ge.custom_op.EagerOpExecutionContext` of the call; it needs no
    canonical IR to register;
  - ``execute(self, inputs)``: 9.2.0-beta.1's form, called with the list of the
    node's input tensors (flattened instance order); while it runs, the
    context's public methods (``get_stream``, ``get_input_num``,
    ``malloc_output_tensor``, ...) are readable on ``self`` and an instance
    attribute of the same name is restored afterwards;
  - schema-bound ``execute(self, <inputs...>, *, <attrs...>)`` as for any class,
    but its return annotation and return value are not checked
    (9.2.0-beta.2/develop).

  ``ctx`` is the legacy form whatever the IR, as in GE; the annotated
  parameter and ``inputs`` are legacy forms only when the canonical IR has
  no input of that name (an IR with exactly one input named ``inputs``
  makes ``execute(self, inputs)`` schema-bound).

The 9.2.0-beta.1 adaptation is made when the subclass is created, as in that
release: calling ``instance.execute(ctx)`` on such a class yourself (a unit
test) adapts too. A call whose one argument is not an execute context (a
Tensor, a list of Tensors, None: the schema-bound call of an IR with one input
named ``inputs``) reaches the method unchanged.

Thread-safety: classes, no shared state; the adaptation sets and restores
instance attributes, so one instance must not run ``execute`` on two threads
at once (the host never does).
"""
from __future__ import annotations  # annotations are text: no typing import (see _proto)

import abc
import types

from _ge_native import EagerOpExecutionContext

from . import _sig

__all__ = ["BaseCustomOp", "EagerExecuteOp", "EagerOpExecutionContext"]

# The name of execute's one parameter in 9.2.0-beta.1's input-list form.
INPUTS_PARAMETER = "inputs"
# The name of execute's one parameter in the legacy context form.
CONTEXT_PARAMETER = "ctx"


class BaseCustomOp(abc.ABC):
    """The root of GE 9.2.0-beta.x implementation classes (abstract, no methods).

    A subclass that defines none of ``execute``, ``compile`` and
    ``declare_launch_args`` is refused by ``register_op_impl`` (TypeError).
    No ``__slots__``, as in GE: every instance has a ``__dict__`` (the
    9.2.0-beta.1 adaptation sets the context's methods there).
    """


def _is_execute_context(obj: Any) -> bool:
    """An execute context: the host's, or a stand-in with its two input methods."""
    if isinstance(obj, EagerOpExecutionContext):
        return True
    return callable(getattr(obj, "get_input_num", None)) and callable(getattr(obj, "get_input_tensor", None))


def _context_methods(ctx: Any) -> Dict[str, Any]:
    """The public callables of ``ctx`` (``get_stream``, ``malloc_output_tensor``, ...), bound."""
    methods = {}
    for name in dir(ctx):
        if name.startswith("_"):
            continue
        try:
            value = getattr(ctx, name)
        except Exception:  # a context property that cannot be read now is not a method
            continue
        if callable(value):
            methods[name] = value
    return methods


def _adapt_inputs_execute(func: types.FunctionType) -> Any:
    """``execute(self, inputs)`` of 9.2.0-beta.1, callable with the execute context.

    The wrapper keeps ``func`` as ``__wrapped__`` (signature validation and
    error locations read the plugin's own ``def``) and marks itself with
    ``__ge_inputs_adapter__``."""
    missing = object()

    def execute(self, *args, **kwargs):
        if kwargs or len(args) != 1 or not _is_execute_context(args[0]):
            return func(self, *args, **kwargs)
        ctx = args[0]
        inputs = [ctx.get_input_tensor(i) for i in range(ctx.get_input_num())]
        own = getattr(self, "__dict__", None)
        methods = _context_methods(ctx) if own is not None else {}
        saved = {name: own.get(name, missing) for name in methods} if own is not None else {}
        try:
            for name, method in methods.items():
                own[name] = method
            func(self, inputs)  # GE 9.2.0-beta.1 ignores what execute returns
        finally:
            for name, value in saved.items():
                if value is missing:
                    own.pop(name, None)
                else:
                    own[name] = value
        return None

    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(execute, attr, getattr(func, attr))
    execute.__wrapped__ = func
    execute.__ge_inputs_adapter__ = True
    return execute


def inputs_form_function(func: Any) -> bool:
    """True when ``func`` is a function (decorated ones followed through
    ``__wrapped__``) whose one parameter after the receiver is named
    ``inputs`` (9.2.0-beta.1's form, before the IR is known)."""
    if type(func) is not types.FunctionType or getattr(func, "__ge_inputs_adapter__", False):
        return False
    try:
        params, _ = _sig.signature(func)
    except (TypeError, ValueError):
        return False
    return (len(params) == 2 and all(p.kind in _sig.POSITIONAL for p in params)
            and params[1].name == INPUTS_PARAMETER)


class EagerExecuteOp(BaseCustomOp):
    """A GE 9.2.0-beta.x implementation with eager execution (abstract ``execute``).

    Subclasses define ``execute`` in the legacy ``(self, ctx)`` form, in
    9.2.0-beta.1's ``(self, inputs)`` form or schema-bound (see the module
    docstring); ``register_op_impl`` refuses this class itself and any
    subclass that leaves ``execute`` abstract ("expects a concrete class").
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        func = cls.__dict__.get("execute")
        if inputs_form_function(func):
            setattr(cls, "execute", _adapt_inputs_execute(func))

    @abc.abstractmethod
    def execute(self, *args: Any, **kwargs: Any) -> None:
        """Run the op once: with the execute context (legacy), the input list
        (9.2.0-beta.1) or the schema-bound arguments."""
        raise NotImplementedError
