"""The order nodes run in (share/docs/host-design.md, "Engine semantics"): a node runs after its
producers; among the nodes that can run, the sweep order of the listing. That
is: sweeping the node list again and again, taking each node whose producers
are taken. The engine computes it in time linear in nodes and edges; these
tests hold it to the sweeps, on random graphs listed in random orders."""
import json
import random

import pytest


def sweeps(nodes):
    """The reference: the sweeps themselves (quadratic; small graphs only)."""
    names = [n["name"] for n in nodes]
    done, order = set(), []
    while len(order) < len(nodes):
        progressed = False
        for n in nodes:
            if n["name"] in done:
                continue
            if all(i.split(":")[0] in done for i in n["inputs"] if i != "x"):
                done.add(n["name"])
                order.append(n["name"])
                progressed = True
        assert progressed, "a cycle"
    assert sorted(order) == sorted(names)
    return order


def random_tree(rng, count):
    """`count` ReluCpp nodes, each reading the graph input or one earlier node, shuffled."""
    nodes = []
    for k in range(count):
        source = "x" if k == 0 or rng.random() < 0.2 else f"n{rng.randrange(k)}:0"
        nodes.append({"name": f"n{k}", "op_type": "ReluCpp", "inputs": [source]})
    rng.shuffle(nodes)
    return nodes


@pytest.mark.parametrize("seed", range(12))
def test_nodes_run_in_the_sweep_order_of_the_listing(ge_run, write_graph, seed):
    rng = random.Random(seed)
    nodes = random_tree(rng, rng.randint(2, 40))
    g = write_graph(nodes, [f"{nodes[0]['name']}:0"], inputs=[{"name": "x", "dtype": "float32", "shape": [1], "data": [1.0]}])
    res = ge_run(g, "--json", opp_path=None)
    assert res.returncode == 0, res.stderr
    ran = [n["name"] for n in json.loads(res.stdout)["nodes"]]
    assert ran == sweeps(nodes)


def test_a_long_chain_listed_consumer_first_runs(ge_run, write_graph):
    # 3000 nodes, the last producer listed first: every sweep would take one node.
    count = 3000
    nodes = [{"name": f"n{k}", "op_type": "ReluCpp", "inputs": [f"n{k - 1}:0" if k else "x"]} for k in range(count)]
    nodes.reverse()
    g = write_graph(nodes, [f"n{count - 1}:0"], inputs=[{"name": "x", "dtype": "float32", "shape": [1], "data": [-2.0]}])
    res = ge_run(g, "--json", opp_path=None)
    assert res.returncode == 0, res.stderr
    assert [n["name"] for n in json.loads(res.stdout)["nodes"]] == [f"n{k}" for k in range(count)]


def test_a_cycle_names_the_first_listed_node_not_taken(ge_run, write_graph):
    # b -> c -> b is a cycle; d waits on it; a is free. The first listed node
    # never taken is d.
    nodes = [{"name": "a", "op_type": "ReluCpp", "inputs": ["x"]},
             {"name": "d", "op_type": "ReluCpp", "inputs": ["c:0"]},
             {"name": "b", "op_type": "ReluCpp", "inputs": ["c:0"]},
             {"name": "c", "op_type": "ReluCpp", "inputs": ["b:0"]}]
    g = write_graph(nodes, ["a:0"], inputs=[{"name": "x", "dtype": "float32", "shape": [1], "data": [1.0]}])
    res = ge_run(g, opp_path=None)
    assert res.returncode != 0
    assert "node 'd'" in res.stderr and "the graph has a cycle through this node" in res.stderr, res.stderr
