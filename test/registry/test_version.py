"""--version on every tool and "version" in the --json outputs: the project's
version, set once in the top CMakeLists.txt (project(... VERSION)), read here
from that file (README.md, "ge-run"; share/docs/registry.md)."""
import json
import os
import re
import subprocess

import pytest

from registry_helpers import BIN, Client, make_plugin, run_ls

SOURCE = os.environ.get("GE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def project_version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*GePluginHost\s+VERSION\s+([0-9.]+)", f.read())
    assert m, "no project(GePluginHost VERSION ...) in CMakeLists.txt"
    return m.group(1)


@pytest.mark.parametrize("tool", ["ge-run", "ge-plugin-ls", "ge-plugin-registryd"])
def test_version_option(tool):
    p = subprocess.run([os.path.join(BIN, tool), "--version"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"{tool} (GE plugin host) {project_version()}\n"


@pytest.mark.parametrize("tool", ["ge-run", "ge-plugin-ls", "ge-plugin-registryd"])
def test_help_has_the_man_page_sections(tool):
    """help2man makes the man page of --help (share/cmake/GePluginMan.cmake)."""
    p = subprocess.run([os.path.join(BIN, tool), "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"Usage: {tool} ")
    for title in ("Options:", "Exit status:", "Environment:", "Files:"):
        assert f"\n{title}\n" in p.stdout, title
    assert "--version" in p.stdout and "ASCEND_CUSTOM_OPP_PATH" in p.stdout


def test_json_outputs_carry_the_version(tmp_path, opp, daemon_factory):
    version = project_version()
    make_plugin(opp, "ver_probe", "VerProbeCustom")
    env = {"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "c" / "registry.json"),
           "GE_PLUGIN_REGISTRY_SOCKET": str(tmp_path / "none.sock")}
    scanned = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    assert scanned["source"] == "scan" and scanned["version"] == version
    warm = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)  # the listing index's fast path
    assert warm["source"] == "cache" and warm["version"] == version
    check = json.loads(run_ls("--check", os.path.join(str(opp), "ver_probe.py"), "--json", env=env).stdout)
    assert check["ok"] and check["version"] == version
    d = daemon_factory(opp).start()
    c = Client(d.socket, hello=False)
    assert c.request({"cmd": "hello", "protocol": 1})["version"] == version
    c.close()
    via_daemon = json.loads(run_ls("--socket", d.socket, "--json").stdout)
    assert via_daemon["source"] == "daemon" and via_daemon["version"] == version
