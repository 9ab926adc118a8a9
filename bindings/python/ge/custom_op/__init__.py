"""ge.custom_op: the plugin-author API for Python custom operators.

Compatible with the ``ge.custom_op`` package of Huawei CANN's Graph Engine
(names, argument order, exception types and quoted message fragments; see
share/docs/plugin-authors.md). ``register_op`` declares an operator's prototype (its canonical IR and
infer_meta); ``register_op_impl`` declares the class implementing it. The host
calls the implementation's ``execute`` / ``compile`` / ``declare_launch_args``
with the node's tensors bound by IR order; inside a callback the matching
``get_*_ctx()`` returns the borrowed context of that call. ``BaseCustomOp`` and
``EagerExecuteOp`` (also in ``ge.custom_op.base``) are GE 9.2.0-beta.x's base
classes: a subclass of ``EagerExecuteOp`` follows that release's rules for
``execute`` (share/docs/plugin-authors.md, "Plugins from earlier GE releases").

Thread-safety: the registries are per interpreter and are meant to be filled
while a plugin module is imported.
"""
import contextvars as _contextvars

from _ge_native import (AnnotatedArgsContext, AnnotatedKernelArgs, CompilePlatformInfo, EagerOpExecutionContext,
                        OpCompileContext, WorkspaceAddr)

from . import proto  # noqa: F401  (ge.custom_op.proto)
from .base import BaseCustomOp, EagerExecuteOp  # GE 9.2.0-beta.x base classes (ge.custom_op.base)
from ._impl import (
    clear_registered_op_impls,
    get_registered_op_impl_by_descriptor_key,
    get_registered_op_impl_dicts,
    get_registered_op_impls,
    register_op_impl,
)
from ._proto import _as_index, register_op

__all__ = [
    "register_op",
    "register_op_impl",
    "get_execute_ctx",
    "get_compile_ctx",
    "get_compile_platform_info",
    "get_declare_launch_args_ctx",
    "get_registered_op_impls",
    "get_registered_op_impl_dicts",
    "get_registered_op_impl_by_descriptor_key",
    "clear_registered_op_impls",
    "EagerOpExecutionContext",
    "OpCompileContext",
    "CompilePlatformInfo",
    "AnnotatedArgsContext",
    "AnnotatedKernelArgs",
    "AnnotatedKernelLaunchInfo",
    "WorkspaceAddr",
    "InferMetaContext",
    "BaseCustomOp",
    "EagerExecuteOp",
]

# The binding of the current callback. The host sets it around each call and
# resets it afterwards (nested calls restore the outer binding); the context
# object itself expires when the callback ends, so a copy of this context taken
# inside a callback (contextvars.copy_context()) sees no active binding later.
# execute is the exception to the set/reset: it runs in the op's own Context
# (made at its first call, a copy of the context current then) where the host
# keeps _EXECUTE_CTX bound to the op's reusable context object, inactive
# between calls; ContextVars set inside execute stay in that Context for the
# op's later calls (bindings/native/frame_context.h, share/docs/plugin-authors.md).
_EXECUTE_CTX = _contextvars.ContextVar("ge.custom_op.execute_ctx", default=None)
_COMPILE_CTX = _contextvars.ContextVar("ge.custom_op.compile_ctx", default=None)
_COMPILE_PLATFORM = _contextvars.ContextVar("ge.custom_op.compile_platform", default=None)
_LAUNCH_CTX = _contextvars.ContextVar("ge.custom_op.declare_launch_args_ctx", default=None)


def get_execute_ctx() -> EagerOpExecutionContext:
    """Return the EagerOpExecutionContext of the running schema-bound ``execute``.

    Borrowed: valid until that ``execute`` returns. Raises RuntimeError outside
    ``execute`` (also from a copied context once the callback has ended).
    In the host, ``execute`` runs in the op's own contextvars.Context: a
    ContextVar set inside ``execute`` is still set at the op's next call
    (share/docs/plugin-authors.md).
    """
    ctx = _EXECUTE_CTX.get()
    if ctx is None or not ctx._is_active():
        raise RuntimeError("get_execute_ctx() is only available inside schema-bound execute")
    return ctx


def get_compile_ctx() -> OpCompileContext:
    """Return the OpCompileContext of the running schema-bound ``compile``.

    Borrowed: valid until that ``compile`` returns. ``get_option(key) -> str``
    reads a compile option. Raises RuntimeError "only available inside
    schema-bound compile" anywhere else (also from a contextvars copy once the
    callback has ended).
    """
    ctx = _COMPILE_CTX.get()
    if ctx is None or not ctx._is_active():
        raise RuntimeError("get_compile_ctx() is only available inside schema-bound compile")
    return ctx


def get_compile_platform_info() -> CompilePlatformInfo:
    """Return the CompilePlatformInfo of the running schema-bound ``compile``.

    A separate object from the compile context: it reads the target platform
    (share/platform/<SoC>.ini, or the measured ``host``) lazily, once per
    callback. Borrowed like the context. Raises RuntimeError "only available
    inside schema-bound compile" anywhere else.
    """
    info = _COMPILE_PLATFORM.get()
    if info is None or not info._is_active():
        raise RuntimeError("get_compile_platform_info() is only available inside schema-bound compile")
    return info


def get_declare_launch_args_ctx() -> AnnotatedArgsContext:
    """Return the AnnotatedArgsContext of the running ``declare_launch_args``.

    Borrowed: valid until that callback returns. ``malloc_workspace(size)``,
    ``get_stream_id()``, ``create_kernel_args()`` and ``add_launch(info, args)``
    declare the node's kernel launches (share/docs/launch-args.md). Raises RuntimeError
    anywhere else.
    """
    ctx = _LAUNCH_CTX.get()
    if ctx is None or not ctx._is_active():
        raise RuntimeError("get_declare_launch_args_ctx() is only available inside declare_launch_args "
                           "(a schema-bound callback of the host)")
    return ctx


class _HostOnly:
    """Base of the context classes only the host creates (TypeError otherwise)."""

    def __init__(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} cannot be constructed: the host hands it to callbacks")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)


class InferMetaContext(_HostOnly):
    """Reserved for GE compatibility: infer_meta receives TensorDescs directly."""


class AnnotatedKernelLaunchInfo:
    """An owned description of one kernel launch (share/docs/launch-args.md).

    ``AnnotatedKernelLaunchInfo(*, kernel_name: str, kernel_bin: bytes,
    block_dim: int, stream_id: int)``. Empty name or binary, or block_dim == 0
    raise ValueError; wrong types raise TypeError.
    """

    __slots__ = ("kernel_name", "kernel_bin", "block_dim", "stream_id")

    def __init__(self, *, kernel_name, kernel_bin, block_dim, stream_id=0):
        if not isinstance(kernel_name, str):
            raise TypeError("kernel_name must be a str")
        if not isinstance(kernel_bin, (bytes, bytearray)):
            raise TypeError("kernel_bin must be bytes")
        checked = []
        for name, value, bound in (("block_dim", block_dim, 2**32), ("stream_id", stream_id, 2**63)):
            value = _as_index(value)
            if value is None or value < 0:
                raise TypeError(f"{name} must be a non-negative int")
            checked.append(value)
            if value >= bound:
                raise ValueError(f"{name} must be below {bound}, got {value}")
        block_dim, stream_id = checked
        if not kernel_name:
            raise ValueError("kernel_name must not be empty")
        if not kernel_bin:
            raise ValueError("kernel_bin must not be empty")
        if block_dim == 0:
            raise ValueError("block_dim must be positive, got 0")
        self.kernel_name = kernel_name
        self.kernel_bin = bytes(kernel_bin)
        self.block_dim = block_dim
        self.stream_id = stream_id

    def __repr__(self):
        return (f"AnnotatedKernelLaunchInfo(kernel_name={self.kernel_name!r}, "
                f"kernel_bin=<{len(self.kernel_bin)} bytes>, block_dim={self.block_dim}, stream_id={self.stream_id})")


def __getattr__(name):
    raise AttributeError(f"module 'ge.custom_op' has no attribute '{name}'")
