"""register_op_impl and the implementation registry (share/docs/plugin-authors.md, "The implementation")."""
import abc
import dataclasses

import pytest

import ge.custom_op as co
from ge.custom_op import (clear_registered_op_impls, get_registered_op_impl_by_descriptor_key,
                          get_registered_op_impl_dicts, get_registered_op_impls, register_op_impl)
from ge.custom_op._impl import OpImplDescriptor

WHERE = "(op_type 'Op')"


def must_implement(qualname):
    return (f"register_op_impl class '{__name__}.{qualname}' must implement at least one "
            f"supported method: execute, compile, declare_launch_args {WHERE}")


# --------------------------------------------------------------------------- op_type / target

@pytest.mark.parametrize("bad", [None, 1, b"Op", "", ("Op",)])
def test_bad_op_type_is_type_error_before_any_class(raises, bad):
    with raises(TypeError, f"register_op_impl op_type must be a non-empty string, got {bad!r}"):
        register_op_impl(op_type=bad)
    assert get_registered_op_impls() == []


def test_op_type_keyword_only():
    with pytest.raises(TypeError):
        register_op_impl("Op")


class _Impl:
    def execute(self) -> None:
        pass


def _function(self):
    pass


@pytest.mark.parametrize("target", [_function, _Impl(), 3, None, "Impl"],
                         ids=["function", "instance", "int", "none", "str"])
def test_not_a_class(raises, target):
    with raises(TypeError, f"register_op_impl expects a class, got {type(target).__name__} {WHERE}"):
        register_op_impl(op_type="Op")(target)
    assert get_registered_op_impls() == []


def test_abstract_class_rejected(raises):
    class Base(abc.ABC):
        @abc.abstractmethod
        def helper(self):
            ...

        def execute(self) -> None:
            pass

    with raises(TypeError, "register_op_impl expects a concrete class: "
                "test_abstract_class_rejected.<locals>.Base is abstract (abstract methods: helper) "
                + WHERE):
        register_op_impl(op_type="Op")(Base)
    assert get_registered_op_impls() == []
    assert "__ge_op_impl_descriptor__" not in vars(Base)


def test_concrete_subclass_of_abc_accepted():
    class Base(abc.ABC):
        @abc.abstractmethod
        def helper(self):
            ...

    @register_op_impl(op_type="Op")
    class Impl(Base):
        def helper(self):
            return 1

        def execute(self) -> None:
            pass

    assert Impl.__ge_op_impl_descriptor__.interfaces == ("eager_execute",)


def test_no_supported_callable(raises):
    class Impl:
        def run(self):
            pass

        executes = None

    with raises(TypeError, must_implement("test_no_supported_callable.<locals>.Impl")):
        register_op_impl(op_type="Op")(Impl)


@pytest.mark.parametrize("method", ["execute", "compile", "declare_launch_args"])
@pytest.mark.parametrize("value", [5, None, "text", property(lambda self: None)],
                         ids=["int", "none", "str", "property"])
def test_attribute_not_callable(raises, method, value):
    attrs = {method: value}
    if method != "execute":
        attrs["execute"] = lambda self: None
    Impl = type("Impl", (), attrs)
    if method == "compile":  # only a non-callable compile is an error (as in GE)
        with raises(TypeError, f"compile must be callable, got {type(value).__name__} on class "
                    f"Impl {WHERE}"):
            register_op_impl(op_type="Op")(Impl)
        assert get_registered_op_impls() == []
    elif method == "execute":  # ignored; nothing callable remains
        with raises(TypeError, must_implement("Impl")):
            register_op_impl(op_type="Op")(Impl)
        assert get_registered_op_impls() == []
    else:  # a non-callable declare_launch_args is ignored
        assert register_op_impl(op_type="Op")(Impl) is Impl
        assert Impl.__ge_op_impl_descriptor__.interfaces == ["eager_execute"]
        assert [d.cls for d in get_registered_op_impls()] == [Impl]


def test_compile_must_be_callable_exact_fragment(raises):
    class Impl:
        compile = 42

    with raises(TypeError, "compile must be callable, got int on class "
                f"test_compile_must_be_callable_exact_fragment.<locals>.Impl {WHERE}"):
        register_op_impl(op_type="Op")(Impl)


def test_staticmethod_wrapping_non_callable(raises):
    class Impl:
        compile = staticmethod(3)

    with raises(TypeError, "compile must be callable, got staticmethod on class "
                f"test_staticmethod_wrapping_non_callable.<locals>.Impl {WHERE}"):
        register_op_impl(op_type="Op")(Impl)


# --------------------------------------------------------------------------- reflection

@pytest.mark.parametrize("methods,interfaces", [
    (["execute"], ("eager_execute",)),
    (["compile"], ("compilable",)),
    (["declare_launch_args"], ("annotated_args",)),
    (["declare_launch_args", "execute"], ("eager_execute", "annotated_args")),
    (["declare_launch_args", "compile", "execute"],
     ("eager_execute", "compilable", "annotated_args")),
    (["compile", "declare_launch_args"], ("compilable", "annotated_args")),
])
def test_interfaces_in_fixed_order(methods, interfaces):
    Impl = type("Impl", (), {m: (lambda self: None) for m in methods})
    register_op_impl(op_type="Op")(Impl)
    assert Impl.__ge_op_impl_descriptor__.interfaces == interfaces


def test_inherited_static_and_class_methods_count():
    class Base:
        def execute(self) -> None:
            pass

    class Mixin:
        @classmethod
        def declare_launch_args(cls) -> None:
            pass

    @register_op_impl(op_type="Op")
    class Impl(Base, Mixin):
        @staticmethod
        def compile() -> None:
            pass

    assert Impl.__ge_op_impl_descriptor__.interfaces == (
        "eager_execute", "compilable", "annotated_args")


def test_callable_object_attribute_counts():
    class Kernel:
        def __call__(self) -> None:
            pass

    @register_op_impl(op_type="Op")
    class Impl:
        execute = Kernel()

    assert Impl.__ge_op_impl_descriptor__.interfaces == ("eager_execute",)


def test_overriding_with_non_callable_is_rejected(raises):
    class Base:
        def compile(self) -> None:
            pass

    class Impl(Base):
        compile = None

    with raises(TypeError, "compile must be callable, got NoneType on class "
                f"test_overriding_with_non_callable_is_rejected.<locals>.Impl {WHERE}"):
        register_op_impl(op_type="Op")(Impl)


def test_overriding_execute_with_non_callable_is_ignored():
    class Base:
        def execute(self) -> None:
            pass

        def compile(self) -> None:
            pass

    @register_op_impl(op_type="Op")
    class Impl(Base):
        execute = None  # shadows the inherited execute; ignored, not an error

    assert Impl.__ge_op_impl_descriptor__.interfaces == ["compilable"]


def test_class_not_instantiated_and_signatures_not_checked():
    @register_op_impl(op_type="Op")
    class Impl:
        def __init__(self):
            raise AssertionError("must not be instantiated at registration")

        def execute(self, *args, **kwargs):  # checked only by validation (section 5)
            return 1

    assert get_registered_op_impl_by_descriptor_key(f"{__name__}:Impl:Op").cls is Impl


def test_no_base_class_required_and_returns_class():
    class Impl:
        def execute(self) -> None:
            pass

    assert register_op_impl(op_type="Op")(Impl) is Impl
    assert Impl.__mro__ == (Impl, object)


# --------------------------------------------------------------------------- descriptor

def test_descriptor_record():
    @register_op_impl(op_type="MyOp")
    class MyImpl:
        def compile(self) -> None:
            pass

        def execute(self) -> None:
            pass

    d = MyImpl.__ge_op_impl_descriptor__
    assert isinstance(d, OpImplDescriptor)
    assert d.descriptor_key == f"{__name__}:MyImpl:MyOp"
    assert (d.op_type, d.module_name, d.class_name) == ("MyOp", __name__, "MyImpl")
    assert d.interfaces == ("eager_execute", "compilable")
    assert d.interfaces == ["eager_execute", "compilable"]
    assert isinstance(d.interfaces, tuple)
    assert repr(d.interfaces) == "['eager_execute', 'compilable']"
    assert d.cls is MyImpl
    assert d.to_bridge_dict() == {
        "descriptor_key": f"{__name__}:MyImpl:MyOp",
        "op_type": "MyOp",
        "module_name": __name__,
        "class_name": "MyImpl",
        "interfaces": ["eager_execute", "compilable"],
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.op_type = "Other"


# --------------------------------------------------------------------------- duplicates

def test_duplicate_op_type(raises):
    @register_op_impl(op_type="Op")
    class First:
        def execute(self) -> None:
            pass

    class Second:
        def execute(self) -> None:
            pass

    with raises(ValueError, "python op impl type already exists: Op (",
                f"{__name__}:First:Op", f"{__name__}:Second:Op"):
        register_op_impl(op_type="Op")(Second)
    assert [d.cls for d in get_registered_op_impls()] == [First]
    assert "__ge_op_impl_descriptor__" not in vars(Second)


def test_same_class_registered_twice_is_duplicate(raises):
    class Impl:
        def execute(self) -> None:
            pass

    register_op_impl(op_type="Op")(Impl)
    with raises(ValueError, f"python op impl descriptor_key already exists: {__name__}:Impl:Op"):
        register_op_impl(op_type="Op")(Impl)


def test_duplicate_descriptor_key(raises):
    from ge.custom_op import _impl

    class Impl:
        def execute(self) -> None:
            pass

    register_op_impl(op_type="Op")(Impl)
    # Same key, op_type index lost (e.g. an inconsistent registry): still refused.
    _impl._KEY_BY_OP_TYPE.clear()
    with raises(ValueError, f"python op impl descriptor_key already exists: {__name__}:Impl:Op"):
        register_op_impl(op_type="Op")(Impl)


def test_one_class_two_op_types():
    class Impl:
        def execute(self) -> None:
            pass

    register_op_impl(op_type="B")(Impl)
    register_op_impl(op_type="A")(Impl)
    assert [d.descriptor_key for d in get_registered_op_impls()] == [
        f"{__name__}:Impl:A", f"{__name__}:Impl:B"]
    assert Impl.__ge_op_impl_descriptor__.op_type == "A"  # the latest decoration


# --------------------------------------------------------------------------- registry

def test_registry_queries_and_clear(raises):
    for op_type in ["Zed", "Abc", "Mid"]:
        register_op_impl(op_type=op_type)(type(f"Impl{op_type}", (), {"execute": lambda self: None}))
    assert [d.op_type for d in get_registered_op_impls()] == ["Abc", "Mid", "Zed"]
    assert get_registered_op_impl_dicts() == [d.to_bridge_dict() for d in get_registered_op_impls()]
    assert all("cls" not in d for d in get_registered_op_impl_dicts())
    key = f"{__name__}:ImplMid:Mid"
    assert get_registered_op_impl_by_descriptor_key(key).op_type == "Mid"
    assert get_registered_op_impl_by_descriptor_key("nope:Impl:Mid") is None
    with raises(TypeError, "descriptor_key must be a str"):
        get_registered_op_impl_by_descriptor_key(3)
    clear_registered_op_impls()
    assert get_registered_op_impls() == []
    assert get_registered_op_impl_dicts() == []
    assert get_registered_op_impl_by_descriptor_key(key) is None


def test_public_names_exported_from_package():
    for name in ["register_op_impl", "get_registered_op_impls", "get_registered_op_impl_dicts",
                 "get_registered_op_impl_by_descriptor_key", "clear_registered_op_impls"]:
        assert getattr(co, name) is getattr(__import__("ge.custom_op._impl",
                                                       fromlist=[name]), name)
