"""Isolation "process" through ge-run (share/docs/plugin-authors.md, "Isolation";
share/docs/host-design.md, "Process isolation"): the same results as in a
sub-interpreter, numpy in several process-isolated plugins beside a main one,
a crashing or hanging worker failing its node with a named error, and the
--isolation / --call-timeout flags.
"""
import os
import textwrap
import time

import numpy as np
import pytest

from e2e_helpers import assert_failed_cleanly, f32, node


def write_package(folder, name, code, isolation):
    pkg = folder / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(code))
    (pkg / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "1.2.3"\n\n[tool.ge-plugin]\nisolation = "{isolation}"\n')
    return pkg


def numpy_op(op_type, expr):
    """A numpy op y = expr(a) where a = numpy.asarray(x)."""
    return f"""
        import os
        import numpy as np
        from ge.custom_op import get_execute_ctx, register_op, register_op_impl
        from ge.runtime import Tensor, TensorDesc

        @register_op(op_type={op_type!r})
        def proto(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape.storage_shape.dims, x.data_type)

        @register_op_impl(op_type={op_type!r})
        class Impl:
            def execute(self, x: Tensor) -> None:
                a = np.asarray(x)
                y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
                np.asarray(y)[...] = {expr}
        """


def test_a_sample_gives_the_same_result_in_a_worker_process(ge_run, write_graph):
    graph = write_graph([node("g", "GeluCustom", ["x"])], ["g:0"], inputs=[f32("x", [1.0, -1.0, 0.5])])
    sub = ge_run(graph, "--json", opp_path=("samples",))
    proc = ge_run(graph, "--json", "--isolation", "process", opp_path=("samples",))
    assert sub.returncode == 0, sub.stderr
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(proc.load("g_0.npy"), sub.load("g_0.npy"))
    gelu = next(p for p in proc.json()["plugins"] if p["name"] == "gelu")
    assert gelu["isolation"] == "process" and gelu["status"] == "ok", gelu
    assert next(p for p in sub.json()["plugins"] if p["name"] == "gelu")["isolation"] == "subinterpreter"
    assert proc.json()["python_calls"] == sub.json()["python_calls"]


def test_numpy_in_two_process_plugins_and_a_main_plugin_in_one_graph(ge_run, write_graph, tmp_path):
    opp = tmp_path / "opp"
    write_package(opp, "np_proc_a", numpy_op("NpProcA", "a * 2"), "process")
    write_package(opp, "np_proc_b", numpy_op("NpProcB", "a + 1"), "process")
    write_package(opp, "np_main_c", numpy_op("NpMainC", "np.sqrt(a)"), "main")
    graph = write_graph([node("a", "NpProcA", ["x"]), node("b", "NpProcB", ["a:0"]), node("c", "NpMainC", ["b:0"])],
                        ["c:0", "a:0"], inputs=[f32("x", [0.0, 1.5, 4.0])])
    res = ge_run(graph, "--json", "--repeat", "3", opp_path=(str(opp),))
    assert res.returncode == 0, res.stderr
    np.testing.assert_allclose(res.load("c_0.npy"), np.sqrt(np.array([0.0, 1.5, 4.0], np.float32) * 2 + 1), rtol=1e-6)
    np.testing.assert_array_equal(res.load("a_0.npy"), np.array([0.0, 3.0, 8.0], np.float32))
    iso = {p["name"]: p["isolation"] for p in res.json()["plugins"]}
    assert iso == {"np_proc_a": "process", "np_proc_b": "process", "np_main_c": "main"}, iso


@pytest.mark.parametrize("plugin, op_type, fault, said", [
    ("quitter", "QuitOp", "os._exit(7)", "exited with code 7"),
    ("crasher", "CrashOp", "os.kill(os.getpid(), 11)", "died of signal 11"),
])
def test_a_worker_that_exits_or_crashes_fails_its_node_naming_plugin_op_and_end(ge_run, write_graph, tmp_path,
                                                                                plugin, op_type, fault, said):
    opp = tmp_path / "opp"
    write_package(opp, plugin, numpy_op(op_type, "a").replace("a = np.asarray(x)", fault), "process")
    graph = write_graph([node("n", op_type, ["x"])], ["n:0"], inputs=[f32("x", [1.0])])
    res = ge_run(graph, opp_path=(str(opp),))
    assert_failed_cleanly(res, f"plugin '{plugin}'", f"execute of op_type '{op_type}'", said)


def test_call_timeout_ends_a_hanging_call(ge_run, write_graph, tmp_path):
    opp = tmp_path / "opp"
    write_package(opp, "sleeper", numpy_op("SleepOp", "a").replace("a = np.asarray(x)", "import time; time.sleep(600)"),
                  "process")
    graph = write_graph([node("s", "SleepOp", ["x"])], ["s:0"], inputs=[f32("x", [1.0])])
    t0 = time.monotonic()
    res = ge_run(graph, "--call-timeout", "1", opp_path=(str(opp),))
    assert time.monotonic() - t0 < 60
    assert_failed_cleanly(res, "plugin 'sleeper'", "did not finish within 1 s", "was killed")


@pytest.mark.parametrize("args,message", [
    (["--isolation", "thread"], "--isolation must be subinterpreter, main or process, got 'thread'"),
    (["--call-timeout", "0"], "--call-timeout must be from 0.001 to 1e+09 seconds, got 0"),
    (["--call-timeout", "1e-300"], "--call-timeout must be from 0.001 to 1e+09 seconds, got 1e-300"),
    (["--call-timeout", "1e30"], "--call-timeout must be from 0.001 to 1e+09 seconds, got 1e+30"),
    (["--call-timeout", "soon"], "call-timeout"),
])
def test_bad_isolation_flags_are_usage_errors(ge_run, write_graph, args, message):
    graph = write_graph([node("g", "GeluCustom", ["x"])], ["g:0"], inputs=[f32("x", [1.0])])
    res = ge_run(graph, *args, opp_path=("samples",))
    assert res.returncode == 2, res.stderr
    assert message in res.stderr, res.stderr


def test_compile_and_declare_launch_args_run_in_the_worker(ge_run, source_dir):
    """kernel_block: the axpy kernel's compile (platform, options) and
    declare_launch_args run in the worker; the engine replays the task plan
    the worker declared, with the same results as in a sub-interpreter."""
    graph = source_dir / "share" / "examples" / "kernel_block.json"
    sub = ge_run(graph, "--json", "--repeat", "2", opp_path=("samples",))
    proc = ge_run(graph, "--json", "--repeat", "2", "--isolation", "process", opp_path=("samples",))
    assert sub.returncode == 0, sub.stderr
    assert proc.returncode == 0, proc.stderr
    for name in ("out_0.npy", "axpy_0.npy"):
        np.testing.assert_array_equal(proc.load(name), sub.load(name))
    nodes = {n["name"]: n for n in proc.json()["nodes"]}
    assert nodes["axpy"]["mode"] == "task_plan", nodes["axpy"]
    assert nodes["axpy"]["calls"]["compile"] == 1 and nodes["axpy"]["calls"]["declare_launch_args"] == 1, nodes["axpy"]
    iso = {p["name"]: p["isolation"] for p in proc.json()["plugins"] if p["name"] in ("axpy_kernel", "gelu")}
    assert iso == {"axpy_kernel": "process", "gelu": "process"}, iso


def test_log_level_reaches_the_worker_so_prints_show(ge_run, write_graph, tmp_path):
    # ge-run --log-level sets the engine's level; a plugin's print in its
    # worker is logged at info and must show as it does in-process.
    opp = tmp_path / "opp"
    write_package(opp, "talker", """
        from ge.custom_op import register_op, register_op_impl
        from ge.runtime import Tensor, TensorDesc

        @register_op(op_type="ProcTalk")
        def proto(x: TensorDesc) -> TensorDesc:
            return x

        @register_op_impl(op_type="ProcTalk")
        class Impl:
            def execute(self, x: Tensor) -> None:
                print("talker says hello from execute")
                from ge.custom_op import get_execute_ctx
                get_execute_ctx().make_output_ref_input(0, 0)
        """, "process")
    graph = write_graph([node("t", "ProcTalk", ["x"])], ["t:0"], inputs=[f32("x", [1.0])])
    quiet = ge_run(graph, opp_path=(str(opp),))
    assert quiet.returncode == 0, quiet.stderr
    assert "talker says hello" not in quiet.stderr
    loud = ge_run(graph, opp_path=(str(opp),), log_level="info")
    assert loud.returncode == 0, loud.stderr
    assert "talker says hello from execute" in loud.stderr, loud.stderr
    # One load line at info, the engine's; the worker's own says where it is, at debug.
    assert loud.stderr.count("plugin 'talker' loaded from") == 1, loud.stderr
    debug = ge_run(graph, opp_path=(str(opp),), log_level="debug")
    assert ", in its worker process): 1 op(s)" in debug.stderr, debug.stderr


def test_process_plugins_are_not_bounded_by_a_low_soft_descriptor_limit(ge_run_bin, tmp_path):
    # Each worker holds a few descriptors in the engine; under a soft
    # RLIMIT_NOFILE of 64 (hard higher, as systemd sets it) about 8 workers
    # would fit. The host raises the soft limit to the hard one before its
    # first worker (share/docs/host-design.md, "Process isolation"), so all 20 load.
    import json
    import os
    import resource
    import subprocess
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip(f"the hard descriptor limit here is {hard}")
    opp = tmp_path / "opp"
    opp.mkdir()
    count = 20
    for i in range(count):
        (opp / f"ident_{i:02d}.py").write_text(textwrap.dedent(f"""
            from ge.custom_op import get_execute_ctx, register_op, register_op_impl
            from ge.runtime import Tensor, TensorDesc

            @register_op(op_type="Ident{i:02d}")
            def proto(x: TensorDesc) -> TensorDesc:
                return TensorDesc(x.shape.storage_shape.dims, x.data_type)

            @register_op_impl(op_type="Ident{i:02d}")
            class Impl:
                def execute(self, x: Tensor) -> None:
                    y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
                    y.data.cast("B")[:] = x.data.cast("B")
            """))
    nodes = [{"name": f"n{i}", "op_type": f"Ident{i:02d}", "inputs": ["x" if i == 0 else f"n{i - 1}:0"]}
             for i in range(count)]
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({"inputs": [f32("x", [1.0, 2.0])], "nodes": nodes, "outputs": [f"n{count - 1}:0"]}))

    def low_soft_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))

    p = subprocess.run([str(ge_run_bin), str(graph), "--opp-path", str(opp), "--output-dir", str(tmp_path / "out"),
                        "--isolation", "process"], capture_output=True, text=True, timeout=300,
                       preexec_fn=low_soft_limit, env={k: v for k, v in os.environ.items() if k != "ASCEND_CUSTOM_OPP_PATH"})
    assert p.returncode == 0, p.stderr
    assert "Too many open files" not in p.stderr
    assert np.load(tmp_path / "out" / f"n{count - 1}_0.npy").tolist() == [1.0, 2.0]


@pytest.mark.skipif(os.environ.get("GE_SANITIZE") == "1",
                    reason="AddressSanitizer's shadow memory needs far more address space than any limit")
def test_process_plugins_load_under_an_address_space_limit(ge_run_bin, tmp_path):
    # Each shared arena used to reserve 4 GiB: under `ulimit -v` 2 GB (as batch
    # schedulers set) no worker started. Arenas take what fits (host-design.md,
    # "Process isolation"), and tensors that do not fit go through the heap.
    import json
    import resource
    import subprocess
    opp = tmp_path / "opp"
    opp.mkdir()
    for i in range(3):
        (opp / f"twice_{i}.py").write_text(textwrap.dedent(f"""
            from ge.custom_op import get_execute_ctx, register_op, register_op_impl
            from ge.runtime import Tensor, TensorDesc

            @register_op(op_type="AsTwice{i}")
            def proto(x: TensorDesc) -> TensorDesc:
                return TensorDesc(x.shape.storage_shape.dims, x.data_type)

            @register_op_impl(op_type="AsTwice{i}")
            class Impl:
                def execute(self, x: Tensor) -> None:
                    y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
                    src, dst = x.data.cast("B").cast("f"), y.data.cast("B").cast("f")
                    for k in range(len(dst)):
                        dst[k] = 2 * src[k]
            """))
    nodes = [{"name": f"n{i}", "op_type": f"AsTwice{i}", "inputs": ["x" if i == 0 else f"n{i - 1}:0"]} for i in range(3)]
    graph = tmp_path / "g.json"
    # 4 MiB of float32: larger than nothing, smaller than any arena.
    graph.write_text(json.dumps({"inputs": [f32("x", [1.0] * (1 << 20))], "nodes": nodes, "outputs": ["n2:0"]}))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 * 10 ** 9, resource.getrlimit(resource.RLIMIT_AS)[1]))

    p = subprocess.run([str(ge_run_bin), str(graph), "--opp-path", str(opp), "--output-dir", str(tmp_path / "out"),
                        "--isolation", "process"], capture_output=True, text=True, timeout=300, preexec_fn=limit,
                       env={k: v for k, v in os.environ.items() if k != "ASCEND_CUSTOM_OPP_PATH"})
    assert p.returncode == 0, p.stderr
    out = np.load(tmp_path / "out" / "n2_0.npy")
    assert out.shape == (1 << 20,) and (out == 8.0).all()


@pytest.mark.skipif(os.environ.get("GE_SANITIZE") == "1",
                    reason="AddressSanitizer's shadow memory needs far more address space than any limit")
def test_an_output_too_big_for_the_arena_and_one_message_fails_its_node_by_name(ge_run_bin, tmp_path):
    # Under `ulimit -v` 2.5 GB each arena is 256 MiB; a 300 MiB output does not
    # fit the worker's, so it would travel inside the reply, whose length is
    # at most 256 MiB: the node fails naming the sizes, the worker lives on.
    import json
    import resource
    import subprocess
    opp = tmp_path / "opp"
    opp.mkdir()
    (opp / "huge.py").write_text(textwrap.dedent("""
        from ge.custom_op import get_execute_ctx, register_op, register_op_impl
        from ge.runtime import Tensor, TensorDesc

        @register_op(op_type="HugeOut")
        def proto(x: TensorDesc) -> TensorDesc:
            return TensorDesc([300 << 18], x.data_type)

        @register_op_impl(op_type="HugeOut")
        class Impl:
            def execute(self, x: Tensor) -> None:
                get_execute_ctx().malloc_output_tensor(0, [300 << 18], x.format, x.data_type)
        """))
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({"inputs": [f32("x", [1.0])], "nodes": [{"name": "h", "op_type": "HugeOut", "inputs": ["x"]}],
                                 "outputs": ["h:0"]}))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2_500_000_000, resource.getrlimit(resource.RLIMIT_AS)[1]))

    p = subprocess.run([str(ge_run_bin), str(graph), "--opp-path", str(opp), "--output-dir", str(tmp_path / "out"),
                        "--isolation", "process"], capture_output=True, text=True, timeout=300, preexec_fn=limit,
                       env={k: v for k, v in os.environ.items() if k != "ASCEND_CUSTOM_OPP_PATH"})
    assert p.returncode != 0
    assert "node 'h'" in p.stderr and "more than one message may hold (268435456)" in p.stderr, p.stderr
    assert "outputs that do not fit the worker's shared arena (268435456 bytes) travel inside it" in p.stderr, p.stderr
    assert "its worker process" not in p.stderr, p.stderr  # answered, not lost


@pytest.mark.skipif(os.environ.get("GE_SANITIZE") == "1",
                    reason="AddressSanitizer's shadow memory needs far more address space than any limit")
def test_an_input_too_big_for_the_arena_and_one_message_fails_its_node_by_name(ge_run_bin, tmp_path):
    # The engine's side: an input never travels inside a request; a 300 MiB
    # graph input that the engine's 256 MiB arena cannot hold fails its node
    # by name before the worker is asked anything.
    import json
    import resource
    import subprocess
    opp = tmp_path / "opp"
    opp.mkdir()
    (opp / "ident.py").write_text(textwrap.dedent("""
        from ge.custom_op import get_execute_ctx, register_op, register_op_impl
        from ge.runtime import Tensor, TensorDesc

        @register_op(op_type="BigIdent")
        def proto(x: TensorDesc) -> TensorDesc:
            return TensorDesc(x.shape.storage_shape.dims, x.data_type)

        @register_op_impl(op_type="BigIdent")
        class Impl:
            def execute(self, x: Tensor) -> None:
                get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
        """))
    np.save(tmp_path / "x.npy", np.zeros(300 << 18, np.float32))
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({"inputs": [{"name": "x", "dtype": "float32", "shape": [300 << 18], "file": "x.npy"}],
                                 "nodes": [{"name": "b", "op_type": "BigIdent", "inputs": ["x"]}], "outputs": ["b:0"]}))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2_500_000_000, resource.getrlimit(resource.RLIMIT_AS)[1]))

    p = subprocess.run([str(ge_run_bin), str(graph), "--opp-path", str(opp), "--output-dir", str(tmp_path / "out"),
                        "--isolation", "process"], capture_output=True, text=True, timeout=300, preexec_fn=limit,
                       env={k: v for k, v in os.environ.items() if k != "ASCEND_CUSTOM_OPP_PATH"})
    assert p.returncode != 0
    assert "node 'b'" in p.stderr, p.stderr
    assert "the engine's shared arena has no room for input 0 (314572800 bytes)" in p.stderr, p.stderr
