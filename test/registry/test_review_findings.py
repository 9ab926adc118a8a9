"""Bad inputs a review found in the registry tools, each a test: a planted
symlink never redirects the daemon's writes, the textfile may not be one of
the daemon's own files, whole-registry metrics take no filters, an output that
cannot be written is a failure, absolute paths work from a deleted current
folder, and a failure of the scanner itself is never cached as the plugin's
verdict (share/docs/registry.md)."""
import json
import os
import subprocess

from registry_helpers import BIN as _BIN, make_plugin, run_ls, wait_for

BIN = os.path.abspath(_BIN)


def env_for(tmp_path):
    return {"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "c" / "registry.json"),
            "GE_PLUGIN_REGISTRY_SOCKET": str(tmp_path / "none.sock")}


def test_a_planted_symlink_does_not_redirect_the_textfile_or_the_cache(opp, tmp_path, daemon_factory):
    make_plugin(opp, "one", "PlantedOne")
    pub = tmp_path / "pub"
    pub.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    prom = pub / "m.prom"
    d = daemon_factory(opp, extra=["--metrics-textfile", str(prom)])
    os.makedirs(os.path.dirname(d.cache), exist_ok=True)
    d.start()
    pid = d.proc.pid
    # The names the writes used to take (PATH.tmp-<pid>), planted as links to the victim.
    for base in (str(prom), d.cache, d.cache + ".list"):
        os.symlink(victim, base + ".tmp-" + str(pid))
    make_plugin(opp, "two", "PlantedTwo")  # a refresh: cache and textfile written again

    def two():
        return prom.exists() and 'name="two"' in prom.read_text()
    assert wait_for(two, 20), d.read_log()
    assert victim.read_text() == "precious\n"
    assert not os.path.islink(prom) and not os.path.islink(d.cache)


def test_the_textfile_may_not_be_the_daemons_cache_or_socket(opp, tmp_path):
    cache = tmp_path / "c.json"
    sock = tmp_path / "s.sock"
    for target, what in ((cache, "the cache"), (sock, "the socket")):
        p = subprocess.run([os.path.join(BIN, "ge-plugin-registryd"), "--foreground", "--opp-path", str(opp),
                            "--socket", str(sock), "--cache", str(cache), "--metrics-textfile", str(target)],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, p.stderr
        assert f"is {what} of this daemon" in p.stderr
    assert not cache.exists() and not sock.exists()


def test_prometheus_takes_no_filters_and_an_empty_format_is_refused(opp, tmp_path):
    make_plugin(opp, "one", "FilterOne")
    for extra in (["--status", "error"], ["--op", "FilterOne"]):
        p = run_ls("--opp-path", str(opp), "--format", "prometheus", *extra, env=env_for(tmp_path))
        assert p.returncode == 2 and "describes the whole registry" in p.stderr, p.stderr
    p = run_ls("--opp-path", str(opp), "--format", "", env=env_for(tmp_path))
    assert p.returncode == 2 and "unknown --format ''" in p.stderr


def test_an_output_that_cannot_be_written_is_a_failure(opp, tmp_path):
    make_plugin(opp, "one", "FullOne")
    tools = [[os.path.join(BIN, "ge-plugin-ls"), "--opp-path", str(opp), "--json", "--no-daemon"],
             [os.path.join(BIN, "ge-plugin-ls"), "--version"],
             [os.path.join(BIN, "ge-plugin-registryd"), "--version"],
             [os.path.join(BIN, "ge-run"), "--version"]]
    e = dict(os.environ, **env_for(tmp_path))
    for cmd in tools:
        with open("/dev/full", "w") as full:
            p = subprocess.run(cmd, stdout=full, stderr=subprocess.PIPE, text=True, env=e, timeout=60)
        assert p.returncode == 1, (cmd, p.stderr)
        assert "cannot write the output" in p.stderr, (cmd, p.stderr)


def test_absolute_paths_work_from_a_deleted_current_folder(opp, tmp_path):
    make_plugin(opp, "one", "GoneCwdOne")
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f"cd {gone} && rmdir {gone} && exec {os.path.join(BIN, 'ge-plugin-ls')} --no-daemon --json --opp-path {opp}"
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=dict(os.environ, **env_for(tmp_path)),
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert [pl["status"] for pl in json.loads(p.stdout)["plugins"]] == ["ok"]
    # a relative entry still needs the folder, and says so
    script = f"cd {gone.parent} && mkdir g2 && cd g2 && rmdir ../g2 && exec {os.path.join(BIN, 'ge-plugin-ls')} --no-daemon --opp-path rel"
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=dict(os.environ, **env_for(tmp_path)),
                       timeout=60)
    assert p.returncode == 2 and "current directory is unknown" in p.stderr, p.stderr


def test_a_scanner_that_cannot_start_is_not_cached_as_the_plugins_verdict(opp, tmp_path):
    make_plugin(opp, "one", "ScanFailOne")
    env = env_for(tmp_path)
    p = run_ls("--opp-path", str(opp), "--json", env=dict(env, GE_PLUGIN_SCAN=str(tmp_path / "no-scanner")))
    plugins = json.loads(p.stdout)["plugins"]
    assert [pl["status"] for pl in plugins] == ["error"] and "scanner" in plugins[0]["error"]
    # the scanner is back: the plugin is scanned again, not listed from the cache as broken
    p = run_ls("--opp-path", str(opp), "--json", env=env)
    j = json.loads(p.stdout)
    assert [pl["status"] for pl in j["plugins"]] == ["ok"], j


def test_check_warns_when_the_daemon_asked_for_does_not_answer(opp, tmp_path):
    make_plugin(opp, "one", "CheckSockOne")
    p = run_ls("--socket", str(tmp_path / "nobody.sock"), "--opp-path", str(opp),
               "--check", str(opp / "one.py"), env=env_for(tmp_path))
    assert "no daemon answers on" in p.stderr and "nobody.sock" in p.stderr, p.stderr
    assert p.stdout.strip().splitlines()[-1].startswith("no problems found"), p.stdout


def test_every_status_the_metrics_count_is_one_a_listing_can_filter_on(opp, tmp_path):
    make_plugin(opp, "one", "StatusSetOne")
    p = run_ls("--opp-path", str(opp), "--format", "prometheus", env=env_for(tmp_path))
    assert p.returncode == 0, p.stderr
    statuses = {line.split('status="')[1].split('"')[0] for line in p.stdout.splitlines()
                if line.startswith("ge_plugin_registry_plugins{")}
    assert "ok" in statuses and "crashed" in statuses
    for s in sorted(statuses):
        q = run_ls("--opp-path", str(opp), "--status", s, env=env_for(tmp_path))
        assert q.returncode in (0, 1), (s, q.stderr)  # 1: nothing matched; 2 would be an unknown status
