"""Import footprint of ``ge.custom_op`` (DESIGN.md: per-plugin sub-interpreter budget).

Importing ``ge.custom_op``, registering a typical prototype and implementation
and running the host's ``_host.snapshot()`` / ``_host.collect()`` must not import
``dataclasses``, ``inspect`` or what they drag in (``ast``, ``dis``,
``tokenize``, ``importlib.util``), nor ``re`` beyond what ``typing`` itself
imports.  Each check runs in a fresh interpreter process (the suite's own
process has imported all of these long ago), with the path entries the suite
uses for ``ge`` and ``_ge_native``.
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


def test_light_in_a_sub_interpreter():
    # The host's situation: each plugin in its own sub-interpreter.
    inner = PRELUDE + TYPICAL_PLUGIN + CHECK
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
            raise AssertionError("OpProto is not frozen")
        attr = proto.attrs[1]
        assert dataclasses.is_dataclass(attr)
        assert [f.name for f in dataclasses.fields(attr)] == ["name", "type", "required", "default"]
        assert dataclasses.asdict(attr) == {"name": "k", "type": "VT_INT", "required": False,
                                            "default": 3}
        assert dataclasses.replace(attr, name="j") == _proto.IrAttr("j", "VT_INT", False, 3)
    """)
    _run(code)
