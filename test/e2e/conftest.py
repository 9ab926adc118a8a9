"""Fixtures of the ge-run end-to-end tests.

Environment:
  GE_RUN         path of the ge-run binary (required: every test fails without it)
  GE_SOURCE_DIR  the source checkout (default: two levels above this file)

Run: GE_RUN=build/bin/ge-run GE_SOURCE_DIR=$PWD /usr/bin/python3 -m pytest -q test/e2e
Nothing is skipped: a missing binary is a failure, not a skip.
"""
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import pytest

_THIS = Path(__file__).resolve()


def _source_dir() -> Path:
    env = os.environ.get("GE_SOURCE_DIR")
    return Path(env).resolve() if env else _THIS.parents[2]


@pytest.fixture(scope="session")
def source_dir() -> Path:
    d = _source_dir()
    if not (d / "share" / "examples" / "attention_block.json").is_file():
        pytest.fail(f"GE_SOURCE_DIR={d} is not the source checkout (no share/examples/attention_block.json)",
                    pytrace=False)
    return d


@pytest.fixture(scope="session")
def ge_run_bin() -> Path:
    value = os.environ.get("GE_RUN")
    if not value:
        pytest.fail("GE_RUN is not set: point it at the ge-run binary, e.g. GE_RUN=build/bin/ge-run",
                    pytrace=False)
    p = Path(value).resolve()
    if not p.is_file() or not os.access(p, os.X_OK):
        pytest.fail(f"GE_RUN={value} is not an executable file", pytrace=False)
    return p


@pytest.fixture(scope="session")
def opp(source_dir):
    """Opp folders by short name."""
    e2e = source_dir / "plugins" / "testing" / "e2e"
    return {
        "samples": str(source_dir / "plugins" / "samples"),
        "ops": str(e2e / "ops"),
        "lifetime": str(e2e / "lifetime"),
        "numpy_main": str(e2e / "numpy_main"),
    }


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    out_dir: Path

    def outputs(self) -> List[str]:
        """Names of the files in the output directory ([] when it is absent)."""
        return sorted(os.listdir(self.out_dir)) if self.out_dir.exists() else []

    def load(self, name: str):
        import numpy as np
        return np.load(self.out_dir / name)

    def json(self) -> dict:
        return json.loads(self.stdout)


@pytest.fixture
def ge_run(ge_run_bin, tmp_path, opp):
    """ge_run(graph, *args, opp_path=..., env_opp=None, log_level=None) -> RunResult.

    Runs ge-run with --output-dir tmp/out. ``opp_path`` (list of opp names or
    paths, or None to omit --opp-path) defaults to the samples and the e2e ops.
    ``env_opp`` sets ASCEND_CUSTOM_OPP_PATH (otherwise it is removed).
    """
    counter = [0]

    def run(graph, *args, opp_path=("samples", "ops"), env_opp: Optional[str] = None,
            log_level: Optional[str] = None, output_dir: Optional[Path] = None, timeout=120) -> RunResult:
        counter[0] += 1
        out = output_dir if output_dir is not None else tmp_path / f"out{counter[0]}"
        cmd = [str(ge_run_bin)]
        if graph is not None:
            cmd.append(str(graph))
        if opp_path is not None:
            cmd += ["--opp-path", ":".join(opp.get(p, p) for p in opp_path)]
        cmd += ["--output-dir", str(out)]
        if log_level is not None:
            cmd += ["--log-level", log_level]
        cmd += list(args)
        env = dict(os.environ)
        env.pop("ASCEND_CUSTOM_OPP_PATH", None)
        env.pop("GE_LOG_LEVEL", None)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if env_opp is not None:
            env["ASCEND_CUSTOM_OPP_PATH"] = env_opp
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                           errors="backslashreplace")
        return RunResult(p.returncode, p.stdout, p.stderr, out)

    return run


@pytest.fixture
def write_graph(tmp_path):
    """write_graph(nodes, outputs, inputs=(), name="g", **extra) -> Path of a graph file in tmp."""
    counter = [0]

    def write(nodes, outputs, inputs=(), name="g", raw: Optional[str] = None, **extra) -> Path:
        counter[0] += 1
        path = tmp_path / f"{name}_{counter[0]}.json"
        if raw is not None:
            path.write_text(raw)
            return path
        g = {"name": name, "inputs": list(inputs), "nodes": list(nodes), "outputs": list(outputs)}
        g.update(extra)
        path.write_text(json.dumps(g, indent=1))
        return path

    return write

