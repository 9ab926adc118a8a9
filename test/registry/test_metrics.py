"""Fleet metrics: `ge-plugin-ls --format prometheus` and the daemon's
`--metrics-textfile` (share/docs/registry.md, "Fleet metrics"). The text is
checked with `promtool check metrics` (Debian's prometheus package) when it is
installed, and parsed here against the JSON listing of the same registry."""
import json
import os
import re
import shutil
import subprocess

import pytest

from registry_helpers import make_plugin, run_ls, wait_for

SERIES = re.compile(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')


def cache_env(tmp_path):
    return {"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "c" / "registry.json"),
            "GE_PLUGIN_REGISTRY_SOCKET": str(tmp_path / "none.sock")}


def parse(text):
    """[(metric, {label: value}, number)] of the text format's sample lines."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = SERIES.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = {k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                  for k, v in LABEL.findall(m.group(2) or "")}
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def promtool_check(text):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool is not installed (Debian package prometheus)")
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_prometheus_output_agrees_with_the_json_listing(opp, tmp_path):
    # __version__ = "2.0 \"beta\" \\ x": a quote and a backslash in a label value
    make_plugin(opp, "good", "MetricsGood", version='2.0 \\"beta\\" \\\\ x')
    make_plugin(opp, "broken", "MetricsBroken", body="def x(:\n")
    env = cache_env(tmp_path)
    listing = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    p = run_ls("--opp-path", str(opp), "--format", "prometheus", env=env)
    assert p.returncode == 0, p.stderr
    samples = parse(p.stdout)
    counts = {lab["status"]: v for name, lab, v in samples if name == "ge_plugin_registry_plugins"}
    assert counts["ok"] == 1 and counts["error"] == 1 and counts["crashed"] == 0
    info = {lab["name"]: lab for name, lab, v in samples if name == "ge_plugin_registry_plugin_info"}
    for plugin in listing["plugins"]:
        lab = info[plugin["name"]]
        assert (lab["path"], lab["version"], lab["isolation"], lab["status"]) == \
            (plugin["path"], plugin["version"], plugin["isolation"], plugin["status"])
    assert info["good"]["version"] == '2.0 "beta" \\ x'
    names = {name for name, _, _ in samples}
    assert "ge_plugin_registry_cache_age_seconds" in names
    assert ("ge_plugin_registry_listing_info", {"source": "cache"}, 1.0) in samples
    promtool_check(p.stdout)


def test_a_scan_reports_its_duration_and_count(opp, tmp_path):
    for i in range(3):
        make_plugin(opp, f"p{i}", f"MetricsScan{i}")
    p = run_ls("--opp-path", str(opp), "--format", "prometheus", env=cache_env(tmp_path))
    assert p.returncode == 0, p.stderr
    samples = {name: v for name, _, v in parse(p.stdout) if not _}
    assert samples["ge_plugin_registry_last_refresh_scanned_plugins"] == 3
    assert samples["ge_plugin_registry_last_refresh_duration_seconds"] > 0
    promtool_check(p.stdout)


def test_unknown_format_is_a_usage_error(opp, tmp_path):
    p = run_ls("--opp-path", str(opp), "--format", "yaml", env=cache_env(tmp_path))
    assert p.returncode == 2 and "unknown --format 'yaml'" in p.stderr
    p = run_ls("--opp-path", str(opp), "--json", "--format", "prometheus", env=cache_env(tmp_path))
    assert p.returncode == 2 and "contradict" in p.stderr


def test_daemon_writes_the_textfile_atomically_on_each_change(opp, tmp_path, daemon_factory):
    make_plugin(opp, "first", "MetricsDaemon1")
    prom = tmp_path / "metrics" / "ge_plugin_registry.prom"
    prom.parent.mkdir()
    d = daemon_factory(opp, extra=["--metrics-textfile", str(prom)]).start()
    assert wait_for(prom.exists, 20), d.read_log()
    first = prom.read_text()
    counts = {lab["status"]: v for n, lab, v in parse(first) if n == "ge_plugin_registry_plugins"}
    assert counts["ok"] == 1
    make_plugin(opp, "second", "MetricsDaemon2")

    def two_ok():
        return any(n == "ge_plugin_registry_plugins" and lab["status"] == "ok" and v == 2
                   for n, lab, v in parse(prom.read_text()))
    assert wait_for(two_ok, 20), d.read_log()
    # only the file itself: the temporary file it was written as is renamed away
    assert os.listdir(prom.parent) == [prom.name]
    text = prom.read_text()
    assert ("ge_plugin_registry_listing_info", {"source": "daemon"}, 1.0) in parse(text)
    # ge-plugin-ls through this daemon prints the same plugin series
    p = run_ls("--socket", d.socket, "--format", "prometheus", env={})
    assert p.returncode == 0, p.stderr
    keep = lambda t: sorted(l for l in t.splitlines() if l.startswith("ge_plugin_registry_plugin"))  # noqa: E731
    assert keep(p.stdout) == keep(text)
    promtool_check(text)
    promtool_check(p.stdout)


def test_an_unwritable_textfile_does_not_stop_the_daemon(opp, tmp_path, daemon_factory):
    make_plugin(opp, "one", "MetricsUnwritable")
    d = daemon_factory(opp, extra=["--metrics-textfile", str(tmp_path / "no-such-folder" / "x.prom")]).start()
    r = d.client().request({"cmd": "list"})
    assert r["ok"] and len(r["plugins"]) == 1
    assert "metrics textfile" in d.read_log()
