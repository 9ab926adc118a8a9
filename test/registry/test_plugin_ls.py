"""ge-plugin-ls: each source (daemon, cache, scan), output formats, filters,
--check, exit codes."""
import json
import os

from registry_helpers import make_plugin, run_ls, statuses


def cache_env(tmp_path):
    return {"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "c" / "registry.json"),
            "GE_PLUGIN_REGISTRY_SOCKET": str(tmp_path / "none.sock")}


def test_scan_then_cache_then_changed(opp, tmp_path):
    make_plugin(opp, "alpha", "LsAlpha", version="0.9")
    make_plugin(opp, "beta", "LsBeta", body="def x(:\n")
    env = cache_env(tmp_path)
    p = run_ls("--opp-path", str(opp), "--json", env=env)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["source"] == "scan"
    assert statuses(j["plugins"]) == {"alpha": "ok", "beta": "error"}
    a = j["plugins"][0]
    assert set(a) == {"name", "path", "kind", "prototypes", "version", "isolation", "status", "error", "ops"}
    assert a["version"] == "0.9" and a["isolation"] == "subinterpreter" and a["path"].endswith("alpha.py")
    assert a["kind"] == "python" and a["prototypes"] == []
    assert a["ops"] == [{"op_type": "LsAlpha", "capabilities": ["eager_execute", "infer_meta"]}]
    p = run_ls("--opp-path", str(opp), "--json", env=env)
    assert json.loads(p.stdout)["source"] == "cache"
    make_plugin(opp, "beta", "LsBeta")  # fixed: only it is rescanned
    j = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    assert j["source"] == "scan" and statuses(j["plugins"]) == {"alpha": "ok", "beta": "ok"}
    # --no-daemon --rescan scans again
    j = json.loads(run_ls("--opp-path", str(opp), "--json", "--rescan", "--no-daemon", env=env).stdout)
    assert j["source"] == "scan"
    # a corrupted cache is not trusted
    open(env["GE_PLUGIN_REGISTRY_CACHE"], "w").write('{"format": "ge-plugin-registry-cache", "vers')
    p = run_ls("--opp-path", str(opp), "--json", env=env)
    assert p.returncode == 0 and json.loads(p.stdout)["source"] == "scan"


def test_daemon_source_and_rescan(opp, daemon_factory, tmp_path):
    make_plugin(opp, "gamma", "LsGamma")
    d = daemon_factory(opp).start()
    env = {"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "x.json")}
    p = run_ls("--socket", d.socket, "--json", env=env)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["source"] == "daemon" and statuses(j["plugins"]) == {"gamma": "ok"}
    p = run_ls("--socket", d.socket, "--json", "--rescan", env=env)
    assert p.returncode == 0 and json.loads(p.stdout)["source"] == "daemon"
    # --no-daemon skips it
    p = run_ls("--socket", d.socket, "--json", "--no-daemon", "--opp-path", str(opp), env=env)
    assert json.loads(p.stdout)["source"] in ("scan", "cache")
    # a daemon serving another opp path is not used
    other = tmp_path / "other"
    other.mkdir()
    make_plugin(other, "delta", "LsDelta")
    p = run_ls("--socket", d.socket, "--json", "--opp-path", str(other), env=env)
    j = json.loads(p.stdout)
    assert j["source"] == "scan" and statuses(j["plugins"]) == {"delta": "ok"}


def test_table_filters_and_exit_codes(opp, tmp_path):
    make_plugin(opp, "alpha", "LsAlpha2", version="3.1")
    make_plugin(opp, "broken", "LsBroken", pre="raise RuntimeError('boom at import')")
    env = cache_env(tmp_path)
    p = run_ls("--opp-path", str(opp), env=env)
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["PLUGIN", "VERSION", "OP_TYPE", "EXECUTE", "COMPILE", "LAUNCH-ARGS", "INFER-META",
                                "ISOLATION", "STATUS"]
    assert "\033[" not in p.stdout  # no colour when not a terminal
    row = [l for l in lines if l.startswith("alpha")][0].split()
    assert row == ["alpha", "3.1", "LsAlpha2", "yes", "-", "-", "yes", "subinterpreter", "ok"]
    assert any(l.startswith("broken") and "error: " in l and "boom at import" in l for l in lines)
    assert "2 plugin(s)" in lines[-1] and "source: scan" in lines[-1]
    j = json.loads(run_ls("--opp-path", str(opp), "--json", "--status", "error", env=env).stdout)
    assert [p["name"] for p in j["plugins"]] == ["broken"]
    j = json.loads(run_ls("--opp-path", str(opp), "--json", "--op", "LsAlpha2", env=env).stdout)
    assert [p["name"] for p in j["plugins"]] == ["alpha"]
    assert run_ls("--opp-path", str(opp), "--json", "--op", "Nope", env=env).returncode == 1
    assert run_ls("--opp-path", str(opp), "--status", "bogus", env=env).returncode == 2
    assert run_ls("--bogus", env=env).returncode == 2
    assert run_ls("--opp", str(opp), env=env).returncode == 2  # no guessing of abbreviations
    e = dict(env)
    e["ASCEND_CUSTOM_OPP_PATH"] = ""
    assert run_ls(env=e).returncode == 2
    h = run_ls("--help", env=env)
    assert h.returncode == 0 and "--check" in h.stdout


def test_check(opp, tmp_path):
    env = cache_env(tmp_path)
    good = make_plugin(opp, "good", "LsCheckGood")
    p = run_ls("--check", good, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "no problems found" in p.stdout and "LsCheckGood(x) -> (" in p.stdout
    bad = make_plugin(opp, "badsig", "LsCheckBad", body=(
        "from ge.custom_op import register_op, register_op_impl\n"
        "from ge.runtime import Tensor, TensorDesc\n\n"
        "@register_op(op_type='LsCheckBad')\n"
        "def p(x: TensorDesc) -> TensorDesc:\n    return x\n\n"
        "@register_op_impl(op_type='LsCheckBad')\n"
        "class I:\n    def execute(self, x: Tensor, y: Tensor) -> None:\n        pass\n"))
    p = run_ls("--check", bad, env=env)
    assert p.returncode == 1
    assert "problem:" in p.stdout and "hint:" in p.stdout and "expected" in p.stdout
    j = json.loads(run_ls("--check", bad, "--json", env=env).stdout)
    assert not j["ok"] and j["problems"][0]["hint"]
    seg = make_plugin(opp, "segv", "LsSegv", pre="import ctypes\nctypes.string_at(0)")
    p = run_ls("--check", seg, env=env)
    assert p.returncode == 1 and "SIGSEGV" in p.stdout
    p = run_ls("--check", str(opp / "missing.py"), env=env)
    assert p.returncode == 1
    os.chmod(good, 0o666)
    p = run_ls("--check", good, env=env)
    assert p.returncode == 1 and "writable by others" in p.stdout
    assert run_ls("--check", good, "--allow-insecure", env=env).returncode == 0


def test_listing_index_is_never_trusted_when_stale(opp, tmp_path):
    """The warm --json path reads <cache>.list without parsing the cache; any
    added, removed, changed or newly insecure plugin sends it to the slow path."""
    make_plugin(opp, "alpha", "IdxAlpha", version="1.0")
    make_plugin(opp, "beta", "IdxBeta")
    env = cache_env(tmp_path)
    first = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    assert first["source"] == "scan"
    assert os.path.exists(env["GE_PLUGIN_REGISTRY_CACHE"] + ".list")
    warm = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    assert warm == {"plugins": first["plugins"], "source": "cache", "version": first["version"]}
    make_plugin(opp, "alpha", "IdxAlpha", version="2.0.1")  # changed (and longer: same-size rewrites within one clock tick keep the stamp)
    j = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    assert {p["name"]: p["version"] for p in j["plugins"]}["alpha"] == "2.0.1"
    make_plugin(opp, "gamma", "IdxGamma")  # added
    j = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    assert statuses(j["plugins"]) == {"alpha": "ok", "beta": "ok", "gamma": "ok"}
    os.remove(os.path.join(str(opp), "beta.py"))  # removed
    j = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    assert statuses(j["plugins"]) == {"alpha": "ok", "gamma": "ok"}
    os.chmod(os.path.join(str(opp), "gamma.py"), 0o666)  # made insecure: content unchanged
    j = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    assert statuses(j["plugins"])["gamma"] == "insecure"
    # A corrupted index is ignored (the answer is still right).
    with open(env["GE_PLUGIN_REGISTRY_CACHE"] + ".list", "w") as f:
        f.write("ge-plugin-list 1\nO\tgarbage\n")
    j = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    assert statuses(j["plugins"])["alpha"] == "ok"


TYPO_PLUGIN = '''from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc


@register_op(op_type="ScaleCustom")
def proto(x: TensorDesc) -> TensorDesc:
    return x


@register_op_impl(op_type="{impl}")
class Impl:
    def execute(self, x: Tensor) -> None:
        pass
'''


def test_an_implementation_whose_op_type_is_a_typo_of_a_prototype_gets_a_suggestion(opp, tmp_path):
    make_plugin(opp, "typo", "unused", body=TYPO_PLUGIN.replace("{impl}", "ScaleCustm"))
    make_plugin(opp, "far", "unused", body=TYPO_PLUGIN.replace("{impl}", "SomethingElse").replace("ScaleCustom", "FarProto"))
    p = run_ls("--opp-path", str(opp), "--json", env=cache_env(tmp_path))
    by_name = {r["name"]: r for r in json.loads(p.stdout)["plugins"]}
    typo = by_name["typo"]
    assert typo["status"] == "error" and "canonical IR not found" in typo["error"], typo
    assert "did you mean 'ScaleCustom'" in typo["error"], typo["error"]
    far = by_name["far"]
    assert far["status"] == "error" and "canonical IR not found" in far["error"], far
    assert "did you mean" not in far["error"], far["error"]
