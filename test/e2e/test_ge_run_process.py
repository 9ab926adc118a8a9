"""The process belongs to the engine (share/docs/plugin-authors.md, "The process
belongs to the engine"): plugins cannot take over signals, hang the exit, move
where ge-run writes, or crash it without being named.

Each test writes its plugins into a temporary opp folder next to the samples.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from e2e_helpers import f32, node

MAIN_TOML = '[tool.ge-plugin]\nisolation = "main"\n'


def write_plugin(folder, name, code, isolation=None):
    """A single-file plugin (isolation None) or a package with that isolation."""
    folder.mkdir(parents=True, exist_ok=True)
    if isolation is None:
        path = folder / f"{name}.py"
        path.write_text(textwrap.dedent(code))
        return path
    pkg = folder / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(code))
    (pkg / "pyproject.toml").write_text(f'[tool.ge-plugin]\nisolation = "{isolation}"\n')
    return pkg


def one_op_plugin(op_type, execute, imports="", infer=""):
    """Source of a plugin defining ``op_type`` (x -> a tensor like x): ``infer``
    runs first in its prototype, ``execute`` (lines at one indent) in its
    execute, which then hands x on as the output."""
    body = textwrap.indent(textwrap.dedent(execute).strip("\n"), " " * 8)
    pre = textwrap.indent(textwrap.dedent(infer).strip("\n"), " " * 4) + "\n" if infer.strip() else ""
    return (textwrap.dedent(imports).strip("\n") + "\n"
            "from ge.custom_op import get_execute_ctx, register_op, register_op_impl\n"
            "from ge.runtime import Tensor, TensorDesc\n\n"
            f"@register_op(op_type={op_type!r})\n"
            "def proto(x: TensorDesc) -> TensorDesc:\n"
            f"{pre}"
            "    return TensorDesc(x.shape.storage_shape.dims, x.data_type)\n\n"
            f"@register_op_impl(op_type={op_type!r})\n"
            "class Impl:\n"
            "    def execute(self, x: Tensor) -> None:\n"
            f"{body}\n"
            "        get_execute_ctx().make_output_ref_input(0, 0)\n")


def signal_when_ready(cmd, ready, sig, **popen):
    """Starts ``cmd``, waits (30 s at most) for the file ``ready``, sends
    ``sig`` and returns the exit status (killed after 10 s more)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        assert ready.exists(), p.stderr.read() if p.poll() is not None else "the plugin never started"
        p.send_signal(sig)
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode


def gelu_graph(write_graph):
    return write_graph([node("g", "GeluCustom", ["x"])], ["g:0"], inputs=[f32("x", [1.0, -1.0])])


# ---- signals ---------------------------------------------------------------------------------

SIGNAL_CALLS = {
    "signal.signal(SIGTERM)": "import signal\nsignal.signal(signal.SIGTERM, lambda *a: None)",
    "signal.signal(SIGINT)": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)",
    "signal.set_wakeup_fd": "import signal, os\nsignal.set_wakeup_fd(os.pipe()[1])",
    "signal.pthread_sigmask": "import signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})",
    "signal.setitimer": "import signal\nsignal.setitimer(signal.ITIMER_REAL, 0.05)",
    "signal.alarm": "import signal\nsignal.alarm(1)",
    "signal.siginterrupt": "import signal\nsignal.siginterrupt(signal.SIGTERM, False)",
    "signal.signal": "import _signal\n_signal.signal(15, _signal.SIG_IGN)",
    "faulthandler.register": "import faulthandler\nfaulthandler.register(10)",
}


@pytest.mark.parametrize("isolation", ["main", "subinterpreter", None])
@pytest.mark.parametrize("call", sorted(SIGNAL_CALLS))
def test_plugins_cannot_change_the_process_signals(ge_run, write_graph, tmp_path, isolation, call):
    """Each call fails the plugin's load with a message naming the plugin and
    the call; the graph's other ops still run."""
    write_plugin(tmp_path / "opp", "grabber", SIGNAL_CALLS[call], isolation)
    res = ge_run(gelu_graph(write_graph), opp_path=("samples", str(tmp_path / "opp")))
    assert res.returncode == 0, res.stderr
    warning = next(line for line in res.stderr.splitlines() if "plugin grabber not loaded" in line)
    fn = call.split("(")[0].split(".")[-1]
    assert f"plugin 'grabber': " in warning and f".{fn}() is not available to plugins" in warning, warning
    assert "grabber" in warning


def test_sigterm_still_ends_ge_run_after_a_plugin_tried_to_ignore_it(ge_run_bin, write_graph, tmp_path, opp):
    """A plugin that swallows the refusal and then blocks at import: SIGTERM
    still ends ge-run (before the fix, only SIGKILL did)."""
    ready = tmp_path / "ready"
    write_plugin(tmp_path / "opp", "stubborn", f"""
        import signal, time
        try:
            signal.signal(signal.SIGTERM, lambda *a: None)
        except ValueError:
            pass
        open({str(ready)!r}, "w").close()
        time.sleep(60)
        """, "main")
    cmd = [str(ge_run_bin), str(gelu_graph(write_graph)), "--opp-path",
           opp["samples"] + ":" + str(tmp_path / "opp"), "--output-dir", str(tmp_path / "out")]
    assert signal_when_ready(cmd, ready, signal.SIGTERM) == -signal.SIGTERM


def test_signal_queries_stay_available(ge_run, write_graph, tmp_path):
    """Reading signal state (getsignal, strsignal, valid_signals) is not refused."""
    write_plugin(tmp_path / "opp", "reader", """
        import signal
        assert signal.getsignal(signal.SIGTERM) is not None
        assert signal.strsignal(signal.SIGTERM)
        assert signal.SIGTERM in signal.valid_signals()
        """, "main")
    res = ge_run(gelu_graph(write_graph), opp_path=("samples", str(tmp_path / "opp")))
    assert res.returncode == 0 and "not loaded" not in res.stderr, res.stderr


# ---- threads at exit ----------------------------------------------------------------------------

THREAD_AT_IMPORT = """
    import threading, time
    threading.Thread(target=time.sleep, args=(60,), name="sleeper").start()
    """

THREAD_IN_EXECUTE = one_op_plugin("LingerCustom", """
    threading.Thread(target=_linger, name="lingerer").start()
    """, imports="""
    import threading, time

    def _linger():
        time.sleep(60)
    """)


@pytest.mark.parametrize("where", ["import", "execute"])
@pytest.mark.parametrize("isolation", ["main", "subinterpreter"])
def test_a_plugin_thread_does_not_hang_the_exit(ge_run, write_graph, tmp_path, where, isolation):
    code, thread = (THREAD_AT_IMPORT, "sleeper") if where == "import" else (THREAD_IN_EXECUTE, "lingerer")
    write_plugin(tmp_path / "opp", "lingering", code, isolation)
    nodes = [node("g", "GeluCustom", ["x"])]
    outputs = ["g:0"]
    if where == "execute":
        nodes.append(node("l", "LingerCustom", ["x"]))
        outputs.append("l:0")
    g = write_graph(nodes, outputs, inputs=[f32("x", [1.0, -1.0])])
    start = time.monotonic()
    res = ge_run(g, opp_path=("samples", str(tmp_path / "opp")), timeout=30)
    elapsed = time.monotonic() - start
    assert res.returncode == 0, res.stderr
    assert "g_0.npy" in res.outputs()
    assert elapsed < 20, f"ge-run took {elapsed:.1f} s to exit"
    assert f"'{thread}'" in res.stderr and "lingering" in res.stderr, res.stderr


# ---- the current directory -------------------------------------------------------------------------

@pytest.mark.parametrize("when", ["import", "execute"])
def test_os_chdir_in_a_plugin_does_not_move_the_outputs(ge_run_bin, write_graph, tmp_path, opp, when):
    """Relative --output-dir and --opp-path are resolved before any plugin runs."""
    work = tmp_path / "work"
    work.mkdir()
    away = tmp_path / "elsewhere"
    away.mkdir()
    if when == "import":
        write_plugin(work / "opp", "mover", f"import os\nos.chdir({str(away)!r})\n", "main")
        nodes, outputs = [node("g", "GeluCustom", ["x"])], ["g:0"]
    else:
        write_plugin(work / "opp", "mover", one_op_plugin("MoverCustom", f"os.chdir({str(away)!r})",
                                                          imports="import os"))
        nodes, outputs = [node("m", "MoverCustom", ["x"]), node("g", "GeluCustom", ["m:0"])], ["g:0"]
    # A second opp entry after the mover, also relative: it must still be found.
    write_plugin(work / "opp2", "late", """
        from ge.custom_op import register_op, register_op_impl
        from ge.runtime import Tensor, TensorDesc

        @register_op(op_type="LateCustom")
        def late(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape.storage_shape.dims, x.data_type)
        """)
    g = write_graph(nodes, outputs, inputs=[f32("x", [1.0, -1.0])])
    cmd = [str(ge_run_bin), str(g), "--opp-path", f"{opp['samples']}:opp:opp2", "--output-dir", "out", "--json"]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("ASCEND_CUSTOM_OPP_PATH", None)
    p = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    import json
    summary = json.loads(p.stdout)
    assert summary["outputs"]["g:0"]["file"] == os.path.join("out", "g_0.npy")
    assert (work / "out" / "g_0.npy").is_file()
    assert not (away / "out").exists()
    plugins = {pl["name"]: pl["status"] for pl in summary["plugins"]}
    assert plugins.get("mover") == "ok" and plugins.get("late") == "ok", plugins


# ---- crashes ------------------------------------------------------------------------------------------

CRASH_OP = one_op_plugin("CrashCustom", "ctypes.string_at(0)", imports="import ctypes, os", infer="""
    if {in_infer}:
        os.abort()
    """)


@pytest.mark.parametrize("where,sig,what", [
    ("import", "SIGSEGV", "loading plugin 'crasher'"),
    ("execute", "SIGSEGV", "calling execute of op_type 'CrashCustom' (plugin 'crasher'"),
    ("infer_meta", "SIGABRT", "calling infer_meta of op_type 'CrashCustom' (plugin 'crasher'"),
])
def test_a_crash_names_the_plugin_it_happened_in(ge_run, write_graph, tmp_path, where, sig, what):
    code = "import ctypes\nctypes.string_at(0)\n" if where == "import" else \
        CRASH_OP.replace("{in_infer}", str(where == "infer_meta"))
    write_plugin(tmp_path / "opp", "crasher", code)
    nodes = [node("g", "GeluCustom", ["x"])] if where == "import" else [node("c", "CrashCustom", ["x"])]
    g = write_graph(nodes, [nodes[0]["name"] + ":0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=("samples", str(tmp_path / "opp")))
    assert res.returncode == -getattr(signal, sig), (res.returncode, res.stderr)
    assert f"ge-run: error: fatal signal {sig} while {what}" in res.stderr, res.stderr
    assert str(tmp_path / "opp") in res.stderr
    # Only a crash while loading is something the registry records and --skip-crashed skips.
    assert ("--skip-crashed" in res.stderr) == (where == "import"), res.stderr
    assert res.outputs() == []


# ---- adversarial round: the same kinds, other members ---------------------------------------------

@pytest.mark.parametrize("isolation", ["main", "subinterpreter"])
def test_a_fresh_import_of_signal_modules_is_still_guarded(ge_run, write_graph, tmp_path, isolation):
    """Dropping _signal / faulthandler from sys.modules and importing them again gives the guarded module."""
    write_plugin(tmp_path / "opp", "sneaky", """
        import sys
        del sys.modules["_signal"]
        sys.modules.pop("signal", None)
        import _signal
        _signal.pthread_sigmask(_signal.SIG_BLOCK, {15})
        """, isolation)
    res = ge_run(gelu_graph(write_graph), opp_path=("samples", str(tmp_path / "opp")))
    assert res.returncode == 0, res.stderr
    assert "plugin sneaky not loaded" in res.stderr and "pthread_sigmask() is not available" in res.stderr


def test_faulthandler_exit_timers_are_refused(ge_run, write_graph, tmp_path):
    write_plugin(tmp_path / "opp", "timer", "import faulthandler\nfaulthandler.dump_traceback_later(1, exit=True)\n",
                 "main")
    res = ge_run(gelu_graph(write_graph), opp_path=("samples", str(tmp_path / "opp")))
    assert res.returncode == 0 and "dump_traceback_later() is not available" in res.stderr, res.stderr


@pytest.mark.parametrize("isolation", ["main", "subinterpreter"])
def test_an_atexit_handler_does_not_hang_the_exit(ge_run, write_graph, tmp_path, isolation):
    """A plugin with no op (its interpreter ends right after loading) and a blocking atexit handler."""
    write_plugin(tmp_path / "opp", "lingering", "import atexit, time\natexit.register(time.sleep, 60)\n", isolation)
    start = time.monotonic()
    res = ge_run(gelu_graph(write_graph), opp_path=("samples", str(tmp_path / "opp")), timeout=60)
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - start < 20
    assert "g_0.npy" in res.outputs() and "GeluCustom" in res.stdout
    assert "'ge-atexit'" in res.stderr, res.stderr  # treated like a thread left running


@pytest.mark.parametrize("where", ["import", "execute"])
def test_a_stack_overflow_in_plugin_code_is_reported(ge_run, write_graph, tmp_path, where):
    """C-level recursion (a deeply nested list's repr with the recursion limit lifted) on the main thread."""
    deep = ("import sys\nsys.setrecursionlimit(10**8)\n"
            "def blow():\n    x = []\n    for _ in range(3_000_000):\n        x = [x]\n    repr(x)\n")
    if where == "import":
        write_plugin(tmp_path / "opp", "deep", deep + "blow()\n")
        nodes = [node("g", "GeluCustom", ["x"])]
    else:
        write_plugin(tmp_path / "opp", "deep", deep + CRASH_OP.replace("ctypes.string_at(0)", "blow()")
                     .replace("{in_infer}", "False"))
        nodes = [node("c", "CrashCustom", ["x"])]
    g = write_graph(nodes, [nodes[0]["name"] + ":0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=("samples", str(tmp_path / "opp")), timeout=120)
    assert res.returncode == -signal.SIGSEGV, (res.returncode, res.stderr[-2000:])
    assert "fatal signal SIGSEGV while" in res.stderr and "plugin 'deep'" in res.stderr


def test_a_relative_platform_dir_survives_a_plugin_chdir(ge_run_bin, write_graph, tmp_path, opp, source_dir):
    work = tmp_path / "work"
    (work / "plat").mkdir(parents=True)
    ini = next((source_dir / "share" / "platform").glob("*.ini"))
    (work / "plat" / "MySoc.ini").write_text(ini.read_text())
    away = tmp_path / "away"
    away.mkdir()
    write_plugin(work / "opp", "mover", f"import os\nos.chdir({str(away)!r})\n", "main")
    g = write_graph([node("t", "TiledSoftmaxCustom", ["x"])], ["t:0"], inputs=[f32("x", [[1.0, 2.0]], [1, 2])])
    env = dict(os.environ, GE_PLATFORM_DIR="plat", PYTHONDONTWRITEBYTECODE="1")
    env.pop("ASCEND_CUSTOM_OPP_PATH", None)
    p = subprocess.run([str(ge_run_bin), str(g), "--opp-path", f"{opp['samples']}:opp", "--soc", "MySoc",
                        "--output-dir", "out"], cwd=work, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert (work / "out" / "t_0.npy").is_file()


@pytest.mark.parametrize("isolation", ["main", "subinterpreter"])
def test_sigint_ends_ge_run_as_the_engine_says_not_as_a_keyboard_interrupt(ge_run_bin, write_graph, tmp_path, opp,
                                                                          isolation):
    """Importing `signal` in the main interpreter must not turn Ctrl-C into a
    KeyboardInterrupt that plugin code can swallow: ge-run ends by SIGINT."""
    ready = tmp_path / "ready"
    write_plugin(tmp_path / "opp", "sleepy", one_op_plugin("SleepyCustom", f"""
        open({str(ready)!r}, "w").close()
        try:
            time.sleep(30)
        except KeyboardInterrupt:
            pass  # swallowed: the run would then finish as a success
        """, imports="import signal, time"), isolation)
    g = write_graph([node("s", "SleepyCustom", ["x"])], ["s:0"], inputs=[f32("x", [1.0])])
    cmd = [str(ge_run_bin), str(g), "--opp-path", str(tmp_path / "opp"), "--output-dir", str(tmp_path / "out")]
    assert signal_when_ready(cmd, ready, signal.SIGINT) == -signal.SIGINT
    assert not (tmp_path / "out").exists()
