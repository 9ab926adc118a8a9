"""ge._loader in a plain python3: the plugin stdout/stderr stream, pyproject.toml
metadata and the extension guard's message (the host calls these from C++)."""
import io
import sys
import types

import pytest

from ge import _loader


@pytest.fixture
def log(monkeypatch):
    """Replaces _ge_native._log_line for _loader; returns the recorded lines."""
    lines = []
    fake = types.SimpleNamespace(_log_line=lambda plugin, is_stderr, text: lines.append((plugin, is_stderr, text)))
    monkeypatch.setattr(_loader, "_ge_native", fake)
    return lines


def stream(is_stderr=False):
    return _loader._PluginStream("plug", is_stderr)


# ---- _PluginStream -------------------------------------------------------------------------

def test_write_logs_complete_lines_and_flush_the_rest(log):
    s = stream()
    assert s.write("a\nb") == 3
    assert log == [("plug", False, "a")]
    s.flush()
    assert log == [("plug", False, "a"), ("plug", False, "b")]


def test_stderr_lines_are_tagged_as_stderr(log):
    s = stream(is_stderr=True)
    s.write("oops\n")
    assert log == [("plug", True, "oops")]


def test_write_refuses_bytes(log):
    with pytest.raises(TypeError, match="must be str, not bytes"):
        stream().write(b"x")


def test_writelines(log):
    s = stream()
    s.writelines(["one\n", "two", "\n", "three"])
    assert log == [("plug", False, "one"), ("plug", False, "two")]
    s.flush()
    assert log[-1] == ("plug", False, "three")


def test_buffer_write_decodes_utf8_into_the_same_log(log):
    s = stream()
    data = "héllo\n".encode()
    assert s.buffer.write(data) == len(data)
    assert s.buffer.write(bytearray(b"x")) == 1
    assert s.buffer.write(memoryview(b"y\n")) == 2
    assert log == [("plug", False, "héllo"), ("plug", False, "xy")]


def test_buffer_write_backslash_escapes_invalid_utf8(log):
    s = stream()
    s.buffer.write(b"bad \xff byte\n")
    assert log == [("plug", False, "bad \\xff byte")]


def test_buffer_flush_flushes_the_stream(log):
    s = stream()
    s.buffer.write(b"partial")
    assert log == []
    s.buffer.flush()
    assert log == [("plug", False, "partial")]


def test_buffer_write_refuses_str(log):
    with pytest.raises(TypeError, match="bytes-like object is required, not 'str'"):
        stream().buffer.write("text")
    with pytest.raises(TypeError, match="bytes-like object is required, not 'int'"):
        stream().buffer.write(3)


def test_buffer_surface(log):
    b = stream().buffer
    b.writelines([b"a", b"b\n"])
    assert log == [("plug", False, "ab")]
    assert b.writable() and not b.readable() and not b.seekable() and not b.isatty()
    assert b.closed is False
    with pytest.raises(io.UnsupportedOperation):
        b.fileno()


def test_close_is_a_flushing_no_op_and_the_stream_stays_usable(log):
    s = stream()
    s.write("pending")
    assert s.close() is None
    assert log == [("plug", False, "pending")]
    assert s.closed is False
    s.write("after close\n")
    assert log[-1] == ("plug", False, "after close")
    s.buffer.close()
    assert s.closed is False


def test_with_statement_does_not_close(log):
    s = stream()
    with s as inner:
        assert inner is s
        print("inside", file=s)
    assert s.closed is False
    print("after", file=s)
    assert log == [("plug", False, "inside"), ("plug", False, "after")]


def test_name_mode_encoding_errors():
    out, err = stream(), stream(is_stderr=True)
    assert out.name == "<ge-plugin stdout>"
    assert err.name == "<ge-plugin stderr>"
    assert out.mode == "w" and err.mode == "w"
    assert out.encoding == "utf-8" and out.errors == "backslashreplace"


def test_fileno_raises_unsupported_operation():
    with pytest.raises(io.UnsupportedOperation):
        stream().fileno()
    # io.UnsupportedOperation is an OSError and a ValueError: code that probes
    # fileno() with either except clause keeps working.
    with pytest.raises(OSError):
        stream().fileno()
    with pytest.raises(ValueError):
        stream().fileno()


def test_stream_predicates():
    s = stream()
    assert s.seekable() is False
    assert s.isatty() is False
    assert s.writable() is True
    assert s.readable() is False


def test_print_and_traceback_module_work_with_the_stream(log):
    import traceback
    s = stream(is_stderr=True)
    try:
        raise ValueError("boom")
    except ValueError:
        traceback.print_exc(file=s)
    assert log[-1] == ("plug", True, "ValueError: boom")


# ---- read_metadata -------------------------------------------------------------------------

def write_pkg(tmp_path, toml):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "pyproject.toml").write_text(toml)
    return str(pkg)


def test_metadata_reads_project_and_isolation(tmp_path):
    pkg = write_pkg(tmp_path, '[project]\nname = "p"\nversion = "1.2"\n\n[tool.ge-plugin]\nisolation = "main"\n')
    meta = _loader.read_metadata(pkg, True)
    assert (meta["name"], meta["version"], meta["isolation"]) == ("p", "1.2", "main")


def test_single_file_has_default_metadata(tmp_path):
    f = tmp_path / "one.py"
    f.write_text("")
    meta = _loader.read_metadata(str(f), False)
    assert (meta["name"], meta["isolation"], meta["pyproject"]) == ("one", "subinterpreter", "")


@pytest.mark.parametrize("table", ["ge_plugin", "ge-plugins", "geplugin", "ge"])
def test_misspelled_tool_table_is_rejected(tmp_path, table):
    pkg = write_pkg(tmp_path, f'[tool.{table}]\nisolation = "main"\n')
    with pytest.raises(ValueError) as info:
        _loader.read_metadata(pkg, True)
    message = str(info.value)
    assert message.startswith(pkg + "/pyproject.toml: ")
    assert f"[tool.{table}]" in message and "[tool.ge-plugin]" in message


def test_a_commented_out_isolation_line_is_a_comment(tmp_path):
    pkg = write_pkg(tmp_path, '[tool.ge-plugin]\n# isolation = "main"\n')
    meta = _loader.read_metadata(pkg, True)
    assert (meta["isolation"], meta["isolation_set"]) == ("subinterpreter", False)


def test_isolation_in_a_string_elsewhere_is_not_read(tmp_path):
    pkg = write_pkg(tmp_path, '[project]\ndescription = \'isolation = "main"\'\n')
    meta = _loader.read_metadata(pkg, True)
    assert (meta["isolation"], meta["description"]) == ("subinterpreter", 'isolation = "main"')


@pytest.mark.parametrize("toml, where, what", [
    ('[project]\nname = "p"\nversion = = "1"\n', "3:11", "Invalid value"),
    ('[tool.ge-plugin\nisolation = "main"\n', "1:16", "Expected ']'"),
    ('[project]\nname = "p', "2", "Unterminated string (at the end of the file)"),
])
def test_invalid_toml_names_the_file_and_line(tmp_path, toml, where, what):
    pkg = write_pkg(tmp_path, toml)
    with pytest.raises(ValueError) as info:
        _loader.read_metadata(pkg, True)
    message = str(info.value)
    assert message.startswith(f"{pkg}/pyproject.toml:{where}: invalid TOML: "), message
    assert what in message


@pytest.mark.parametrize("toml, field", [
    ('[tool.ge-plugin]\nisolation = 1\n', "tool.ge-plugin.isolation must be a string"),
    ('[tool.ge-plugin]\nisolation = ["main"]\n', "tool.ge-plugin.isolation must be a string"),
    ('[tool]\nge-plugin = "main"\n', "[tool.ge-plugin] must be a table"),
    ('tool = 3\n', "[tool] must be a table"),
    ('[project]\nversion = 1.2\n', "project.version must be a string"),
    ('project = "p"\n', "[project] must be a table"),
])
def test_wrong_types_name_the_file_and_field(tmp_path, toml, field):
    pkg = write_pkg(tmp_path, toml)
    with pytest.raises(ValueError) as info:
        _loader.read_metadata(pkg, True)
    assert str(info.value).startswith(f"{pkg}/pyproject.toml: {field}"), str(info.value)


def test_other_tools_are_ignored(tmp_path):
    pkg = write_pkg(tmp_path, '[tool.black]\nline-length = 100\n\n[tool.ge-plugin]\nisolation = "main"\n')
    assert _loader.read_metadata(pkg, True)["isolation"] == "main"


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_byte_order_mark_is_skipped_as_pip_does(tmp_path, newline):
    """Some Windows editors save pyproject.toml with a UTF-8 BOM (and CRLF)."""
    text = newline.join(['[project]', 'name = "p"', 'version = "2.0"', '', '[tool.ge-plugin]', 'isolation = "main"', ''])
    pkg = write_pkg(tmp_path, "")
    with open(pkg + "/pyproject.toml", "wb") as f:
        f.write(b"\xef\xbb\xbf" + text.encode())
    meta = _loader.read_metadata(pkg, True)
    assert (meta["version"], meta["isolation"]) == ("2.0", "main")


def test_a_pyproject_that_is_not_utf8_names_the_file_and_byte(tmp_path):
    pkg = write_pkg(tmp_path, "")
    with open(pkg + "/pyproject.toml", "wb") as f:
        f.write(b'[project]\nname = "\xff"\n')
    with pytest.raises(ValueError) as info:
        _loader.read_metadata(pkg, True)
    assert str(info.value).startswith(pkg + "/pyproject.toml: cannot read pyproject.toml: not UTF-8")
    assert "at byte 18" in str(info.value)


def test_bad_isolation_message(tmp_path):
    pkg = write_pkg(tmp_path, '[tool.ge-plugin]\nisolation = "threads"\n')
    with pytest.raises(ValueError) as info:
        _loader.read_metadata(pkg, True)
    assert str(info.value) == (
        f"{pkg}/pyproject.toml: tool.ge-plugin.isolation: got 'threads', supported: subinterpreter, main, process")


def test_a_misspelt_isolation_gets_a_suggestion(tmp_path):
    pkg = write_pkg(tmp_path, '[tool.ge-plugin]\nisolation = "proccess"\n')
    with pytest.raises(ValueError) as info:
        _loader.read_metadata(pkg, True)
    assert str(info.value).endswith("supported: subinterpreter, main, process (did you mean 'process'?)")


# ---- extension guard -----------------------------------------------------------------------

@pytest.fixture
def guard(monkeypatch):
    """Installs the guard on a restorable ExtensionFileLoader.create_module; returns
    a function that runs it on an extension module from outside the stdlib."""
    loader = _loader._bootstrap_external.ExtensionFileLoader
    monkeypatch.setattr(loader, "create_module", lambda self, spec: pytest.fail("guard let it through"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    monkeypatch.setattr(sys, "stderr", sys.stderr)

    def run():
        spec = types.SimpleNamespace(name="fakeext", origin="/opt/site-packages/fakeext.so")
        with pytest.raises(ImportError) as info:
            loader.create_module(None, spec)
        assert _loader.refused_extensions() == ["fakeext"]
        return str(info.value)

    return run


def test_guard_message_for_a_package_names_its_pyproject(guard):
    _loader.prepare("pkg_plugin", True, True)
    message = guard()
    assert "plugin 'pkg_plugin'" in message and "fakeext" in message
    assert 'isolation = "main"' in message and "pyproject.toml" in message
    assert "single-file" not in message


def test_guard_message_defaults_to_package_for_two_positional_args(guard):
    _loader.prepare("pkg_plugin", True)
    assert "single-file" not in guard()


def test_guard_message_for_a_single_file_says_to_make_a_package(guard):
    _loader.prepare("one_file", True, False)
    message = guard()
    assert "plugin 'one_file'" in message
    assert "single-file plugin" in message
    assert "package (a folder 'one_file/' with the code in __init__.py)" in message
    assert 'isolation = "main"' in message


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_a_pyproject_that_is_not_a_regular_file_is_refused_without_reading(tmp_path, kind):
    import os
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    pp = pkg / "pyproject.toml"
    if kind == "fifo":
        os.mkfifo(pp)
    elif kind == "dev-zero":
        pp.symlink_to("/dev/zero")
    else:
        pp.mkdir()
    with pytest.raises(ValueError) as info:
        _loader.read_metadata(str(pkg), True)
    assert str(info.value) == f"{pp}: cannot read pyproject.toml: not a regular file"
