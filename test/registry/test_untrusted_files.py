"""Files the registry tools read are untrusted input (share/docs/registry.md,
"Cache"): a cache record with a field of the wrong type, a plugin error text that
looks like a location, a cache that is huge or not a regular file, an edited
listing index. Each is refused with a warning and rebuilt; none is fatal."""
import json
import os

import pytest

from registry_helpers import make_plugin, run_ls, statuses


def env_for(tmp_path):
    return {"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "c" / "registry.json"),
            "GE_PLUGIN_REGISTRY_SOCKET": str(tmp_path / "none.sock")}


def first_cache(opp, tmp_path):
    """Scan once so a valid cache exists; returns (env, cache path, its JSON)."""
    env = env_for(tmp_path)
    p = run_ls("--opp-path", str(opp), "--json", env=env)
    assert p.returncode == 0, p.stderr
    cache = env["GE_PLUGIN_REGISTRY_CACHE"]
    return env, cache, json.load(open(cache))


# (field path, bad value): each makes a record invalid; the stamp ones used to
# abort ge-plugin-ls and the daemon with an uncaught nlohmann type_error.
BAD_FIELDS = [
    (("stamp", "mtime_ns"), "x"),
    (("stamp", "size"), -1),
    (("stamp", "hash"), 7),
    (("stamp",), []),
    (("status",), "sideways"),
    (("status",), 3),
    (("name",), {"a": 1}),
    (("version",), 1.5),
    (("error_line",), "12"),
    (("ops",), {"op_type": "X"}),
    (("ops", 0, "op_type"), None),
    (("ops", 0, "capabilities"), "eager_execute"),
    (("ops", 0, "capabilities", 0), 1),
    (("path",), ""),
    (("isolation",), "bogus"),
    (("error_line",), -3),
    (("stamp", "mtime_ns"), 2**64 - 1),
]


def set_path(record, path, value):
    target = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


@pytest.mark.parametrize("field,value", BAD_FIELDS, ids=lambda v: str(v))
def test_a_record_with_a_bad_field_makes_ls_rebuild_the_cache(opp, tmp_path, field, value):
    make_plugin(opp, "p1", "UtP1")
    env, cache, j = first_cache(opp, tmp_path)
    set_path(j["plugins"][0], field, value)
    json.dump(j, open(cache, "w"))
    os.remove(cache + ".list")  # the index would be stale anyway (the cache changed)
    p = run_ls("--opp-path", str(opp), "--json", env=env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["source"] == "scan" and statuses(out["plugins"]) == {"p1": "ok"}
    assert "is malformed: plugins[0]" in p.stderr and "scanning" in p.stderr, p.stderr
    assert field[0] in p.stderr
    # The rebuilt cache is valid again.
    assert json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)["source"] == "cache"


def test_the_field_report_record_does_not_crash_ls_or_the_daemon(opp, tmp_path, daemon_factory):
    """{"path": <a plugin>, "status": "ok", "stamp": {"mtime_ns": "x"}}, as reported."""
    make_plugin(opp, "p1", "UtP1")
    d = daemon_factory(opp).start()
    assert d.stop() == 0
    j = json.load(open(d.cache))
    j["plugins"] = [{"path": j["plugins"][0]["path"], "status": "ok", "stamp": {"mtime_ns": "x"}}]
    json.dump(j, open(d.cache, "w"))
    d.start()
    assert statuses(d.client().request({"cmd": "list"})["plugins"]) == {"p1": "ok"}
    assert "rebuilding" in d.read_log() and "stamp: field 'mtime_ns' must be an integer" in d.read_log()
    assert d.stop() == 0
    json.dump(j, open(d.cache, "w"))
    p = run_ls("--opp-path", str(opp), "--json", "--no-daemon", "--cache", d.cache)
    assert p.returncode == 0, p.stderr
    assert "stamp: field 'mtime_ns' must be an integer" in p.stderr


@pytest.mark.parametrize("text", ["boom (at /x/y.py:99999999999)", "boom (at /x/y.py:0)",
                                  "/x/y.py:99999999999999999999999: boom"])
def test_error_text_that_looks_like_a_location_is_reported_as_is(opp, tmp_path, text):
    """The plugin's own error is kept (not replaced by "scanner: stoi"), and
    --check exits 1 with it, no abort."""
    (opp / "liar.py").write_text(f"raise ValueError({text!r})\n")
    p = run_ls("--check", str(opp / "liar.py"), "--json", env=env_for(tmp_path))
    assert p.returncode == 1, (p.returncode, p.stderr)
    report = json.loads(p.stdout)
    error = json.dumps(report)
    assert "boom" in error and "stoi" not in error, error
    p = run_ls("--check", str(opp / "liar.py"), env=env_for(tmp_path))
    assert p.returncode == 1 and "boom" in p.stdout + p.stderr


def test_a_cache_that_is_not_a_regular_file_is_refused_without_reading_it(opp, tmp_path):
    make_plugin(opp, "p1", "UtP1")
    cache = tmp_path / "zero.json"
    cache.symlink_to("/dev/zero")
    p = run_ls("--opp-path", str(opp), "--json", "--no-daemon", "--cache", str(cache), timeout=60)
    assert p.returncode == 0, p.stderr
    assert "is not a regular file" in p.stderr, p.stderr
    assert statuses(json.loads(p.stdout)["plugins"]) == {"p1": "ok"}


def test_a_cache_over_the_size_cap_is_refused_without_reading_it(opp, tmp_path):
    make_plugin(opp, "p1", "UtP1")
    cache = tmp_path / "huge.json"
    with open(cache, "wb") as f:
        f.truncate(65 << 20)  # sparse: 65 MiB declared, nothing to read
    p = run_ls("--opp-path", str(opp), "--json", "--no-daemon", "--cache", str(cache), timeout=60)
    assert p.returncode == 0, p.stderr
    assert "more than the 67108864 a registry file may be" in p.stderr, p.stderr


@pytest.mark.parametrize("edit", ["summary not json", "status wrong type", "path of another", "extra field",
                                  "stamp not a number", "status edited", "op renamed", "line dropped"])
def test_an_edited_listing_index_is_not_passed_through(opp, tmp_path, edit):
    make_plugin(opp, "p1", "UtP1")
    make_plugin(opp, "p2", "UtP2")
    env, cache, _ = first_cache(opp, tmp_path)
    index = cache + ".list"
    lines = open(index).read().splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("P\t"))
    # P, path, mtime_ns, ctime_ns, size, files, inodes, summary (index version 4)
    fields = lines[i].split("\t", 7)
    summary = json.loads(fields[7])
    if edit == "summary not json":
        fields[7] = fields[7][:-3] + "]]]"
    elif edit == "status wrong type":
        summary["status"] = 1
        fields[7] = json.dumps(summary)
    elif edit == "path of another":
        summary["path"] = summary["path"].replace("p1", "p2")
        fields[7] = json.dumps(summary)
    elif edit == "extra field":
        summary["injected"] = True
        fields[7] = json.dumps(summary)
    elif edit == "status edited":
        summary["status"] = "crashed"
        fields[7] = json.dumps(summary)
    elif edit == "op renamed":
        summary["ops"][0]["op_type"] = "Evil"
        fields[7] = json.dumps(summary)
    elif edit == "line dropped":
        fields = None
    else:
        fields[2] = "12x"
    if fields is None:
        del lines[i]
    else:
        lines[i] = "\t".join(fields)
    open(index, "w").write("\n".join(lines) + "\n")
    p = run_ls("--opp-path", str(opp), "--json", env=env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)  # valid JSON whatever the edit
    assert statuses(out["plugins"]) == {"p1": "ok", "p2": "ok"}
    assert [op["op_type"] for pl in out["plugins"] for op in pl["ops"]] == ["UtP1", "UtP2"]
    assert all(set(pl) == {"name", "path", "kind", "prototypes", "version", "isolation", "status", "error", "ops"}
               for pl in out["plugins"])


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_package_with_an_odd_pyproject_fails_alone(opp, tmp_path, kind):
    """A pyproject.toml that is a directory or a FIFO fails its own plugin only:
    the scanner neither aborts nor blocks, and the other plugins stay ok."""
    for i in range(4):
        make_plugin(opp, f"good{i}", f"UtGood{i}")
    pkg = opp / "odd"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    if kind == "directory":
        (pkg / "pyproject.toml").mkdir()
    else:
        os.mkfifo(pkg / "pyproject.toml")
    p = run_ls("--opp-path", str(opp), "--json", "--no-daemon", env=env_for(tmp_path), timeout=60)
    assert p.returncode == 0, p.stderr
    got = {pl["name"]: pl for pl in json.loads(p.stdout)["plugins"]}
    assert all(got[f"good{i}"]["status"] == "ok" for i in range(4)), got
    assert got["odd"]["status"] == "error" and "not a regular file" in got["odd"]["error"], got["odd"]


def test_check_uses_the_cache_it_is_given_for_conflicts(opp, tmp_path):
    make_plugin(opp, "installed", "UtClash")
    cache = str(tmp_path / "given.json")
    assert run_ls("--opp-path", str(opp), "--json", "--no-daemon", "--cache", cache).returncode == 0
    other = tmp_path / "other"
    other.mkdir()
    make_plugin(other, "newcomer", "UtClash")
    p = run_ls("--check", str(other / "newcomer.py"), "--opp-path", str(opp), "--cache", cache,
               env={"GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "elsewhere.json")})
    assert p.returncode == 1 and "op_type 'UtClash' is also defined by" in p.stdout + p.stderr, p.stdout + p.stderr


def test_ls_warns_when_the_socket_from_the_environment_is_unusable(opp, tmp_path):
    make_plugin(opp, "p1", "UtP1")
    long_sock = str(tmp_path / ("s" * 120))
    p = run_ls("--opp-path", str(opp), "--json", env={"GE_PLUGIN_REGISTRY_SOCKET": long_sock,
                                                      "GE_PLUGIN_REGISTRY_CACHE": str(tmp_path / "c.json")})
    assert p.returncode == 0, p.stderr
    assert "bytes long" in p.stderr and "listing without the daemon" in p.stderr
