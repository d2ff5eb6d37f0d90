"""The layered DAG layout (core/graph_layout.py): layering, no overlaps, edge routes, crossings, determinism, speed."""

import random
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from tilestudio.core.graph_layout import decomposition_graph, layered_layout


def synthetic_dag(n: int, seed: int = 0, window: int = 12):
    """A network-like DAG: each node reads 1-3 of the `window` nodes before it (skip connections included)."""
    r = random.Random(seed)
    nodes = [f"k{i}" for i in range(n)]
    edges = []
    for i in range(1, n):
        for j in sorted({r.randrange(max(0, i - window), i) for _ in range(r.choice([1, 1, 2, 3]))}):
            edges.append((nodes[j], nodes[i]))
    return nodes, edges


def assert_no_overlaps(layout, gap):
    for row in layout.layers:
        boxes = [layout.nodes[nid] for nid in row]
        for left, right in zip(boxes, boxes[1:]):
            assert right.x >= left.x + left.width + gap - 1e-6, (left, right)


def assert_routes_connect(layout):
    for e in layout.edges:
        src, dst = layout.nodes[e.source], layout.nodes[e.target]
        first, last = (e.points[-1], e.points[0]) if e.reversed else (e.points[0], e.points[-1])
        top, bottom = (dst, src) if e.reversed else (src, dst)
        assert first[1] == pytest.approx(top.y + top.height)
        assert top.x <= first[0] <= top.x + top.width
        assert last[1] == pytest.approx(bottom.y)
        assert bottom.x <= last[0] <= bottom.x + bottom.width
        ys = [p[1] for p in (reversed(e.points) if e.reversed else e.points)]
        assert ys == sorted(ys), "edges run downwards"


def test_empty_and_single():
    assert layered_layout([], []).nodes == {}
    layout = layered_layout(["a"], [], {"a": (100, 40)}, margin=10)
    box = layout.nodes["a"]
    assert (box.x, box.y, box.width, box.height) == (10, 10, 100, 40)
    assert layout.width == 120 and layout.height == 60


def test_chain_is_one_straight_column():
    nodes = list("abcde")
    layout = layered_layout(nodes, list(zip(nodes, nodes[1:])))
    assert layout.layers == [[n] for n in nodes]
    assert len({layout.nodes[n].center[0] for n in nodes}) == 1
    assert layout.crossings == 0
    assert_routes_connect(layout)


def test_diamond_centres_the_join_between_the_branches():
    layout = layered_layout("abcd", [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")], node_gap=20)
    assert layout.layers == [["a"], ["b", "c"], ["d"]]
    b, c, d = (layout.nodes[k].center[0] for k in "bcd")
    assert d == pytest.approx((b + c) / 2)
    assert_no_overlaps(layout, 20)
    assert_routes_connect(layout)


def test_long_edge_goes_around_the_nodes_in_between():
    nodes = list("abcd")
    edges = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]
    layout = layered_layout(nodes, edges)
    skip = next(e for e in layout.edges if (e.source, e.target) == ("a", "d"))
    assert len(skip.points) == 2 + 2 * 2  # two dummy layers, each crossed by a vertical segment
    for nid in "bc":
        box = layout.nodes[nid]
        for x, y in skip.points:
            assert not (box.x < x < box.x + box.width and box.y < y < box.y + box.height)
    assert_routes_connect(layout)


def test_a_late_source_sits_just_above_its_consumer():
    nodes = ["a", "b", "c", "w", "d"]
    layout = layered_layout(nodes, [("a", "b"), ("b", "c"), ("c", "d"), ("w", "d")])
    assert layout.nodes["w"].layer == layout.nodes["d"].layer - 1 == layout.nodes["c"].layer


def test_cycles_are_laid_out_with_the_closing_edge_reversed():
    layout = layered_layout("abc", [("a", "b"), ("b", "c"), ("c", "a")])
    assert set(layout.nodes) == {"a", "b", "c"}
    reversed_edges = [e for e in layout.edges if e.reversed]
    assert [(e.source, e.target) for e in reversed_edges] == [("c", "a")]
    assert_routes_connect(layout)


def test_unknown_endpoints_self_loops_and_duplicates_are_ignored():
    layout = layered_layout("ab", [("a", "b"), ("a", "b"), ("a", "a"), ("a", "zzz")])
    assert [(e.source, e.target) for e in layout.edges] == [("a", "b")]


def test_crossing_reduction_untangles_a_crossed_bipartite_graph():
    # Input order puts x under b and y under a: two crossings; one sweep fixes it.
    nodes = ["a", "b", "x", "y", "z"]
    edges = [("a", "y"), ("b", "x"), ("a", "z"), ("x", "z"), ("y", "z")]
    layout = layered_layout(nodes, edges)
    assert layout.crossings == 0
    assert layout.layers[1] == ["y", "x"]


def test_crossings_on_a_big_graph_are_no_worse_than_the_initial_order():
    nodes, edges = synthetic_dag(200, seed=3)
    assert layered_layout(nodes, edges).crossings <= layered_layout(nodes, edges, sweeps=0).crossings


def test_sizes_are_respected_and_nodes_do_not_overlap():
    nodes, edges = synthetic_dag(120, seed=1)
    r = random.Random(5)
    sizes = {n: (r.uniform(80, 260), r.uniform(40, 90)) for n in nodes}
    layout = layered_layout(nodes, edges, sizes, node_gap=24, layer_gap=40, margin=8)
    for nid, box in layout.nodes.items():
        assert (box.width, box.height) == pytest.approx(sizes[nid])
        assert box.x >= 8 - 1e-6 and box.y >= 8 - 1e-6
        assert box.x + box.width <= layout.width + 1e-6 and box.y + box.height <= layout.height + 1e-6
    assert_no_overlaps(layout, 24)
    assert_routes_connect(layout)
    for a, b in edges:
        assert layout.nodes[a].layer < layout.nodes[b].layer


def test_deterministic_across_runs_and_hash_seeds():
    nodes, edges = synthetic_dag(150, seed=2)
    first = layered_layout(nodes, edges)
    assert layered_layout(nodes, edges) == first
    script = ("import sys; sys.path.insert(0, %r); from test_graph_layout import synthetic_dag; "
              "from tilestudio.core.graph_layout import layered_layout; "
              "n, e = synthetic_dag(150, seed=2); L = layered_layout(n, e); "
              "print(repr(sorted((b.id, round(b.x, 6), round(b.y, 6)) for b in L.nodes.values())))")
    import pathlib

    here = str(pathlib.Path(__file__).resolve().parent)
    outputs = {subprocess.run([sys.executable, "-c", script % here], capture_output=True, text=True, check=True,
                              env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout for seed in ("1", "2")}
    assert len(outputs) == 1
    assert outputs.pop().strip() == repr(sorted((b.id, round(b.x, 6), round(b.y, 6)) for b in first.nodes.values()))


def test_decomposition_graph_follows_execution_order_and_dependencies():
    kernels = [SimpleNamespace(id="ln", dependencies=[]), SimpleNamespace(id="q", dependencies=["ln"]),
               SimpleNamespace(id="k", dependencies=["ln"]), SimpleNamespace(id="att", dependencies=["k", "q", "gone"])]
    dec = SimpleNamespace(kernels=kernels, execution_order=["ln", "q", "k", "att"])
    nodes, edges = decomposition_graph(dec)
    assert nodes == ["ln", "q", "k", "att"]
    assert edges == [("ln", "q"), ("ln", "k"), ("q", "att"), ("k", "att")]


def test_500_node_dag_is_laid_out_in_under_half_a_second():
    nodes, edges = synthetic_dag(500, seed=0)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        layout = layered_layout(nodes, edges)
        best = min(best, time.perf_counter() - start)
    assert len(layout.nodes) == 500 and len(layout.edges) == len(edges)
    assert best < 0.5, f"layout of 500 nodes took {best:.3f} s"
