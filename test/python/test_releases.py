"""Plugins written for earlier GE releases (share/docs/plugin-authors.md, "Plugins
from earlier GE releases"): the base classes, which release's rules a class
gets (decided by what the class is), the 9.2.0-beta.1 input-list adaptation,
the one "no supported method" text, and ge.testing running each form.
"""
import re
from typing import List

import pytest

import ge.custom_op as co
import ge.custom_op.base as base
from ge.custom_op import EagerExecuteOp, EagerOpExecutionContext, register_op, register_op_impl
from ge.custom_op import proto as proto_mod
from ge.custom_op._validate import execute_rules, validate_descriptor
from ge.graph import DataType
from ge.runtime import Tensor, TensorDesc
from ge.testing import host_tensor, run_execute


def ir(op_type):
    return proto_mod.get_registered_op_proto_by_op_type(op_type)


def one_input(op_type, name="x"):
    """A prototype with one required input called ``name`` and one output."""
    ns = {"TensorDesc": TensorDesc}
    exec(f"def p({name}: TensorDesc) -> TensorDesc:\n    return {name}\n", ns)
    register_op(op_type=op_type)(ns["p"])
    return ir(op_type)


class StandIn:
    """An execute context as a unit test builds one: only its input methods and a stream."""

    def __init__(self, inputs):
        self.inputs = list(inputs)

    def get_input_num(self):
        return len(self.inputs)

    def get_input_tensor(self, index):
        return self.inputs[index]

    def get_stream(self):
        return 7


# ---- the names --------------------------------------------------------------------------

def test_the_release_base_classes_are_exported_from_both_module_paths():
    assert co.BaseCustomOp is base.BaseCustomOp and co.EagerExecuteOp is base.EagerExecuteOp
    assert base.EagerOpExecutionContext is co.EagerOpExecutionContext
    assert issubclass(EagerExecuteOp, co.BaseCustomOp)
    assert EagerExecuteOp.__abstractmethods__ == frozenset({"execute"})
    assert {"BaseCustomOp", "EagerExecuteOp"} <= set(co.__all__)


def test_an_eager_execute_op_left_abstract_is_refused_as_not_concrete(raises):
    with raises(TypeError, "register_op_impl expects a concrete class"):
        register_op_impl(op_type="RelAbstract")(EagerExecuteOp)

    class StillAbstract(EagerExecuteOp):
        pass

    with raises(TypeError, "register_op_impl expects a concrete class"):
        register_op_impl(op_type="RelStillAbstract")(StillAbstract)


@pytest.mark.parametrize("bases", [(), (co.BaseCustomOp,)])
def test_a_class_without_callbacks_gets_one_text_with_every_release_wording(bases):
    cls = type("BaseOnlyCustom", bases, {})
    with pytest.raises(TypeError) as info:
        register_op_impl(op_type="RelNothing")(cls)
    message = str(info.value)
    for fragment in (r"BaseOnlyCustom' must implement at least one supported method: execute, compile, "
                     r"declare_launch_args",
                     r"BaseOnlyCustom' must implement at least one supported method: execute, declare_launch_args",
                     r"register_op_impl expects a BaseCustomOp subclass",
                     r"expects a supported BaseCustomOp subclass"):
        assert re.search(fragment, message), (fragment, message)
    assert "RelNothing" in message


# ---- which rules, decided by the class ----------------------------------------------------

def test_a_plain_class_follows_the_newest_rules():
    class Plain:
        def execute(self, x) -> None:
            pass

    assert execute_rules(Plain, None) == ("newest", "schema")


@pytest.mark.parametrize("body", [
    "def execute(self, ctx):\n        pass",
    "@staticmethod\n    def execute(ctx):\n        pass",
    "@classmethod\n    def execute(cls, ctx):\n        pass",
])
def test_every_release_calls_a_ctx_execute_with_the_context_whatever_the_class(body):
    for bases, rules in (("", "newest"), ("(EagerExecuteOp)", "9.2.0-beta.2")):
        ns = {"EagerExecuteOp": EagerExecuteOp}
        exec(f"class Impl{bases}:\n    {body}\n", ns)
        assert execute_rules(ns["Impl"], None) == (rules, "context"), (bases, body)
        decided = validate_descriptor(register_op_impl(op_type=f"RelAny{len(bases)}{len(body)}")(ns["Impl"])
                                      .__ge_op_impl_descriptor__, None)
        # The newest GE calls it with the context too: nothing to warn about.
        assert (decided.call, decided.needs_ir, decided.newest_refusal) == ("context", False, ""), (bases, body)


@pytest.mark.parametrize(("signature", "ir_input", "expected"), [
    ("self, ctx", None, ("9.2.0-beta.2", "context")),
    ("self, ctx", "x", ("9.2.0-beta.2", "context")),
    ("self, ctx", "ctx", ("9.2.0-beta.2", "context")),                  # the name decides, as in GE
    ("self, c: EagerOpExecutionContext", "c", ("9.2.0-beta.2", "schema_any_result")),  # ours: not over the IR
    ("self, c: EagerOpExecutionContext", "x", ("9.2.0-beta.2", "context")),
    ("self, c: 'EagerOpExecutionContext'", None, ("9.2.0-beta.2", "context")),
    ("self, inputs", None, ("9.2.0-beta.1", "context")),
    ("self, inputs", "x", ("9.2.0-beta.1", "context")),
    ("self, inputs", "inputs", ("9.2.0-beta.2", "schema_any_result")),  # exactly one input named inputs
    ("self, x", "x", ("9.2.0-beta.2", "schema_any_result")),
    ("self, x, *, alpha", None, ("9.2.0-beta.2", "schema_any_result")),
])
def test_an_eager_execute_op_subclass_gets_the_release_form_its_execute_has(signature, ir_input, expected):
    ns = {"EagerExecuteOp": EagerExecuteOp, "EagerOpExecutionContext": EagerOpExecutionContext}
    exec(f"class Impl(EagerExecuteOp):\n    def execute({signature}):\n        pass\n", ns)
    proto = one_input("RelForm", ir_input) if ir_input else None
    assert execute_rules(ns["Impl"], proto) == expected


def test_a_legacy_execute_validates_without_a_canonical_ir_and_needs_none():
    @register_op_impl(op_type="RelLegacy")
    class RelLegacy(EagerExecuteOp):
        def execute(self, ctx):
            pass

    decided = validate_descriptor(RelLegacy.__ge_op_impl_descriptor__, None)
    assert (decided.rules, decided.call, decided.needs_ir) == ("9.2.0-beta.2", "context", False)
    assert decided.newest_refusal == ""  # the newest GE calls execute(self, ctx) with the context too


def test_a_legacy_execute_with_compile_needs_an_ir_for_compile(raises):
    @register_op_impl(op_type="RelLegacyCompile")
    class RelLegacyCompile(EagerExecuteOp):
        def execute(self, ctx):
            pass

        def compile(self) -> None:
            pass

    with raises(RuntimeError, "canonical IR not found for schema-bound compile"):
        validate_descriptor(RelLegacyCompile.__ge_op_impl_descriptor__, None)


def test_a_schema_bound_eager_execute_op_has_neither_return_annotation_nor_value_checked():
    one_input("RelSchema")

    @register_op_impl(op_type="RelSchema")
    class NoAnnotation(EagerExecuteOp):
        def execute(self, x: Tensor):
            return 1

    decided = validate_descriptor(NoAnnotation.__ge_op_impl_descriptor__, ir("RelSchema"))
    assert (decided.rules, decided.call, decided.warnings) == ("9.2.0-beta.2", "schema_any_result", ())
    assert "missing return annotation" in decided.newest_refusal


def test_a_schema_bound_eager_execute_op_is_still_checked_against_the_ir(raises):
    one_input("RelSchemaBad")

    @register_op_impl(op_type="RelSchemaBad")
    class TwoInputs(EagerExecuteOp):
        def execute(self, x, y):
            pass

    with raises(TypeError, "invalid execute signature for op type RelSchemaBad", "expected 1 positional input"):
        validate_descriptor(TwoInputs.__ge_op_impl_descriptor__, ir("RelSchemaBad"))


def test_a_plain_class_without_a_return_annotation_loads_with_a_warning():
    one_input("RelPlain")

    @register_op_impl(op_type="RelPlain")
    class Plain:
        def execute(self, x):
            pass

    decided = validate_descriptor(Plain.__ge_op_impl_descriptor__, ir("RelPlain"))
    assert decided.rules == "newest" and decided.warnings == ()
    assert "expected None return annotation, actual missing return annotation" in decided.newest_refusal


def test_a_plain_class_with_another_return_annotation_is_refused(raises):
    one_input("RelPlainInt")

    @register_op_impl(op_type="RelPlainInt")
    class Plain:
        def execute(self, x) -> int:
            return 0

    with raises(TypeError, "expected None return annotation, actual int"):
        validate_descriptor(Plain.__ge_op_impl_descriptor__, ir("RelPlainInt"))


def test_compile_follows_the_newest_rules_on_an_eager_execute_op_subclass(raises):
    one_input("RelCompile")

    @register_op_impl(op_type="RelCompile")
    class WithCompile(EagerExecuteOp):
        def execute(self, ctx):
            pass

        def compile(self, x, y):  # no '-> None': an error whatever the base class
            pass

    with raises(TypeError, "invalid compile signature", "missing return annotation"):
        validate_descriptor(WithCompile.__ge_op_impl_descriptor__, ir("RelCompile"))


# ---- 9.2.0-beta.1's input list ------------------------------------------------------------

def test_the_input_list_form_adapts_a_context_and_restores_the_instance():
    class Beta1(EagerExecuteOp):
        def __init__(self):
            self.get_stream = "mine"
            self.seen = None

        def execute(self, inputs):
            self.seen = (list(inputs), self.get_stream(), self.get_input_num())
            return "ignored"

    op = Beta1()
    assert op.execute(StandIn(["a", "b"])) is None
    assert op.seen == (["a", "b"], 7, 2)
    assert op.get_stream == "mine"  # an instance attribute of the same name comes back
    assert "get_input_num" not in vars(op)


def test_the_input_list_form_passes_a_schema_bound_argument_through():
    class Beta1(EagerExecuteOp):
        def execute(self, inputs):
            return inputs

    sentinel = [object()]
    assert Beta1().execute(sentinel) is sentinel  # a list of tensors, not a context
    assert Beta1.execute.__wrapped__.__code__.co_varnames[:2] == ("self", "inputs")


def test_the_input_list_form_works_on_a_slotted_subclass_and_a_decorated_execute():
    import functools

    def timed(f):
        @functools.wraps(f)
        def run(*args, **kwargs):
            return f(*args, **kwargs)
        return run

    class Slotted(EagerExecuteOp):
        __slots__ = ("scale",)

        @timed
        def execute(self, inputs):
            self.scale = self.get_input_num()

    op = Slotted()
    op.execute(StandIn(["a", "b", "c"]))
    assert op.scale == 3 and "get_input_num" not in vars(op)
    assert execute_rules(Slotted, None) == ("9.2.0-beta.1", "context")


def test_the_newest_refusal_of_the_input_list_form_says_why():
    _add_proto("RelRefusal")

    @register_op_impl(op_type="RelRefusal")
    class Beta1(EagerExecuteOp):
        def execute(self, inputs) -> None:
            pass

    decided = validate_descriptor(Beta1.__ge_op_impl_descriptor__, ir("RelRefusal"))
    assert "expected 2 positional input parameters" in decided.newest_refusal
    assert "does not pass the input list" in decided.newest_refusal


def test_the_input_list_form_restores_the_instance_when_execute_raises():
    class Beta1(EagerExecuteOp):
        def execute(self, inputs):
            raise ValueError("plugin failed")

    op = Beta1()
    with pytest.raises(ValueError, match="plugin failed"):
        op.execute(StandIn([]))
    assert "get_stream" not in vars(op)


# ---- ge.testing runs each form as the host does ---------------------------------------------

def _add_proto(op_type):
    @register_op(op_type=op_type)
    def proto(x1: TensorDesc, x2: TensorDesc) -> TensorDesc:
        return TensorDesc(x1.shape.storage_shape.dims, x1.data_type)


def _fill(ctx, a, b, f):
    y = ctx.malloc_output_tensor(0, a.shape, a.format, a.data_type)
    dst = y.data.cast("B").cast("f")
    for i, (u, v) in enumerate(zip(a.data.cast("B").cast("f").tolist(), b.data.cast("B").cast("f").tolist())):
        dst[i] = f(u, v)


def _run(op_type) -> List[float]:
    x1 = host_tensor([1.0, 2.0], DataType.DT_FLOAT)
    x2 = host_tensor([10.0, 20.0], DataType.DT_FLOAT)
    (y,) = run_execute(op_type, [x1, x2])
    return y.tolist()


def test_ge_testing_runs_a_legacy_context_execute():
    _add_proto("RelTCtx")

    @register_op_impl(op_type="RelTCtx")
    class Ctx(EagerExecuteOp):
        def execute(self, ctx):
            _fill(ctx, ctx.get_input_tensor(0), ctx.get_input_tensor(1), lambda u, v: u * v)
            return True  # ignored

    assert _run("RelTCtx") == [10.0, 40.0]


def test_ge_testing_runs_the_input_list_form():
    _add_proto("RelTInputs")

    @register_op_impl(op_type="RelTInputs")
    class Inputs(EagerExecuteOp):
        def execute(self, inputs):
            a, b = inputs
            _fill(self, a, b, lambda u, v: v - u)

    assert _run("RelTInputs") == [9.0, 18.0]


def test_ge_testing_ignores_a_schema_bound_eager_execute_op_result():
    _add_proto("RelTSchema")

    @register_op_impl(op_type="RelTSchema")
    class Schema(EagerExecuteOp):
        def execute(self, x1, x2):
            _fill(co.get_execute_ctx(), x1, x2, lambda u, v: u + v)
            return 5

    assert _run("RelTSchema") == [11.0, 22.0]


def test_ge_testing_still_checks_a_plain_class_result(raises):
    _add_proto("RelTPlain")

    @register_op_impl(op_type="RelTPlain")
    class Plain:
        def execute(self, x1, x2):
            _fill(co.get_execute_ctx(), x1, x2, lambda u, v: u + v)
            return 5

    # The missing '-> None' is a warning (as in the host); the value returned is still an error.
    with raises(TypeError, "execute must return None"), \
            pytest.warns(UserWarning, match="loads here, but the newest GE refuses it: .*missing return annotation"):
        _run("RelTPlain")


def test_ge_testing_names_the_missing_prototype_of_a_legacy_execute(raises):
    @register_op_impl(op_type="RelTLone")
    class Lone(EagerExecuteOp):
        def execute(self, ctx):
            pass

    with raises(RuntimeError, "op_type 'RelTLone' has no prototype", "register_op(op_type='RelTLone')"):
        run_execute("RelTLone", [host_tensor([1.0], DataType.DT_FLOAT)])


def test_the_context_reads_attributes_by_ir_index_with_ge_typed_getters(raises):
    @register_op(op_type="RelTAttrs")
    def proto(x: TensorDesc, *, alpha: float = 1.5, n: int = 3, names: List[str] = ["a", "b"]) -> TensorDesc:
        return x

    seen = {}

    @register_op_impl(op_type="RelTAttrs")
    class Attrs:
        def execute(self, ctx):
            x = ctx.get_input_tensor(index=0)
            y = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
            attrs = ctx.get_attrs()
            seen["values"] = (attrs.get_attr_num(), attrs.get_float(0), attrs.get_int(index=1), attrs.get_list_str(2))
            assert ctx.get_output_tensor(index=0).addr == y.addr
            for call in (lambda: attrs.get_int(0), lambda: attrs.get_float(3)):
                try:
                    call()
                except RuntimeError as exc:
                    seen.setdefault("errors", []).append(str(exc))
            seen["kept"] = attrs

    run_execute("RelTAttrs", [host_tensor([1.0], DataType.DT_FLOAT)], {"n": 7})
    assert seen["values"] == (3, 1.5, 7, ["a", "b"])
    assert seen["errors"] == ["Failed to get runtime attr type[VT_INT] at index[0]: attr 0 'alpha' is VT_FLOAT",
                              "Failed to get runtime attr type[VT_FLOAT] at index[3]: the op has 3 attr(s)"]
    with raises(RuntimeError, "expired"):
        seen["kept"].get_float(0)


@pytest.mark.parametrize("name", ["input", "context"])
def test_a_single_parameter_named_like_no_legacy_form_is_bound_with_a_warning(name):
    one_input("RelNamed")
    ns = {"EagerExecuteOp": EagerExecuteOp}
    exec(f"class Named(EagerExecuteOp):\n    def execute(self, {name}):\n        pass\n", ns)
    register_op_impl(op_type="RelNamed")(ns["Named"])
    decided = validate_descriptor(ns["Named"].__ge_op_impl_descriptor__, ir("RelNamed"))
    assert decided.call == "schema_any_result" and len(decided.warnings) == 1
    assert f"parameter '{name}' is no GE 9.2.0-beta.x legacy form" in decided.warnings[0]
    assert "Use 'ctx' for EagerOpExecutionContext or 'inputs' for the input tensor list." in decided.warnings[0]
    assert "bound to the IR's input 'x'" in decided.warnings[0]


def test_a_plain_class_with_the_input_list_form_is_told_it_needs_eager_execute_op(raises):
    _add_proto("RelPlainInputs")

    @register_op_impl(op_type="RelPlainInputs")
    class PlainInputs:
        def execute(self, inputs) -> None:
            pass

    with raises(TypeError, "expected 2 positional input parameters", "needs a subclass of ge.custom_op.EagerExecuteOp"):
        validate_descriptor(PlainInputs.__ge_op_impl_descriptor__, ir("RelPlainInputs"))


def test_a_callable_object_taking_ctx_is_the_legacy_form():
    class Call:
        def __call__(self, ctx):
            pass

    class WithCallable:
        execute = Call()

    assert execute_rules(WithCallable, one_input("RelCallable")) == ("newest", "context")


def test_ge_testing_refuses_a_compile_only_op_as_the_engine_does(raises):
    one_input("RelTCompileOnly")

    @register_op_impl(op_type="RelTCompileOnly")
    class CompileOnly(co.BaseCustomOp):
        def compile(self, x, y) -> None:
            pass

    with raises(RuntimeError, "op_type 'RelTCompileOnly'", "has no execute", "neither execute nor declare launch args"):
        run_execute("RelTCompileOnly", [host_tensor([1.0], DataType.DT_FLOAT)])


def test_ge_testing_names_compile_needing_a_prototype_first_as_the_host_does(raises):
    @register_op_impl(op_type="RelTLegacyCompile")
    class LegacyCompile(EagerExecuteOp):
        def execute(self, ctx):
            pass

        def compile(self) -> None:
            pass

    with raises(RuntimeError, "canonical IR not found for schema-bound compile"):
        run_execute("RelTLegacyCompile", [host_tensor([1.0], DataType.DT_FLOAT)])
