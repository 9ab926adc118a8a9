"""ge-plugin-ls: each source (daemon, cache, scan), output formats, filters,
--check, exit codes."""
import json
import os

import pytest

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
    assert set(a) == {"name", "path", "kind", "prototypes", "version", "isolation", "status", "error", "ops",
                      "unprototyped"}
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
    # The check's own traceback (frames of the ge package only) is left out of
    # the text: the problem line names the plugin's file and line.
    assert "Traceback" not in p.stdout and "_validate.py" not in p.stdout, p.stdout
    raiser = make_plugin(opp, "raiser", "unused", body="def helper():\n    raise RuntimeError('raised here')\nhelper()\n")
    p = run_ls("--check", raiser, env=env)
    assert p.returncode == 1 and "Traceback" in p.stdout and f'File "{raiser}", line 2, in helper' in p.stdout, p.stdout
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


# A prototype and its implementation split over two plugins (GE lets separate
# files share one interpreter; here each plugin has its own registrations):
# share/docs/plugin-authors.md, "One plugin, one registry".
def _half(which):
    """plugins/testing/split/split_<which>.py, its op_type a format field."""
    from pathlib import Path
    source = Path(os.environ.get("GE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
    text = (source / "plugins" / "testing" / "split" / f"split_{which}.py").read_text()
    return text.replace("{", "{{").replace("}", "}}").replace("SplitHalves", "{op}")


HALF_PROTO = _half("proto")
HALF_IMPL = _half("impl")


@pytest.mark.parametrize("isolation", [None, "process"])
def test_a_prototype_without_implementation_is_listed_as_such(opp, tmp_path, isolation):
    if isolation is None:
        make_plugin(opp, "halfproto", "unused", body=HALF_PROTO.format(op="LsHalf"))
    else:  # a package: a process plugin's prototypes are collected in its worker
        (opp / "halfproto").mkdir()
        (opp / "halfproto" / "__init__.py").write_text(HALF_PROTO.format(op="LsHalf"))
        (opp / "halfproto" / "pyproject.toml").write_text(f'[tool.ge-plugin]\nisolation = "{isolation}"\n')
    make_plugin(opp, "whole", "LsWhole")
    env = cache_env(tmp_path)
    for source in ("scan", "cache"):  # the record carries it into the cache and back
        p = run_ls("--opp-path", str(opp), "--json", env=env)
        j = json.loads(p.stdout)
        assert j["source"] == source
        by_name = {r["name"]: r for r in j["plugins"]}
        assert by_name["halfproto"]["status"] == "ok" and by_name["halfproto"]["prototypes"] == ["LsHalf"]
        assert by_name["halfproto"]["ops"] == []
        assert by_name["whole"]["prototypes"] == []  # implemented prototypes are its ops
    table = run_ls("--opp-path", str(opp), env=env).stdout
    row = next(line for line in table.splitlines() if line.startswith("halfproto"))
    assert "LsHalf (prototype)" in row and row.rstrip().endswith("ok"), table
    # --op finds it by that op_type.
    j = json.loads(run_ls("--opp-path", str(opp), "--json", "--op", "LsHalf", env=env).stdout)
    assert [r["name"] for r in j["plugins"]] == ["halfproto"]


def test_check_names_the_other_half_of_a_split_prototype(opp, tmp_path):
    proto = make_plugin(opp, "splitproto", "unused", body=HALF_PROTO.format(op="LsSplit"))
    impl = make_plugin(opp, "splitimpl", "unused", body=HALF_IMPL.format(op="LsSplit"))
    env = cache_env(tmp_path)
    # The folder checked at once: each half is a problem naming what to do.
    p = run_ls("--check", str(opp), env=env)
    assert p.returncode == 1, p.stdout
    assert (f"{proto} registers the prototype of op_type 'LsSplit' (register_op) but no implementation "
            "(register_op_impl): no node of it can run") in p.stdout, p.stdout
    assert f"the prototype of op_type 'LsSplit' is registered by plugin 'splitproto' ({proto}), another plugin" \
        in p.stdout, p.stdout
    assert p.stdout.count('"One plugin, one registry"') == 2, p.stdout
    # The listing gives the implementation the same reason as ge-run, from the
    # scan and from the cache, and drops it once the prototype's plugin is gone.
    for source in ("scan", "cache"):
        j = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
        assert j["source"] == source
        error = {r["name"]: r for r in j["plugins"]}["splitimpl"]["error"]
        assert f"is registered by plugin 'splitproto' ({proto}), another plugin: a prototype and its implementation " \
            "must be in the same plugin" in error, error
    os.rename(proto, str(proto) + ".off")
    j = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    error = {r["name"]: r for r in j["plugins"]}["splitimpl"]["error"]
    assert "canonical IR not found" in error and "another plugin" not in error, error
    os.rename(str(proto) + ".off", proto)
    # The implementation checked alone, against an installed registry that has the prototype.
    os.remove(impl)
    assert run_ls("--opp-path", str(opp), "--json", env=env).returncode == 0  # writes the cache
    lone = tmp_path / "lone"
    lone.mkdir()
    impl = make_plugin(lone, "splitimpl", "unused", body=HALF_IMPL.format(op="LsSplit"))
    j = json.loads(run_ls("--check", impl, "--json", env={**env, "ASCEND_CUSTOM_OPP_PATH": str(opp)}).stdout)
    assert j["registry"]["source"] == "cache", j["registry"]
    problem = j["problems"][0]
    assert f"is registered by plugin 'splitproto' ({proto}), another plugin" in problem["problem"], j
    assert '"One plugin, one registry"' in problem["hint"], problem
    # An implementation with no prototype anywhere keeps the plain hint.
    make_plugin(lone, "orphan", "unused", body=HALF_IMPL.format(op="LsNowhere"))
    p = run_ls("--check", str(lone / "orphan.py"), env={**env, "ASCEND_CUSTOM_OPP_PATH": str(opp)})
    assert p.returncode == 1 and "another plugin" not in p.stdout and "register the op's prototype" in p.stdout
