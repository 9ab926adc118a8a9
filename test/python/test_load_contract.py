"""The load contract between ge._entry and the host (share/docs/host-design.md,
"The load contract"): one version on both sides, native objects whose fields
are typed where they are made."""
import pytest

import _ge_native
import ge._entry as entry


def make_impl(**change):
    fields = dict(op_type="ContractOp", descriptor_key="k", cls=object, ir=None, proto=None, library=False,
                  interfaces=["eager_execute"], revalidate=len, rules="newest", call="schema", warnings=[],
                  newest_refusal="")
    fields.update(change)
    return _ge_native.CollectedImpl(**fields)


def test_both_sides_declare_the_same_version():
    assert isinstance(entry.LOAD_CONTRACT_VERSION, int)
    assert entry.LOAD_CONTRACT_VERSION == _ge_native.LOAD_CONTRACT_VERSION


def test_a_collected_impl_keeps_its_fields():
    impl = make_impl(ir={"op_type": "ContractOp"}, library=True, rules="9.2.0-beta.2", call="context")
    assert (impl.op_type, impl.descriptor_key, impl.rules, impl.call, impl.library) == (
        "ContractOp", "k", "9.2.0-beta.2", "context", True)
    assert impl.cls is object and impl.ir == {"op_type": "ContractOp"} and impl.proto is None


@pytest.mark.parametrize("field, value, words", [
    ("interfaces", [1], "CollectedImpl.interfaces[0] must be a str"),
    ("interfaces", "eager_execute", "CollectedImpl.interfaces must be a list of str"),
    ("warnings", [b"bytes"], "CollectedImpl.warnings[0] must be a str"),
    ("ir", ["not", "a", "dict"], "CollectedImpl.ir must be a dict or None"),
    ("revalidate", 3, "CollectedImpl.revalidate must be callable"),
])
def test_a_wrong_field_is_a_type_error_naming_it(field, value, words):
    with pytest.raises(TypeError, match=words.replace("[", r"\[").replace("]", r"\]")):
        make_impl(**{field: value})


def test_a_string_field_of_another_type_is_refused_where_it_is_made():
    with pytest.raises(TypeError):  # Boost.Python's ArgumentError: no overload takes an int op_type
        make_impl(op_type=3)


def test_a_collected_plugin_holds_only_collected_impls():
    _ge_native.CollectedPlugin(impls=[make_impl()], protos=["ContractOp"])
    with pytest.raises(TypeError, match=r"CollectedPlugin.impls\[0\] must be a CollectedImpl"):
        _ge_native.CollectedPlugin(impls=[{"op_type": "ContractOp"}], protos=[])
    with pytest.raises(TypeError, match=r"CollectedPlugin.protos\[0\] must be a str"):
        _ge_native.CollectedPlugin(impls=[], protos=[7])


def test_adapter_objects_are_named_fields():
    objs = entry.adapter_objects()
    assert isinstance(objs, _ge_native.AdapterObjects)
