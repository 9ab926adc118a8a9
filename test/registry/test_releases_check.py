"""The registry and --check on plugins written for earlier GE releases
(plugins/testing/releases; share/docs/plugin-authors.md, "Plugins from earlier
GE releases"): the record says which release's rules applied, --check shows it
and warns where the newest GE would refuse the plugin, and a legacy execute
without any prototype is a problem naming the op_type.
"""
import json
import os
import shutil
from pathlib import Path

import pytest

from registry_helpers import run_ls

SOURCE = Path(os.environ.get("GE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
RELEASES = SOURCE / "plugins" / "testing" / "releases"


@pytest.fixture
def releases(tmp_path):
    """A private copy of the release-style plugins (nothing of the source tree is written)."""
    d = tmp_path / "releases"
    shutil.copytree(RELEASES, d)
    os.chmod(tmp_path, 0o755)
    for p in [d, *d.iterdir()]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return d


def env_for(tmp_path):
    return {"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "c" / "registry.json"),
            "GE_PLUGIN_REGISTRY_SOCKET": str(tmp_path / "none.sock")}


def ops_by_type(record):
    return {op["op_type"]: op for op in record["ops"]}


def test_the_record_says_which_release_rules_applied(releases, tmp_path):
    p = run_ls("--check", str(releases), "--json", env=env_for(tmp_path))
    j = json.loads(p.stdout)
    by_name = {r["plugin"]["name"]: r for r in j["plugins"]}
    rules = {}
    for report in by_name.values():
        for op in report["plugin"]["ops"] + report["plugin"].get("unprototyped", []):
            rules[op["op_type"]] = op["rules"]
    assert rules == {"RelBeta1Add": "9.2.0-beta.1", "RelCtxScale": "9.2.0-beta.2",
                     "RelCtxAnnotated": "9.2.0-beta.2", "RelSchemaAxpy": "9.2.0-beta.2",
                     "RelPlainAdd": "newest", "RelNoProto": "9.2.0-beta.2",
                     "RelPlainCtx": "newest", "RelStaticCtx": "9.2.0-beta.2"}
    # The newest GE calls a legacy execute(ctx) with the context too: nothing to refuse.
    any_ctx = ops_by_type(by_name["rel_any_ctx"]["plugin"])
    assert "newest_refusal" not in any_ctx["RelPlainCtx"] and "newest_refusal" not in any_ctx["RelStaticCtx"]
    assert by_name["rel_any_ctx"]["warnings"] == []
    # Each op the newest GE would refuse carries that refusal, in GE's wording.
    beta1 = ops_by_type(by_name["rel_beta1_inputs"]["plugin"])["RelBeta1Add"]
    assert "invalid execute signature for op type RelBeta1Add" in beta1["newest_refusal"]
    plain = ops_by_type(by_name["rel_plain_example"]["plugin"])["RelPlainAdd"]
    assert "expected None return annotation, actual missing return annotation" in plain["newest_refusal"]
    assert all(w.startswith("op_type 'RelPlainAdd' loads here, but the newest GE refuses it")
               for w in by_name["rel_plain_example"]["warnings"]) and by_name["rel_plain_example"]["ok"]


def test_check_shows_the_rules_and_warns_without_failing(releases, tmp_path):
    env = env_for(tmp_path)
    for name, op, rules in (("rel_beta1_inputs", "RelBeta1Add", "9.2.0-beta.1"),
                            ("rel_beta2_schema", "RelSchemaAxpy", "9.2.0-beta.2"),
                            ("rel_plain_example", "RelPlainAdd", "newest")):
        p = run_ls("--check", str(releases / f"{name}.py"), env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"(rules {rules})" in p.stdout, p.stdout
        warnings = [ln for ln in p.stdout.splitlines() if ln.startswith("warning:")]
        assert len(warnings) == 1 and f"op_type '{op}'" in warnings[0], p.stdout
        assert "the newest GE refuses it" in warnings[0]
        assert "no problems found" in p.stdout


def test_check_of_a_legacy_execute_without_a_prototype_is_a_problem(releases, tmp_path):
    p = run_ls("--check", str(releases / "rel_ctx_noproto.py"), env=env_for(tmp_path))
    assert p.returncode == 1, p.stdout
    problems = [ln for ln in p.stdout.splitlines() if ln.startswith("problem:")]
    assert len(problems) == 1, p.stdout
    assert "op_type 'RelNoProto'" in problems[0] and "rel_ctx_noproto.py" in problems[0]
    assert "register_op(op_type='RelNoProto')" in problems[0]
    assert "RelNoProto  [eager_execute]  (rules 9.2.0-beta.2, no prototype" in p.stdout


def test_the_listing_keeps_every_release_style_plugin_ok(releases, tmp_path):
    p = run_ls("--opp-path", str(releases), "--json", "--no-daemon", env=env_for(tmp_path))
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert {r["name"]: r["status"] for r in j["plugins"]} == {
        "rel_beta1_inputs": "ok", "rel_beta2_ctx": "ok", "rel_beta2_schema": "ok",
        "rel_ctx_noproto": "ok", "rel_plain_example": "ok", "rel_any_ctx": "ok"}


def test_check_reports_an_implementation_that_can_run_no_node(tmp_path):
    opp = tmp_path / "opp"
    opp.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(opp, 0o755)
    plugin = opp / "compile_only.py"
    plugin.write_text(
        "from ge.custom_op import BaseCustomOp, register_op, register_op_impl\n"
        "from ge.runtime import Tensor, TensorDesc\n\n"
        "@register_op(op_type='RelCompileOnly')\n"
        "def proto(x: TensorDesc) -> TensorDesc:\n    return x\n\n"
        "@register_op_impl(op_type='RelCompileOnly')\n"
        "class CompileOnly(BaseCustomOp):\n"
        "    def compile(self, x: Tensor, y: Tensor) -> None:\n        pass\n")
    p = run_ls("--check", str(plugin), env=env_for(tmp_path))
    assert p.returncode == 1, p.stdout
    problems = [ln for ln in p.stdout.splitlines() if ln.startswith("problem:")]
    assert len(problems) == 1 and "op_type 'RelCompileOnly'" in problems[0], p.stdout
    assert "can neither execute nor declare launch args" in problems[0] and "compile_only.py" in problems[0]


def test_the_listing_shows_and_finds_a_legacy_execute_without_a_prototype(releases, tmp_path):
    env = env_for(tmp_path)
    base = ("--opp-path", str(releases), "--no-daemon")
    table = run_ls(*base, env=env)
    assert table.returncode == 0, table.stderr
    row = next(ln for ln in table.stdout.splitlines() if ln.startswith("rel_ctx_noproto"))
    assert "RelNoProto (no prototype)" in row and row.rstrip().endswith("ok"), row
    for source in ("scan", "cache"):  # the second listing reads the listing index
        j = json.loads(run_ls(*base, "--json", "--op", "RelNoProto", env=env).stdout)
        assert [p["name"] for p in j["plugins"]] == ["rel_ctx_noproto"], (source, j)
        assert j["plugins"][0]["unprototyped"] == [{"op_type": "RelNoProto", "capabilities": ["eager_execute"]}]
        assert j["plugins"][0]["ops"] == []
