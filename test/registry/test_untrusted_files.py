"""Files the registry tools read are untrusted input (share/docs/registry.md,
"Cache"): a cache record with a field of the wrong type, a plugin error text that
looks like a location, a cache that is huge or not a regular file, an edited
listing index. Each is refused with a warning and rebuilt; none is fatal."""
import json
import os
import re

import pytest

from registry_helpers import make_plugin, run_ls, statuses

# The listing index's header as this build writes it (registry/cache_write.cc, kListHeader).
_SOURCE = os.environ.get("GE_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
INDEX_HEADER = re.search(r'kListHeader\[\] = "([^"]+)"',
                         open(os.path.join(_SOURCE, "registry", "cache_write.cc")).read()).group(1)
INDEX_VERSION = int(INDEX_HEADER.rsplit(" ", 1)[1])


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


def index_checksum(lines):
    """The listing index's checksum (registry/cache_write.cc, IndexChecksum): over the lines, each with its
    newline, as 8-byte little-endian words (the last padded with zero bytes), h = (h ^ w) * FNV prime,
    h ^= h >> 29, from FNV-1a 64's offset basis; then the same step over the byte count."""
    data = b"".join((line + "\n").encode("utf-8", "surrogateescape") for line in lines)
    mask = 0xFFFFFFFFFFFFFFFF
    h = 14695981039346656037  # FNV-1a 64 offset basis

    def step(h, w):
        h = ((h ^ w) * 0x100000001b3) & mask
        return h ^ (h >> 29)
    for k in range(0, len(data), 8):
        h = step(h, int.from_bytes(data[k:k + 8].ljust(8, b"\0"), "little"))
    return f"{step(h, len(data)):016x}"


# (edit, whether the checksum is made to match again): with a matching
# checksum each edit must be caught by its own rule (the J line's shape check,
# the P lines' stamps and count, the header's version); without, by the checksum.
@pytest.mark.parametrize("edit,resum", [
    ("summary not json", True), ("status wrong type", True), ("path of another", True), ("name of another", True),
    ("extra field", True),
    ("summaries reordered", True), ("summary dropped", True), ("stamp not a number", True), ("P line dropped", True),
    ("J line dropped", True), ("older version header", True), ("status edited", False), ("op renamed", False)])
def test_an_edited_listing_index_is_not_passed_through(opp, tmp_path, edit, resum):
    make_plugin(opp, "p1", "UtP1")
    make_plugin(opp, "p2", "UtP2")
    env, cache, _ = first_cache(opp, tmp_path)
    index = cache + ".list"
    assert json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)["source"] == "cache"
    lines = open(index).read().splitlines()
    # the index: header, C, O, P (path, mtime_ns, ctime_ns, size, files, inodes) per plugin, J, S
    assert lines[0] == INDEX_HEADER and lines[-1].startswith("S\t") and lines[-2].startswith("J\t")
    i = next(k for k, line in enumerate(lines) if line.startswith("P\t"))
    summaries = json.loads(lines[-2][2:])
    if edit == "summary not json":
        lines[-2] = lines[-2][:-3] + "]]]"
    elif edit == "status wrong type":
        summaries[0]["status"] = 1
    elif edit == "path of another":
        summaries[0]["path"] = summaries[0]["path"].replace("p1", "p2")
    elif edit == "name of another":
        summaries[0]["name"] = "p2"
    elif edit == "extra field":
        summaries[0]["injected"] = True
    elif edit == "summaries reordered":
        summaries.reverse()
    elif edit == "summary dropped":
        summaries.pop()
    elif edit == "status edited":
        summaries[0]["status"] = "crashed"
    elif edit == "op renamed":
        summaries[0]["ops"][0]["op_type"] = "Evil"
    elif edit == "stamp not a number":
        fields = lines[i].split("\t")
        fields[2] = "12x"
        lines[i] = "\t".join(fields)
    elif edit == "P line dropped":
        del lines[i]
    elif edit == "J line dropped":
        del lines[-2]
    elif edit == "older version header":  # a foreign version, however well-formed the rest: not read
        lines[0] = f"ge-plugin-list {INDEX_VERSION - 1}"
        summaries[0]["status"] = "crashed"
    if edit not in ("summary not json", "J line dropped") and lines[-2].startswith("J\t"):
        lines[-2] = "J\t" + json.dumps(summaries, separators=(",", ":"))
    if resum:
        lines[-1] = "S\t" + index_checksum([line for line in lines if line[:2] in ("P\t", "J\t")])
    open(index, "w").write("\n".join(lines) + "\n")
    edited = os.stat(index).st_ino
    p = run_ls("--opp-path", str(opp), "--json", env=env)
    assert p.returncode == 0, p.stderr
    # Not passed through: the listing came from the cache, which wrote a new
    # index (the fast path never writes one).
    assert os.stat(index).st_ino != edited
    out = json.loads(p.stdout)  # valid JSON whatever the edit
    assert statuses(out["plugins"]) == {"p1": "ok", "p2": "ok"}
    assert [op["op_type"] for pl in out["plugins"] for op in pl["ops"]] == ["UtP1", "UtP2"]
    assert all(set(pl) == {"name", "path", "kind", "prototypes", "version", "isolation", "status", "error", "ops",
                             "unprototyped"}
               for pl in out["plugins"])


def test_an_index_whose_summary_names_another_plugin_is_not_believed(opp, tmp_path):
    """The J line's summaries are matched to discovery by name as well as by
    path: a summary at p1's path calling itself "evil" (checksum made to match)
    is not passed through; the listing names each plugin as discovered."""
    make_plugin(opp, "p1", "UtP1")
    env, cache, _ = first_cache(opp, tmp_path)
    index = cache + ".list"
    lines = open(index).read().splitlines()
    summaries = json.loads(lines[-2][2:])
    assert summaries[0]["name"] == "p1"
    summaries[0]["name"] = "evil"
    lines[-2] = "J\t" + json.dumps(summaries, separators=(",", ":"))
    lines[-1] = "S\t" + index_checksum([line for line in lines if line[:2] in ("P\t", "J\t")])
    open(index, "w").write("\n".join(lines) + "\n")
    edited = os.stat(index).st_ino
    p = run_ls("--opp-path", str(opp), "--json", env=env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["source"] == "cache" and [pl["name"] for pl in out["plugins"]] == ["p1"]
    assert os.stat(index).st_ino != edited  # rebuilt from the cache, not passed through
    assert "evil" not in open(index).read()


def test_an_index_whose_checksum_is_made_to_match_is_passed_through(opp, tmp_path):
    """The counterpart of the edits above: the same rewrite, with nothing
    edited, keeps the index in use (so each edit above is caught by its rule,
    not by the rewrite itself)."""
    make_plugin(opp, "p1", "UtP1")
    env, cache, _ = first_cache(opp, tmp_path)
    index = cache + ".list"
    lines = open(index).read().splitlines()
    cache_stat = os.stat(cache)
    lines[-2] = "J\t" + json.dumps(json.loads(lines[-2][2:]), separators=(",", ":"))
    lines[-1] = "S\t" + index_checksum([line for line in lines if line[:2] in ("P\t", "J\t")])
    open(index, "w").write("\n".join(lines) + "\n")
    rewritten = os.stat(index).st_ino
    out = json.loads(run_ls("--opp-path", str(opp), "--json", env=env).stdout)
    assert out["source"] == "cache" and statuses(out["plugins"]) == {"p1": "ok"}
    assert os.stat(index).st_ino == rewritten  # read, not replaced: the fast path
    assert os.stat(cache).st_mtime_ns == cache_stat.st_mtime_ns


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
