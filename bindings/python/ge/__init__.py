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


def _import_enum_without_functools() -> None:
    """Import :mod:`enum` without loading :mod:`functools` (and, through it,
    :mod:`collections`, :mod:`reprlib`, :mod:`keyword`) when neither is loaded yet.

    ``ge.graph``, ``ge.runtime`` and ``ge.custom_op`` define their public enums
    as :class:`enum.IntEnum` (GE compatibility), and Python 3.11's ``enum``
    takes only ``reduce`` from ``functools`` (``from functools import reduce``
    at its top). ``functools`` and what it imports cost about 0.3 MiB per
    sub-interpreter, and the host imports this package in every plugin's sub-interpreter
    (share/docs/host-design.md, "Targets"). So while ``enum`` is imported,
    ``sys.modules["functools"]`` is a module holding only ``reduce`` (the C
    function ``functools.reduce`` is); it is removed right after, so a later
    ``import functools`` anywhere loads the real module. Skipped (a plain
    ``import enum`` follows in ``ge.graph``) when ``enum`` or ``functools`` is
    already loaded, when another Python thread of this interpreter is running
    (it could import ``functools`` meanwhile), or when ``enum`` needs more
    than ``reduce`` (another Python version). Runs once, while ``ge`` is first
    imported in an interpreter; raises nothing.
    """
    import sys
    if "enum" in sys.modules or "functools" in sys.modules:
        return
    import _thread
    running = getattr(_thread, "_count", None)  # Python threads of this interpreter besides the caller
    if running is None or running() != 0:
        return
    stand_in = type(sys)("functools")
    # The C function functools.reduce is (_functools has no type stub, hence __import__).
    vars(stand_in)["reduce"] = __import__("_functools").reduce
    sys.modules["functools"] = stand_in
    try:
        import enum  # noqa: F401
    except ImportError:
        pass  # enum wanted more of functools: ge.graph imports it normally
    finally:
        if sys.modules.get("functools") is stand_in:
            del sys.modules["functools"]


_import_enum_without_functools()
