"""The JSON Schemas of share/schemas/ against real ge-plugin-ls outputs: the
listing from each source (scan, cache, daemon) and --check --json, for good
and broken plugins; and that the schemas reject what the tools never print."""
import json
import os
import sys

from registry_helpers import make_plugin, run_ls

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from json_schemas import errors, validate  # noqa: E402


def cache_env(tmp_path):
    return {"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "c" / "registry.json"),
            "GE_PLUGIN_REGISTRY_SOCKET": str(tmp_path / "none.sock")}


def listing(*args, env):
    p = run_ls(*args, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_listing_from_scan_cache_and_daemon_matches_the_schema(opp, tmp_path, daemon_factory):
    make_plugin(opp, "good", "SchemaGood", version="1.2")
    make_plugin(opp, "broken", "SchemaBroken", body="def x(:\n")
    make_plugin(opp, "twin", "SchemaGood")  # an op_type conflict
    env = cache_env(tmp_path)
    seen = set()
    for _ in range(2):
        j = listing("--opp-path", str(opp), "--json", env=env)
        validate(j, "plugin-ls")
        seen.add(j["source"])
    assert seen == {"scan", "cache"}
    assert {p["status"] for p in j["plugins"]} == {"ok", "error", "conflict"}
    d = daemon_factory(opp).start()
    j = listing("--socket", d.socket, "--json", env={})
    assert j["source"] == "daemon"
    validate(j, "plugin-ls")


def test_check_json_matches_the_schema_for_one_plugin_and_a_folder(opp, tmp_path):
    good = make_plugin(opp, "good", "SchemaCheckGood")
    make_plugin(opp, "broken", "SchemaCheckBroken", body="import no_such_module_here\n")
    env = cache_env(tmp_path)
    p = run_ls("--check", good, "--json", env=env)
    assert p.returncode == 0, p.stderr
    validate(json.loads(p.stdout), "plugin-ls-check")
    p = run_ls("--check", str(opp), "--json", env=env)
    assert p.returncode == 1
    j = json.loads(p.stdout)
    validate(j, "plugin-ls-check")
    assert not j["ok"] and any(r["problems"] for r in j["plugins"])
    p = run_ls("--check", str(tmp_path / "nothing-here.py"), "--json", env=env)
    assert p.returncode == 1
    validate(json.loads(p.stdout), "plugin-ls-check")


def test_the_listing_schema_rejects_what_ge_plugin_ls_never_prints(opp, tmp_path):
    make_plugin(opp, "good", "SchemaReject")
    j = listing("--opp-path", str(opp), "--json", env=cache_env(tmp_path))
    assert errors(j, "plugin-ls") == []
    extra = json.loads(json.dumps(j))
    extra["plugins"][0]["surprise"] = 1
    assert errors(extra, "plugin-ls")
    bad_status = json.loads(json.dumps(j))
    bad_status["plugins"][0]["status"] = "fine"
    assert errors(bad_status, "plugin-ls")
    no_source = {"plugins": j["plugins"]}
    assert errors(no_source, "plugin-ls")
    # fields other engineers' tools add at the top level stay valid
    assert errors(dict(j, version="1.0.0", scan_in_progress=True), "plugin-ls") == []
