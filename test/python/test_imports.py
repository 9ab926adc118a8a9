"""Import footprint of ``ge.custom_op`` (share/docs/host-design.md, "Targets": per-plugin sub-interpreter budget).

Importing ``ge.custom_op``, registering a typical prototype and implementation
and running the host's ``_host.snapshot()`` / ``_host.collect()`` must not import
``dataclasses``, ``inspect`` or what they drag in (``ast``, ``dis``,
``tokenize``, ``importlib.util``), nor ``re`` beyond what ``typing`` itself
imports.  Nor may they import ``typing`` (about 1.4 MiB per sub-interpreter)
when the plugin itself does not: annotations such as ``list[TensorDesc]`` and
``TensorDesc | None`` are recognised without it; ``typing`` is imported lazily
only to evaluate string annotations.  Each check runs in a fresh interpreter
process (the suite's own process has imported all of these long ago), with the
path entries the suite uses for ``ge`` and ``_ge_native``.

Nor does the ``ge`` package load ``functools`` / ``collections`` (about 0.3 MiB
per sub-interpreter) for its IntEnums: ``enum`` is imported with a stand-in
``functools`` holding only ``reduce``, unless ``functools`` is already loaded
or another thread runs; the real module is there for anyone importing it later.
"""
import os
import subprocess
import sys
import textwrap

import _ge_native
import ge

HEAVY = ("dataclasses", "inspect", "ast", "dis", "tokenize", "importlib.util", "re")

# Runs in the child. Modules `typing` imports on its own (`re` on Python 3.11)
# are not held against ge.custom_op: they are recorded before the import.
PRELUDE = """
import sys
import typing
HEAVY = %r
preloaded = set(sys.modules)
""" % (HEAVY,)

TYPICAL_PLUGIN = '''
from typing import List, Optional, Tuple

import ge.custom_op
from ge.custom_op import _host, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc

before = _host.snapshot()


@register_op(op_type="FootprintOp", mutates_args=("x",))
def footprint_op(x: TensorDesc, bias: Optional[TensorDesc], xs: List[TensorDesc], *,
                 alpha: float, k: int = 3, dt: DataType = DataType.DT_FLOAT,
                 perm: List[int] = [0, 1], name: str = "n") -> Tuple[TensorDesc, List[TensorDesc]]:
    return x, xs


@register_op_impl(op_type="FootprintOp")
class FootprintImpl:
    def execute(self, x: Tensor, bias: Optional[Tensor], xs: List[Tensor], *,
                alpha: float, k: int, dt: DataType, perm: List[int], name: str) -> None:
        pass


result = _host.collect(before)
assert [p["op_type"] for p in result["protos"]] == ["FootprintOp"], result
assert result["impls"][0]["interfaces"] == ["eager_execute"], result
'''

CHECK = """
loaded = sorted(m for m in HEAVY if m in sys.modules and m not in preloaded)
assert not loaded, "ge.custom_op imported " + ", ".join(loaded)
"""


def _env():
    paths = [os.path.dirname(os.path.dirname(os.path.abspath(ge.__file__))),
             os.path.dirname(os.path.abspath(_ge_native.__file__))]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _run(code):
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, f"child failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_import_alone_is_light():
    _run(PRELUDE + "import ge.custom_op\nimport ge.custom_op.proto\n" + CHECK)


def test_typical_plugin_registration_and_collect_are_light():
    _run(PRELUDE + TYPICAL_PLUGIN + CHECK)


def test_string_annotations_are_light():
    # `from __future__ import annotations`: resolved with typing.get_type_hints only.
    source = "from __future__ import annotations\n" + TYPICAL_PLUGIN
    code = (PRELUDE
            + "exec(compile(%r, '<future_plugin>', 'exec'), {'__name__': 'future_plugin'})\n"
            % source + CHECK)
    _run(code)


def _run_in_a_sub_interpreter(inner):
    """Runs `inner` in a fresh sub-interpreter of a fresh process (the host's situation)."""
    code = textwrap.dedent("""
        import sys
        import _xxsubinterpreters as si
        interp = si.create()
        try:
            si.run_string(interp, "import sys; sys.path[:0] = %r\\n" + %r)
        finally:
            si.destroy(interp)
        print("ok")
    """) % (_env()["PYTHONPATH"].split(os.pathsep), inner)
    assert _run(code).strip().endswith("ok")


def test_light_in_a_sub_interpreter():
    # The host's situation: each plugin in its own sub-interpreter.
    inner = PRELUDE + TYPICAL_PLUGIN + CHECK
    _run_in_a_sub_interpreter(inner)


def test_records_still_behave_like_frozen_dataclasses_when_asked():
    # The dataclasses API is loaded on demand (frozen error, fields/asdict/replace).
    code = PRELUDE + TYPICAL_PLUGIN + CHECK + textwrap.dedent("""
        from ge.custom_op import _proto
        proto = _proto.get_registered_op_proto_by_op_type("FootprintOp")
        try:
            proto.op_type = "Other"
        except AttributeError as exc:
            import dataclasses
            assert type(exc) is dataclasses.FrozenInstanceError, type(exc)
            assert str(exc) == "cannot assign to field 'op_type'", exc
        else:
            raise AssertionError("OpProtoDescriptor is not frozen")
        attr = proto.attrs[1]
        assert dataclasses.is_dataclass(attr)
        assert [f.name for f in dataclasses.fields(attr)] == ["name", "index", "type", "is_required",
                                                              "default"]
        assert dataclasses.asdict(attr) == {"name": "k", "index": 1, "type": "VT_INT",
                                            "is_required": False, "default": 3}
        assert dataclasses.replace(attr, name="j") == _proto.OpAttr("j", 1, "VT_INT", False, 3)
        # The host's internal IR records (canonical_ir) behave the same way.
        ir_attr = _proto.canonical_ir(proto).attrs[1]
        assert dataclasses.is_dataclass(ir_attr)
        assert [f.name for f in dataclasses.fields(ir_attr)] == ["name", "type", "required", "default"]
        assert dataclasses.asdict(ir_attr) == {"name": "k", "type": "VT_INT", "required": False,
                                               "default": 3}
        assert dataclasses.replace(ir_attr, name="j") == _proto.IrAttr("j", "VT_INT", False, 3)
    """)
    _run(code)


# ---------------------------------------------------------------------------
# Plugins that do not import typing do not pay for it
# ---------------------------------------------------------------------------

# A plugin annotated with builtin generics and PEP 604 unions only: registration,
# collect (validation included) and the error paths must not import typing.
NO_TYPING_PLUGIN = '''
import ge.custom_op
import ge.custom_op.proto
import ge.graph
import ge.runtime
from ge.custom_op import _host, register_op, register_op_impl
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc

before = _host.snapshot()


@register_op(op_type="NoTypingOp", mutates_args=("x",))
def no_typing_op(x: TensorDesc, bias: TensorDesc | None, xs: list[TensorDesc], *,
                 alpha: float, k: int = 3, dt: DataType = DataType.DT_FLOAT,
                 perm: list[int] = [0, 1], rows: list[list[int]] = [[1]],
                 name: str = "n") -> tuple[TensorDesc, list[TensorDesc]]:
    return x, xs


@register_op_impl(op_type="NoTypingOp")
class NoTypingImpl:
    def execute(self, x: Tensor, bias: Tensor | None, xs: list[Tensor], *, alpha: float,
                k: int, dt: DataType, perm: list[int], rows: list[list[int]],
                name: str) -> None:
        pass


@register_op(op_type="NoTypingSingle")
def no_typing_single(x: TensorDesc, y: None | TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="NoTypingSingle")
class NoTypingSingleImpl:
    def execute(self, x, y: None | Tensor) -> None:
        pass


result = _host.collect(before)
assert [p["op_type"] for p in result["protos"]] == ["NoTypingOp", "NoTypingSingle"], result
proto = result["protos"][0]
assert [i["kind"] for i in proto["inputs"]] == ["required", "optional", "dynamic"], proto
assert [o["kind"] for o in proto["outputs"]] == ["required", "dynamic"], proto
assert [a["type"] for a in proto["attrs"]] == ["VT_FLOAT", "VT_INT", "VT_DATA_TYPE", "VT_LIST_INT",
                                                "VT_LIST_LIST_INT", "VT_STRING"], proto
assert proto["return_form"] == "tuple" and proto["mutates"] == [["x", 0]], proto
assert [i["interfaces"] for i in result["impls"]] == [["eager_execute"]] * 2, result

# The error paths need no typing either (same messages as with typing loaded).
try:
    @register_op(op_type="NoTypingBad")
    def no_typing_bad(x: list[TensorDesc] | None) -> None:
        pass
except TypeError as exc:
    assert "unsupported input annotation for 'x': list[" in str(exc) and "] | None" in str(exc), exc
else:
    raise AssertionError("register_op accepted list[TensorDesc] | None")

before = _host.snapshot()


@register_op(op_type="NoTypingBadImpl")
def no_typing_bad_impl(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="NoTypingBadImpl")
class NoTypingBadImpl:
    def execute(self, x: Tensor | None) -> None:
        pass


try:
    _host.collect(before)
except TypeError as exc:
    assert ("expected input parameter at index 0 annotation Tensor, actual " in str(exc)
            and "Tensor | None" in str(exc)), exc
else:
    raise AssertionError("collect accepted a mismatching execute")
assert _host.snapshot() == before
'''

NO_TYPING_CHECK = """
loaded = sorted(m for m in ("typing",) + HEAVY if m in sys.modules and m not in preloaded)
assert not loaded, "a plugin without typing imported " + ", ".join(loaded)
"""

# No `import typing` here: only what the interpreter itself loaded is preloaded.
NO_TYPING_PRELUDE = """
import sys
HEAVY = %r
preloaded = set(sys.modules)
assert "typing" not in preloaded, "the interpreter preloads typing: this check would prove nothing"
""" % (HEAVY,)


def test_plugin_without_typing_does_not_import_typing():
    _run(NO_TYPING_PRELUDE + NO_TYPING_PLUGIN + NO_TYPING_CHECK)


def test_plugin_without_typing_in_a_sub_interpreter():
    inner = NO_TYPING_PRELUDE + NO_TYPING_PLUGIN + NO_TYPING_CHECK
    _run_in_a_sub_interpreter(inner)


def test_typing_imported_after_ge_still_works():
    # typing.Optional / List / Tuple are recognised when the plugin imports typing
    # after ge.custom_op (the helpers look typing up when they run).
    code = (NO_TYPING_PRELUDE + "import ge.custom_op\n"
            + "assert 'typing' not in sys.modules\n" + TYPICAL_PLUGIN + textwrap.dedent("""
        proto = result["protos"][0]
        assert [i["kind"] for i in proto["inputs"]] == ["required", "optional", "dynamic"], proto
        assert [o["kind"] for o in proto["outputs"]] == ["required", "dynamic"], proto
        assert [a["type"] for a in proto["attrs"]] == ["VT_FLOAT", "VT_INT", "VT_DATA_TYPE",
                                                        "VT_LIST_INT", "VT_STRING"], proto
    """))
    _run(code)


def test_string_annotations_import_typing_lazily():
    # `from __future__ import annotations` without importing typing: ge imports it
    # (lazily, for typing.get_type_hints) and the strings resolve as before.
    source = "from __future__ import annotations\n" + NO_TYPING_PLUGIN
    code = (NO_TYPING_PRELUDE
            + "exec(compile(%r, '<future_plugin>', 'exec'), {'__name__': 'future_plugin'})\n"
            % source
            + "assert 'typing' in sys.modules\n")
    _run(code)


# ---------------------------------------------------------------------------
# enum without functools (ge/__init__.py, _import_enum_without_functools)
# ---------------------------------------------------------------------------

# What the host imports in every plugin's sub-interpreter (bindings/host/interpreter.cc),
# then a plugin registration and the host's collect.
HOST_IMPORTS = """
import sys
assert "functools" not in sys.modules and "enum" not in sys.modules, sorted(sys.modules)
import ge, ge.graph, ge.runtime, ge.custom_op, ge._entry
"""

NO_FUNCTOOLS_CHECK = """
import enum
from ge.graph import DataType, Format
from ge.runtime import TensorPlacement
from ge.custom_op.proto import InputType, OutputType
loaded = sorted(m for m in ("functools", "collections", "reprlib", "keyword") if m in sys.modules)
assert not loaded, "ge (with a plugin registered and collected) imported " + ", ".join(loaded)
for cls in (DataType, Format, TensorPlacement, InputType, OutputType):
    assert issubclass(cls, enum.IntEnum), cls
assert DataType(3) is DataType.DT_INT32 and DataType.DT_INT32 == 3
# enum's own use of reduce (verify(NAMED_FLAGS) of a flag alias with an unnamed bit).
try:
    @enum.verify(enum.NAMED_FLAGS)
    class Bits(enum.Flag):
        A = 1
        B = 2
        ALL = 7
except ValueError as exc:
    assert "missing" in str(exc) and "0x4" in str(exc), exc
else:
    raise AssertionError("enum.verify(NAMED_FLAGS) accepted an unnamed bit")
# A later `import functools` is the real module, and enum's reduce is its reduce.
import functools
assert functools.lru_cache and functools.partial and functools.wraps
assert enum.reduce is functools.reduce
"""


def test_enum_without_functools_in_a_sub_interpreter():
    inner = HOST_IMPORTS + NO_TYPING_PLUGIN + NO_FUNCTOOLS_CHECK
    _run_in_a_sub_interpreter(inner)


def test_enum_without_functools_in_a_plain_interpreter():
    _run(HOST_IMPORTS + NO_TYPING_PLUGIN + NO_FUNCTOOLS_CHECK)


def test_enum_imported_normally_while_another_thread_runs():
    # Another thread could import functools while the stand-in is in sys.modules:
    # then ge imports enum (and so functools) as usual.
    code = textwrap.dedent("""
        import sys
        import _thread
        gate = _thread.allocate_lock()
        gate.acquire()
        started = _thread.allocate_lock()
        started.acquire()
        done = _thread.allocate_lock()
        done.acquire()
        def wait():
            started.release()
            gate.acquire()
            done.release()
        _thread.start_new_thread(wait, ())
        started.acquire()
        assert _thread._count() == 1
        import ge.graph
        assert type(sys.modules["functools"].lru_cache).__name__ == "function", sys.modules["functools"]
        gate.release()
        done.acquire()
        assert issubclass(ge.graph.DataType, __import__("enum").IntEnum)
    """)
    _run(code)


def test_enum_imported_normally_when_functools_is_loaded():
    code = textwrap.dedent("""
        import sys
        import functools
        import ge.graph
        import enum
        assert sys.modules["functools"] is functools and enum.reduce is functools.reduce
    """)
    _run(code)
