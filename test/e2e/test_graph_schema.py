"""The graph file schema (share/schemas/graph.schema.json) against every
shipped example and against graphs ge-run refuses; the ge-run --json schema
against a real run."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from json_schemas import errors, validate  # noqa: E402


def examples(source_dir):
    return sorted((source_dir / "share" / "examples").glob("*.json"))


def test_every_example_graph_matches_the_schema(source_dir):
    found = examples(source_dir)
    assert found, "no example graph"
    for g in found:
        validate(json.loads(g.read_text()), "graph")


def small_graph():
    """A graph with inline data that ge-run runs (the base of the edits below)."""
    return {"name": "small",
            "inputs": [{"name": "x", "dtype": "float32", "shape": [2], "data": [1.0, -2.0]}],
            "nodes": [{"name": "r", "op_type": "ReluCpp", "inputs": ["x"]}],
            "outputs": ["r:0"]}


def test_the_small_graph_runs_and_matches_the_schema(write_graph, ge_run):
    g = small_graph()
    assert errors(g, "graph") == []
    res = ge_run(write_graph(None, None, raw=json.dumps(g)))
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("edit", [
    lambda g: g.update(surprise=1),                           # unknown top-level field
    lambda g: g["nodes"][0].update(op="X"),                   # unknown node field
    lambda g: g.update(outputs=[]),                           # no output
    lambda g: g["inputs"][0].update(file="x.npy"),            # both "file" and "data"
    lambda g: g["inputs"][0].update(dtype="float33"),         # unknown dtype
    lambda g: g["nodes"][0].update(name="a/b"),               # a name with '/'
    lambda g: g["inputs"][0].update(shape=[-2]),              # a negative dim
    lambda g: g.update(options={"tiling.max_block_dim": 32}),  # an option that is no string
], ids=["top-field", "node-field", "no-outputs", "file-and-data", "dtype", "name", "shape", "option"])
def test_the_graph_schema_rejects_graphs_ge_run_refuses(write_graph, ge_run, edit):
    g = small_graph()
    edit(g)
    assert errors(g, "graph")
    # ge-run's own reader (framework/src/engine/graph.cc) refuses the same graph
    res = ge_run(write_graph(None, None, raw=json.dumps(g)))
    assert res.returncode != 0


def test_ge_run_json_summary_matches_the_schema(ge_run, source_dir):
    res = ge_run(source_dir / "share" / "examples" / "attention_block.json", "--json", opp_path=("samples",))
    assert res.returncode == 0, res.stderr
    s = res.json()
    validate(s, "ge-run")
    assert s["plugins"] and s["nodes"]
    bad = json.loads(json.dumps(s))
    bad["nodes"][0]["mode"] = "lazy"
    assert errors(bad, "ge-run")
