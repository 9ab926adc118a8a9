"""Helpers shared by the registry tests and the benchmark."""
import json
import os
import socket
import subprocess
import time

BIN = os.environ.get("GE_REGISTRY_BIN") or os.path.dirname(os.environ.get("GE_RUN", "build/bin/ge-run"))

PLUGIN = '''"""{doc}"""
from ge.custom_op import register_op, register_op_impl
from ge.runtime import Tensor, TensorDesc
{pre}
__version__ = "{version}"


@register_op(op_type="{op}")
def proto(x: TensorDesc, *, alpha: int = 1) -> TensorDesc:
    return x


@register_op_impl(op_type="{op}")
class Impl:
    def execute(self, x: Tensor, *, alpha: int) -> None:
        pass
'''


def make_plugin(folder, name, op, version="1.0", pre="", doc=None, body=None):
    path = os.path.join(str(folder), name + ".py")
    text = body if body is not None else PLUGIN.format(doc=doc or f"Plugin {name}.", pre=pre, version=version, op=op)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)
    return path


def wait_for(pred, timeout, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


class Client:
    def __init__(self, path, hello=True, timeout=30):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.f = self.s.makefile("rb")
        if hello:
            r = self.request({"cmd": "hello", "protocol": 1})
            assert r["ok"], r

    def send_raw(self, data: bytes):
        self.s.sendall(data)

    def read(self):
        line = self.f.readline()
        return json.loads(line) if line else None

    def request(self, req):
        self.send_raw((json.dumps(req) + "\n").encode())
        return self.read()

    def close(self):
        self.f.close()
        self.s.close()


def run_ls(*args, env=None, timeout=60):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([os.path.join(BIN, "ge-plugin-ls"), *args], capture_output=True, text=True, env=e,
                          timeout=timeout)


def statuses(plugins):
    return {p["name"]: p["status"] for p in plugins}


def make_opp_root(root, libs, layout="op_graph"):
    """An opp root holding copies of the named test op libraries (built into
    <build>/test-oplib, test/oplib/README.md) in ``<root>/<layout>/lib/linux/<arch>/``."""
    import platform
    import shutil
    folder = os.path.join(str(root), layout, "lib", "linux", platform.machine())
    os.makedirs(folder, exist_ok=True)
    for lib in libs:
        shutil.copy(os.path.join(BIN, "..", "test-oplib", lib), os.path.join(folder, lib))
    for d, _, files in os.walk(str(root)):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o755)
    return folder
