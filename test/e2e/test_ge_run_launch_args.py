"""Annotated launch args end to end through ge-run (share/docs/launch-args.md,
"The host CPU backend"): the axpy kernel sample against numpy for
several shapes, dtypes and SoCs; one declaration and no per-run Python call over
100 runs; several launches per node in order; dynamic and optional instances by
flattened index; a node with execute and declare_launch_args uses the plan;
kernel failures (missing symbol, not ELF, abort, segfault) named by node and
kernel; no files left behind; the sample's cache miss.

Kernels are built once per module with the system ``cc`` into a directory the
test plugins (plugins/testing/launch/<case>/) read through GE_LAUNCH_KERNEL_DIR.
"""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from e2e_helpers import assert_failed_cleanly, f32, node

# ---- kernels --------------------------------------------------------------------------------

_SIMPLE = r"""
#include <stdint.h>
#define CHUNK(n) uint64_t chunk = ((n) + block_dim - 1) / block_dim, b = block_idx * chunk, \
                          e = b + chunk < (n) ? b + chunk : (n)
void scale2(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  const float* x = (const float*)(uintptr_t)args[0]; float* y = (float*)(uintptr_t)args[1];
  CHUNK(args[2]);
  for (uint64_t i = b; i < e; ++i) y[i] = 2.0f * x[i];
}
void add_one(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  const float* x = (const float*)(uintptr_t)args[0]; float* y = (float*)(uintptr_t)args[1];
  CHUNK(args[2]);
  for (uint64_t i = b; i < e; ++i) y[i] = x[i] + 1.0f;
}
"""

_TWO = r"""
#include <math.h>
#include <stdint.h>
#define CHUNK(n) uint64_t chunk = ((n) + block_dim - 1) / block_dim, b = block_idx * chunk, \
                          e = b + chunk < (n) ? b + chunk : (n)
void stage1(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  const float* x = (const float*)(uintptr_t)args[0]; float* w = (float*)(uintptr_t)args[1];
  CHUNK(args[2]);
  for (uint64_t i = b; i < e; ++i) w[i] = 2.0f * x[i];
}
void stage2(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  float* w = (float*)(uintptr_t)args[0]; float* y = (float*)(uintptr_t)args[1];
  const uint64_t n = args[2];
  CHUNK(n);
  for (uint64_t i = b; i < e; ++i) { y[i] = w[n - 1 - i] + 1.0f; w[n - 1 - i] = NAN; }
}
"""

_DYN = r"""
#include <stdint.h>
void dyn(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  const uint64_t k = args[0], n = args[1];
  const float* a = (const float*)(uintptr_t)args[2];
  const float* bias = (const float*)(uintptr_t)args[3];
  const uint64_t chunk = (n + block_dim - 1) / block_dim, b = block_idx * chunk, e = b + chunk < n ? b + chunk : n;
  float* s = (float*)(uintptr_t)args[4 + 2 * k];
  for (uint64_t j = b; j < e; ++j) {
    float acc = 0.0f;
    for (uint64_t i = 0; i < k; ++i) {
      const float* x = (const float*)(uintptr_t)args[4 + i];
      float* y = (float*)(uintptr_t)args[4 + k + i];
      const float v = a[j] * (float)(i + 1) + x[j] + (bias ? bias[j] : 0.0f);
      y[j] = v;
      acc += v;
    }
    s[j] = acc;
  }
}
"""

_CRASH = r"""
#include <stdint.h>
#include <stdlib.h>
void segv(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  volatile float* p = (volatile float*)(uintptr_t)(args[2] * 0 + 16);
  *p = 1.0f;
}
void abrt(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  (void)block_idx; (void)block_dim; (void)args;
  abort();
}
/* glibc aborts inside free() while holding the heap lock. */
void double_free(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  char* volatile p = (char*)malloc(2000);
  free(p);
  free(p);
}
/* Block 0 crashes while holding a lock the other blocks wait for. */
#include <pthread.h>
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
void crash_holding_lock(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {
  pthread_mutex_lock(&mu);
  if (block_idx == 0) { volatile int* q = (volatile int*)16; *q = 1; }
  pthread_mutex_unlock(&mu);
}
static int deep(int n) { volatile char pad[4096]; pad[0] = (char)n; return n == 0 ? pad[0] : deep(n + 1) + pad[0]; }
void overflow(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) { (void)deep(1); }
void calls_exit(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) { exit(0); }
"""

_CTOR_CRASH = r"""
#include <stdint.h>
__attribute__((constructor)) static void boom(void) { volatile int* q = (volatile int*)16; *q = 1; }
void k(uint32_t block_idx, uint32_t block_dim, const uint64_t* args) {}
"""


def _cc(src_dir, name, source, out, flags=("-O2", "-shared", "-fPIC")):
    cc = shutil.which("cc")
    assert cc, "the system C compiler (cc) is required"
    src = src_dir / f"{name}.c"
    src.write_text(source)
    subprocess.run([cc, *flags, "-o", str(out), str(src)], check=True, capture_output=True)


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("kernels")
    src = tmp_path_factory.mktemp("kernel_src")
    _cc(src, "simple", _SIMPLE, d / "simple.so")
    _cc(src, "two", _TWO, d / "two.so")
    _cc(src, "dyn", _DYN, d / "dyn.so")
    _cc(src, "crash", _CRASH, d / "crash.so", flags=("-O0", "-shared", "-fPIC"))
    _cc(src, "reloc", _SIMPLE, d / "reloc.o", flags=("-O2", "-c", "-fPIC"))
    (d / "garbage.bin").write_bytes(b"this is not an ELF shared object\n" * 8)
    _cc(src, "ctor_crash", _CTOR_CRASH, d / "ctor_crash.so", flags=("-O0", "-shared", "-fPIC"))
    whole = (d / "simple.so").read_bytes()
    (d / "truncated.so").write_bytes(whole[: len(whole) // 2])
    return d


@pytest.fixture
def kernels(kernel_dir, monkeypatch):
    monkeypatch.setenv("GE_LAUNCH_KERNEL_DIR", str(kernel_dir))
    return kernel_dir


@pytest.fixture(scope="module")
def launch_opp(source_dir):
    base = source_dir / "plugins" / "testing" / "launch"
    return {name: str(base / name) for name in ("file_kernel", "two_launches", "dynamic", "both", "cache_miss")}


def _nodes(res):
    return {n["name"]: n for n in res.json()["nodes"]}


def _save(tmp_path, name, array):
    path = tmp_path / f"{name}.npy"
    np.save(path, array)
    return {"name": name, "dtype": str(array.dtype), "shape": list(array.shape), "file": str(path)}


# ---- the sample against numpy ---------------------------------------------------------------

SHAPES = [[1], [13], [1025], [4, 7], [33, 65]]
ALPHAS = [0.5, -2.0, 4.0, 0.25, -1.0]  # powers of two: alpha * x is exact, + y rounds once as numpy does


@pytest.mark.parametrize("soc", ["host", "Ascend910B1"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sample_kernel_matches_numpy_for_shapes_dtypes_and_socs(ge_run, write_graph, tmp_path, soc, dtype):
    rng = np.random.default_rng(7)
    inputs, nodes, outputs, expected = [], [], [], {}
    for i, (shape, alpha) in enumerate(zip(SHAPES, ALPHAS)):
        x = rng.standard_normal(shape).astype(dtype)
        y = rng.standard_normal(shape).astype(dtype)
        inputs += [_save(tmp_path, f"x{i}", x), _save(tmp_path, f"y{i}", y)]
        nodes.append(node(f"k{i}", "AxpyKernelCustom", [f"x{i}", f"y{i}"], {"alpha": alpha}))
        outputs.append(f"k{i}:0")
        expected[f"k{i}_0.npy"] = dtype(alpha) * x + y
    # Mixed with eager ops: a C++ op consumes a kernel's output, a kernel consumes the C++ op's.
    nodes += [node("relu", "ReluCpp", ["k3:0"]), node("after", "AxpyKernelCustom", ["relu:0", "x3"], {"alpha": 2.0})]
    outputs.append("after:0")
    x3 = np.load(tmp_path / "x3.npy")
    expected["after_0.npy"] = dtype(2.0) * np.maximum(expected["k3_0.npy"], 0) + x3
    res = ge_run(write_graph(nodes, outputs, inputs=inputs), "--soc", soc, "--json", opp_path=("samples",))
    assert res.returncode == 0, res.stderr
    for name, want in expected.items():
        got = res.load(name)
        assert got.dtype == dtype and got.shape == want.shape, (name, got.dtype, got.shape)
        np.testing.assert_array_equal(got, want, err_msg=name)
    nodes_json = _nodes(res)
    for i in range(len(SHAPES)):
        n = nodes_json[f"k{i}"]
        assert n["mode"] == "task_plan" and n["kernel_launches"] == 1 and n["calls"]["execute"] == 0, n
    assert nodes_json["relu"]["mode"] == "eager"
    assert res.json()["soc"] == soc


def test_repeat_100_declares_once_and_never_calls_python_again(ge_run, write_graph, kernels, launch_opp, tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal([9, 11]).astype(np.float32)
    y = rng.standard_normal([9, 11]).astype(np.float32)
    v = rng.standard_normal([101]).astype(np.float32)
    g = write_graph([node("axpy", "AxpyKernelCustom", ["x", "y"], {"alpha": 0.5}),
                     node("relu", "ReluCpp", ["axpy:0"]),
                     node("two", "LaunchTwo", ["v"], {"block_dim": 3})],
                    ["relu:0", "two:0"], inputs=[_save(tmp_path, "x", x), _save(tmp_path, "y", y),
                                                 _save(tmp_path, "v", v)])
    res = ge_run(g, "--repeat", "100", "--json", opp_path=("samples", launch_opp["two_launches"]))
    assert res.returncode == 0, res.stderr
    n = _nodes(res)
    assert n["axpy"]["calls"] == {"infer_meta": 1, "compile": 1, "declare_launch_args": 1, "execute": 0}
    assert n["axpy"]["kernel_launches"] == 100 and n["axpy"]["mode"] == "task_plan"
    assert n["two"]["calls"] == {"infer_meta": 1, "compile": 0, "declare_launch_args": 1, "execute": 0}
    assert n["two"]["kernel_launches"] == 200 and n["two"]["mode"] == "task_plan"  # 2 launches x 100 runs
    assert n["relu"]["calls"]["execute"] == 100 and n["relu"]["kernel_launches"] == 0
    # The whole run: axpy's infer_meta + compile + declaration, two's infer_meta + declaration; nothing per run.
    assert res.json()["python_calls"] == 3 + 2
    assert res.json()["repeat"] == 100
    np.testing.assert_array_equal(res.load("relu_0.npy"), np.maximum(np.float32(0.5) * x + y, 0))
    np.testing.assert_array_equal(res.load("two_0.npy"), (2 * v)[::-1] + 1)


# ---- several launches, dynamic instances, execute + declare -----------------------------------

@pytest.mark.parametrize("n, block_dim", [(1, 1), (7, 3), (1001, 7)])
def test_two_launches_run_in_order_through_a_workspace(ge_run, write_graph, kernels, launch_opp, n, block_dim):
    v = [float(i + 1) for i in range(n)]
    g = write_graph([node("two", "LaunchTwo", ["v"], {"block_dim": block_dim})], ["two:0"], inputs=[f32("v", v)])
    res = ge_run(g, "--repeat", "3", "--json", opp_path=(launch_opp["two_launches"],))
    assert res.returncode == 0, res.stderr
    # stage2 reads what every block of stage1 wrote (reversed) and poisons it: a
    # reordered or overlapping launch gives NaN or stale values.
    np.testing.assert_array_equal(res.load("two_0.npy"), np.array(v[::-1], np.float32) * 2 + 1)
    assert _nodes(res)["two"]["kernel_launches"] == 6


def test_dynamic_and_optional_instances_bind_by_flattened_index(ge_run, write_graph, kernels, launch_opp):
    a, b, c, d, e = ([1.0, 2.0, 3.0], [10.0, 20.0, 30.0], [100.0, 200.0, 300.0], [0.5, 0.25, 0.125],
                     [-1.0, -2.0, -4.0])
    cases = {"d1": (["b"], None), "d2": (["b", "c", "d"], "e"), "d3": (["b", "c"], None), "d4": (["c"], "e")}
    nodes, outputs = [], []
    for name, (xs, bias) in cases.items():
        nodes.append(node(name, "LaunchDyn", ["a", xs, bias]))
        outputs += [f"{name}:{i}" for i in range(len(xs) + 1)]
    g = write_graph(nodes, outputs, inputs=[f32(n, v) for n, v in zip("abcde", (a, b, c, d, e))])
    res = ge_run(g, "--json", opp_path=(launch_opp["dynamic"],))
    assert res.returncode == 0, res.stderr
    values = {"a": a, "b": b, "c": c, "d": d, "e": e}
    A = np.array(a, np.float32)
    for name, (xs, bias) in cases.items():
        bias_v = np.array(values[bias], np.float32) if bias else np.zeros(3, np.float32)
        ys = [A * np.float32(i + 1) + np.array(values[x], np.float32) + bias_v for i, x in enumerate(xs)]
        for i, want in enumerate(ys):
            np.testing.assert_array_equal(res.load(f"{name}_{i}.npy"), want, err_msg=f"{name} ys[{i}]")
        np.testing.assert_allclose(res.load(f"{name}_{len(xs)}.npy"), sum(ys), rtol=1e-6, err_msg=f"{name} s")
        assert _nodes(res)[name]["mode"] == "task_plan"


def test_execute_and_declare_uses_the_plan(ge_run, write_graph, kernels, launch_opp, tmp_path, monkeypatch):
    log = tmp_path / "both.log"
    monkeypatch.setenv("GE_LAUNCH_BOTH_LOG", str(log))
    g = write_graph([node("both", "LaunchBoth", ["x"]), node("r", "ReluCpp", ["both:0"])], ["both:0", "r:0"],
                    inputs=[f32("x", [1.0, -5.0, 2.5])])
    res = ge_run(g, "--repeat", "4", "--json", opp_path=(launch_opp["both"],))
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("both_0.npy"), np.array([2.0, -4.0, 3.5], np.float32))
    n = _nodes(res)["both"]
    assert n["mode"] == "task_plan"
    assert n["calls"] == {"infer_meta": 1, "compile": 0, "declare_launch_args": 1, "execute": 0}
    assert n["kernel_launches"] == 4
    assert log.read_text().splitlines() == ["declare_launch_args"]
    assert res.json()["python_calls"] == 2


# ---- failures -------------------------------------------------------------------------------

FAILURES = {
    "missing_symbol": ("simple.so", "no_such_kernel", 1, ["not found in kernel_bin"]),
    "not_elf": ("garbage.bin", "add_one", 1, ["not an ELF shared object"]),
    "relocatable_object": ("reloc.o", "add_one", 1, ["not a shared object", "-shared -fPIC"]),
    "abort_one_block": ("crash.so", "abrt", 1, ["crashed", "SIGABRT"]),
    "abort_on_the_pool": ("crash.so", "abrt", 4, ["crashed", "SIGABRT"]),
    "segfault_one_block": ("crash.so", "segv", 1, ["crashed", "SIGSEGV"]),
    "segfault_on_the_pool": ("crash.so", "segv", 4, ["crashed", "SIGSEGV"]),
    # A crash while holding a lock (the heap's, or the kernel's own): reported,
    # then the process ends instead of deadlocking.
    "double_free": ("crash.so", "double_free", 1, ["crashed", "SIGABRT"]),
    "crash_holding_a_lock_on_the_pool": ("crash.so", "crash_holding_lock", 4, ["crashed", "SIGSEGV"]),
    "stack_overflow": ("crash.so", "overflow", 1, ["crashed", "SIGSEGV"]),
    "constructor_crash": ("ctor_crash.so", "k", 1, ["crashed while loading", "SIGSEGV"]),
    "truncated_elf": ("truncated.so", "add_one", 1, ["truncated"]),
    "libc_symbol_is_not_a_kernel": ("simple.so", "exit", 1, ["not found in kernel_bin"]),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_kernel_failures_name_the_node_and_kernel(ge_run, write_graph, kernels, launch_opp, case):
    kernel_file, kernel_name, block_dim, fragments = FAILURES[case]
    if case == "double_free" and os.environ.get("GE_SANITIZE"):
        # Under `make sanitize` ASan's free() catches the second free first and
        # ends the run with its own report: what matters is that the run fails.
        res = ge_run(write_graph([node("bad_node", "LaunchFile", ["x"], {"kernel_file": kernel_file,
                                                                          "kernel_name": kernel_name})],
                                 ["bad_node:0"], inputs=[f32("x", [1.0])]), opp_path=(launch_opp["file_kernel"],))
        assert res.returncode != 0 and "double-free" in res.stderr, res.stderr
        assert res.outputs() == []
        return
    g = write_graph([node("ok", "LaunchFile", ["x"], {"kernel_file": "simple.so", "kernel_name": "scale2"}),
                     node("bad_node", "LaunchFile", ["ok:0"],
                          {"kernel_file": kernel_file, "kernel_name": kernel_name, "block_dim": block_dim}),
                     node("r", "ReluCpp", ["bad_node:0"])],
                    ["ok:0", "r:0"], inputs=[f32("x", [float(i) for i in range(16)])])
    res = ge_run(g, "--repeat", "2", opp_path=(launch_opp["file_kernel"],))
    assert_failed_cleanly(res, "'bad_node'", "LaunchFile", f"kernel '{kernel_name}'", *fragments)


def test_a_crash_while_running_is_not_called_one_while_loading_whatever_the_names(ge_run, write_graph, kernels,
                                                                                  launch_opp):
    """Whether a crash happened while loading is what the backend was doing,
    not text in the kernel's label (here the node is named "kernel_bin")."""
    g = write_graph([node("kernel_bin", "LaunchFile", ["x"], {"kernel_file": "crash.so", "kernel_name": "segv"})],
                    ["kernel_bin:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(launch_opp["file_kernel"],))
    assert_failed_cleanly(res, "node 'kernel_bin' (LaunchFile): kernel 'segv' crashed: signal SIGSEGV in block 0")
    assert "while loading" not in res.stderr, res.stderr


def test_a_kernel_calling_exit_is_not_a_success(ge_run, write_graph, kernels, launch_opp):
    g = write_graph([node("bad_node", "LaunchFile", ["x"], {"kernel_file": "crash.so", "kernel_name": "calls_exit"})],
                    ["bad_node:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, opp_path=(launch_opp["file_kernel"],))
    assert res.returncode == 70, res.stderr
    assert "kernel called exit()" in res.stderr
    assert res.outputs() == []


def test_a_good_file_kernel_runs(ge_run, write_graph, kernels, launch_opp):
    """The control of the failure cases: the same graph with working kernels."""
    g = write_graph([node("ok", "LaunchFile", ["x"], {"kernel_file": "simple.so", "kernel_name": "scale2",
                                                      "block_dim": 5}),
                     node("inc", "LaunchFile", ["ok:0"], {"kernel_file": "simple.so", "kernel_name": "add_one"})],
                    ["inc:0"], inputs=[f32("x", [float(i) for i in range(16)])])
    res = ge_run(g, "--json", opp_path=(launch_opp["file_kernel"],))
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("inc_0.npy"), np.arange(16, dtype=np.float32) * 2 + 1)


def test_kernel_loading_leaves_no_files(ge_run, write_graph, kernels, launch_opp, tmp_path, monkeypatch):
    cwd, tmpdir, out = tmp_path / "cwd", tmp_path / "tmpdir", tmp_path / "out"
    cwd.mkdir()
    tmpdir.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    g = write_graph([node("ok", "LaunchFile", ["x"], {"kernel_file": "simple.so", "kernel_name": "scale2"}),
                     node("axpy", "AxpyKernelCustom", ["ok:0", "x"], {"alpha": 1.0}),
                     node("two", "LaunchTwo", ["x"])],
                    ["axpy:0", "two:0"], inputs=[f32("x", [1.0, 2.0, 3.0])])
    res = ge_run(g, "--repeat", "2", opp_path=("samples", launch_opp["file_kernel"], launch_opp["two_launches"]),
                 output_dir=out)
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(res.load("axpy_0.npy"), np.array([3.0, 6.0, 9.0], np.float32))
    assert sorted(os.listdir(cwd)) == []
    assert sorted(os.listdir(tmpdir)) == []  # the sample's compile cleans its build directory too
    assert sorted(os.listdir(kernels)) == ["crash.so", "ctor_crash.so", "dyn.so", "garbage.bin", "reloc.o",
                                           "simple.so", "truncated.so", "two.so"]


def test_sample_cache_miss_is_a_clear_error(ge_run, write_graph, launch_opp):
    g = write_graph([node("miss", "LaunchAxpyMiss", ["x", "x"], {"alpha": 0.5})], ["miss:0"],
                    inputs=[f32("x", [1.0, 2.0])])
    res = ge_run(g, opp_path=(launch_opp["cache_miss"],))
    assert_failed_cleanly(res, "'miss'", "declare_launch_args", "no kernel for shape [2]", "compile did not build one")


def test_json_reports_eager_nodes_without_launches(ge_run, write_graph, kernels, launch_opp):
    """A graph without declared ops reports mode "eager", no launches, no declarations."""
    g = write_graph([node("r", "ReluCpp", ["x"])], ["r:0"], inputs=[f32("x", [1.0])])
    res = ge_run(g, "--repeat", "3", "--json", opp_path=(launch_opp["file_kernel"],))
    assert res.returncode == 0, res.stderr
    r = _nodes(res)["r"]
    assert r["mode"] == "eager" and r["kernel_launches"] == 0 and r["calls"]["declare_launch_args"] == 0
    assert json.loads(res.stdout)["python_calls"] == 0
