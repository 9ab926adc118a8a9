"""pyproject.toml as the registry reads it: one TOML parser (Python's tomllib,
through ge._loader.read_metadata) for the scanner's load order and for the
plugin's record; share/docs/plugin-authors.md, "Isolation"."""
import json
import os
import subprocess

from registry_helpers import BIN, PLUGIN, run_ls


def make_package(opp, name, op, toml):
    pkg = opp / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text(PLUGIN.format(doc=f"Package {name}.", pre="", version="1.0", op=op))
    (pkg / "pyproject.toml").write_text(toml)
    for p in (pkg, pkg / "__init__.py", pkg / "pyproject.toml"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return pkg


def scan(paths):
    """(paths in the order ge-plugin-scan loaded them, {path: record})."""
    p = subprocess.run([os.path.join(BIN, "ge-plugin-scan")], input=b"".join(os.fsencode(str(x)) + b"\0" for x in paths),
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    begins = [line["begin"] for line in lines if "begin" in line]
    records = {line["path"]: line for line in lines if "begin" not in line}
    return begins, records


def test_a_commented_out_isolation_line_does_not_move_a_plugin_first(opp):
    # The scanner loads main-interpreter plugins first. A comment saying
    # `# isolation = "main"` is no setting: that package keeps its place after
    # the one that really asks for the main interpreter.
    commented = make_package(opp, "commented", "CommentedOp", '[tool.ge-plugin]\n# isolation = "main"\n')
    real = make_package(opp, "real_main", "RealMainOp", '[tool.ge-plugin]\nisolation = "main"\n')
    begins, records = scan([commented, real])
    assert begins == [str(real), str(commented)]
    assert records[str(commented)]["isolation"] == "subinterpreter"
    assert records[str(real)]["isolation"] == "main"
    assert records[str(commented)]["status"] == records[str(real)]["status"] == "ok"


def test_invalid_toml_fails_that_plugin_naming_file_and_line(opp, tmp_path):
    bad = make_package(opp, "badtoml", "BadTomlOp", '[project]\nname = "p"\nversion = = "1"\n')
    make_package(opp, "good", "GoodTomlOp", '[project]\nversion = "2.0"\n')
    p = run_ls("--no-daemon", "--json", "--opp-path", str(opp), "--cache", str(tmp_path / "cache.json"))
    assert p.returncode == 0, p.stderr
    plugins = {pl["name"]: pl for pl in json.loads(p.stdout)["plugins"]}
    assert plugins["good"]["status"] == "ok" and plugins["good"]["version"] == "2.0"
    assert plugins["badtoml"]["status"] == "error"
    message = plugins["badtoml"]["error"]
    assert f"{bad}/pyproject.toml:3:11: invalid TOML: Invalid value" in message, message


def test_a_wrongly_typed_isolation_is_an_error_naming_the_field(opp, tmp_path):
    make_package(opp, "typed", "TypedOp", '[tool.ge-plugin]\nisolation = true\n')
    p = run_ls("--no-daemon", "--json", "--opp-path", str(opp), "--cache", str(tmp_path / "cache.json"))
    assert p.returncode == 0, p.stderr
    plugin = json.loads(p.stdout)["plugins"][0]
    assert plugin["status"] == "error"
    assert "pyproject.toml: tool.ge-plugin.isolation must be a string" in plugin["error"]
