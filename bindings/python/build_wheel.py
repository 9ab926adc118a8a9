#!/usr/bin/python3
"""Writes the `ge` wheel (PEP 427) with the standard library's zipfile.

Used by the CMake target ge-wheel (`make wheel`); see pyproject.toml beside
this file and share/docs/plugin-authors.md, "Installing ge with pip".

The wheel holds the pure-Python ``ge`` package (stubs and py.typed included),
the platform configs ge.testing reads (``ge/share/platform``), the
``_ge_native`` extension linked with RUNPATH ``$ORIGIN/ge_plugin.libs``, and
in ``ge_plugin.libs/`` the project's own library it needs
(libge_plugin_framework). Debian's libraries (Boost.Python and
Boost.Filesystem 1.74, spdlog 1.10, fmt) are not bundled: the wheel is for
Debian 12's /usr/bin/python3 (tag cp311-cp311-linux_x86_64), where they come
with the Debian packages the host needs.

Why not setuptools/python3-build: the extension is built by CMake with the
rest of the project, and setuptools' bdist_wheel would have to be told that a
prebuilt binary makes the wheel platform-specific, and python3-build needs
--no-isolation without PyPI; a wheel is a zip with three metadata files,
which this writes deterministically (fixed timestamps, sorted entries).

Usage: build_wheel.py --pyproject F --package-dir D --platform-dir D
                      --extension F --library F --library-soname NAME
                      --version V --out-dir D
Prints the wheel's path. Exit status 1 with a message naming the file on bad
input (version mismatch, missing file, invalid pyproject.toml).
"""
import argparse
import base64
import hashlib
import os
import re
import sys
import sysconfig
import tomllib
import zipfile

LIBS_DIR = "ge_plugin.libs"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # zip's earliest date: reproducible archives


def fail(message):
    print(f"build_wheel.py: {message}", file=sys.stderr)
    sys.exit(1)


def read_project(path):
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        fail(f"{path}: {e}")
    project = data.get("project")
    if not isinstance(project, dict):
        fail(f"{path}: no [project] table")
    for key in ("name", "description", "requires-python"):
        if not isinstance(project.get(key), str):
            fail(f"{path}: project.{key} must be a string")
    return project


def package_version(package_dir):
    """ge.__version__ as written in ge/__init__.py (read, not imported)."""
    init = os.path.join(package_dir, "__init__.py")
    with open(init, encoding="utf-8") as f:
        m = re.search(r'^__version__\s*=\s*"([^"]+)"', f.read(), re.M)
    if not m:
        fail(f"{init}: no __version__ = \"...\" line")
    return m.group(1)


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"sha256={digest}"


class Wheel:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.records = []

    def add(self, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, date_time=_EPOCH)
        info.external_attr = (0o100000 | mode) << 16  # a regular file with `mode`
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        self.records.append(f"{arcname},{record_hash(data)},{len(data)}")

    def add_file(self, arcname, path, mode=0o644):
        with open(path, "rb") as f:
            self.add(arcname, f.read(), mode)

    def close(self, record_name):
        text = "\n".join(self.records + [f"{record_name},,"]) + "\n"
        info = zipfile.ZipInfo(record_name, date_time=_EPOCH)
        info.external_attr = (0o100644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, text.encode())
        self.zip.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for opt in ("--pyproject", "--package-dir", "--platform-dir", "--extension", "--library", "--library-soname",
                "--version", "--out-dir"):
        ap.add_argument(opt, required=True)
    a = ap.parse_args(argv)
    project = read_project(a.pyproject)
    if package_version(a.package_dir) != a.version:
        fail(f"{a.package_dir}/__init__.py: __version__ {package_version(a.package_dir)!r} is not the "
             f"project's version {a.version!r} (CMakeLists.txt, project(... VERSION))")
    for path in (a.extension, a.library):
        if not os.path.isfile(path):
            fail(f"{path}: not built")

    dist = re.sub(r"[-_.]+", "_", project["name"]).lower()  # PEP 427 escaping
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tag = f"{py}-{py}-{platform}"
    os.makedirs(a.out_dir, exist_ok=True)
    out = os.path.join(a.out_dir, f"{dist}-{a.version}-{tag}.whl")
    tmp = out + ".tmp"
    wheel = Wheel(tmp)

    # The package, sorted, without caches.
    for root, dirs, files in os.walk(a.package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, os.path.dirname(os.path.abspath(a.package_dir)))
            wheel.add_file(rel.replace(os.sep, "/"), path)
    for name in sorted(os.listdir(a.platform_dir)):
        if name.endswith(".ini"):
            wheel.add_file(f"ge/share/platform/{name}", os.path.join(a.platform_dir, name))
    wheel.add_file(os.path.basename(a.extension), a.extension, 0o755)
    wheel.add_file(f"{LIBS_DIR}/{a.library_soname}", a.library, 0o755)

    info = f"{dist}-{a.version}.dist-info"
    meta = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {a.version}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
    ]
    meta += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    wheel.add(f"{info}/METADATA", ("\n".join(meta) + "\n").encode())
    wheel.add(f"{info}/WHEEL", (
        "Wheel-Version: 1.0\n"
        "Generator: ge-plugin build_wheel.py\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n").encode())
    wheel.add(f"{info}/top_level.txt", b"_ge_native\nge\n")
    wheel.close(f"{info}/RECORD")
    os.replace(tmp, out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
