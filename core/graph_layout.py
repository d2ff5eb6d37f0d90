"""Layered (Sugiyama-style) layout of a directed graph, top to bottom: node boxes and edge polylines.

Steps: reverse back edges (so any input is a DAG), longest-path layering (sources then sink to just above their
first consumer, which keeps edges short), dummy nodes on edges that span several layers, barycentric crossing
reduction (alternating down/up sweeps, the best ordering seen is kept, crossings counted exactly per layer pair
with a Fenwick tree), then x coordinates by repeated weighted averaging towards neighbours: each layer's
placement is the closest one (least squares) to the averages that keeps the order and the minimum gaps, which
is an isotonic regression solved exactly by pool-adjacent-violators. Long edges get heavier weights so they run
straight. Pure Python, deterministic (ties break on input order), no Qt: the GUI measures node sizes and draws.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

DEFAULT_SIZE = (160.0, 60.0)
DUMMY_WIDTH = 10.0


@dataclass(frozen=True)
class NodeBox:
    id: str
    x: float  # top-left
    y: float
    width: float
    height: float
    layer: int
    order: int  # position within its layer, left to right

    @property
    def center(self) -> tuple[float, float]:
        return self.x + self.width / 2, self.y + self.height / 2


@dataclass(frozen=True)
class EdgeRoute:
    source: str
    target: str
    points: tuple[tuple[float, float], ...]  # from the source's bottom to the target's top (or back, if reversed)
    reversed: bool = False  # the edge pointed upwards: it closed a cycle


@dataclass
class GraphLayout:
    nodes: dict[str, NodeBox] = field(default_factory=dict)
    edges: list[EdgeRoute] = field(default_factory=list)
    layers: list[list[str]] = field(default_factory=list)  # real nodes per layer, left to right
    width: float = 0.0
    height: float = 0.0
    crossings: int = 0


def decomposition_graph(dec) -> tuple[list[str], list[tuple[str, str]]]:
    """Kernel ids in execution order and (dependency → kernel) edges of a `Decomposition`."""
    order = list(dec.execution_order) or [k.id for k in dec.kernels]
    known = set(order) | {k.id for k in dec.kernels}
    nodes = order + [k.id for k in dec.kernels if k.id not in set(order)]
    edges = [(dep, k.id) for k in dec.kernels for dep in k.dependencies if dep in known and dep != k.id]
    by_index = {kid: i for i, kid in enumerate(nodes)}
    edges.sort(key=lambda e: (by_index[e[1]], by_index[e[0]]))
    return nodes, edges


def layered_layout(nodes: Sequence[str], edges: Iterable[tuple[str, str]],
                   sizes: Mapping[str, tuple[float, float]] | None = None, *, layer_gap: float = 56.0,
                   node_gap: float = 28.0, sweeps: int = 8, margin: float = 0.0) -> GraphLayout:
    ids = list(dict.fromkeys(nodes))
    index = {nid: i for i, nid in enumerate(ids)}
    n = len(ids)
    if n == 0:
        return GraphLayout()
    sizes = sizes or {}
    widths = [float(sizes.get(nid, DEFAULT_SIZE)[0]) for nid in ids]
    heights = [float(sizes.get(nid, DEFAULT_SIZE)[1]) for nid in ids]

    pairs: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for a, b in edges:
        if a in index and b in index and a != b and (index[a], index[b]) not in seen:
            seen.add((index[a], index[b]))
            pairs.append((index[a], index[b]))
    flipped = _back_edges(n, pairs)
    dag = sorted({(b, a) if (a, b) in flipped else (a, b) for a, b in pairs})
    layer = _layers(n, dag)

    # Dummy nodes: an edge spanning k layers becomes a chain of k - 1 dummies.
    layer_of = list(layer)
    chains: dict[tuple[int, int], list[int]] = {}
    succ: list[list[int]] = [[] for _ in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    weight: dict[tuple[int, int], float] = {}

    def link(u: int, v: int) -> None:
        succ[u].append(v)
        pred[v].append(u)
        weight[(u, v)] = 8.0 if u >= n and v >= n else (2.0 if u >= n or v >= n else 1.0)

    for a, b in dag:
        chain = [a]
        for lay in range(layer[a] + 1, layer[b]):
            d = len(layer_of)
            layer_of.append(lay)
            succ.append([])
            pred.append([])
            chain.append(d)
        chain.append(b)
        for u, v in zip(chain, chain[1:]):
            link(u, v)
        chains[(a, b)] = chain
    total = len(layer_of)
    width_of = widths + [DUMMY_WIDTH] * (total - n)

    n_layers = max(layer_of) + 1
    rows: list[list[int]] = [[] for _ in range(n_layers)]
    for v in range(total):
        rows[layer_of[v]].append(v)
    rows = _initial_order(rows, pred, n)
    rows, crossings = _reduce_crossings(rows, pred, succ, sweeps)

    xs = _assign_x(rows, pred, succ, weight, width_of, node_gap)
    left = min(xs[v] - width_of[v] / 2 for v in range(total))
    xs = [x - left + margin for x in xs]

    tops, bands = [], []
    y = margin
    for row in rows:
        band = max((heights[v] for v in row if v < n), default=0.0)
        tops.append(y)
        bands.append(band)
        y += band + layer_gap
    height = y - layer_gap + margin

    layout = GraphLayout(crossings=crossings, height=height)
    for lay, row in enumerate(rows):
        real = [v for v in row if v < n]
        layout.layers.append([ids[v] for v in real])
        for order, v in enumerate(real):
            x = xs[v] - widths[v] / 2
            layout.nodes[ids[v]] = NodeBox(ids[v], x, tops[lay] + (bands[lay] - heights[v]) / 2, widths[v],
                                           heights[v], lay, order)
    layout.width = max(b.x + b.width for b in layout.nodes.values()) + margin
    out_port, in_port = _ports(rows, succ, pred, xs, width_of, n)
    for a, b in pairs:
        rev = (a, b) in flipped
        chain = chains[(b, a) if rev else (a, b)]
        top_box, bottom_box = layout.nodes[ids[chain[0]]], layout.nodes[ids[chain[-1]]]
        points = [(out_port[(chain[0], chain[1])], top_box.y + top_box.height)]
        for d in chain[1:-1]:
            points += [(xs[d], tops[layer_of[d]]), (xs[d], tops[layer_of[d]] + bands[layer_of[d]])]
        points.append((in_port[(chain[-2], chain[-1])], bottom_box.y))
        if rev:
            points.reverse()
        layout.edges.append(EdgeRoute(ids[a], ids[b], tuple(points), rev))
    return layout


# ---- steps ---------------------------------------------------------------------------------------------------
def _back_edges(n: int, pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """Edges that close a cycle in a depth-first search in input order (none for a DAG)."""
    out: list[list[int]] = [[] for _ in range(n)]
    for a, b in pairs:
        out[a].append(b)
    state = [0] * n  # 0 new, 1 on the stack, 2 done
    back: set[tuple[int, int]] = set()
    for root in range(n):
        if state[root]:
            continue
        stack = [(root, 0)]
        state[root] = 1
        while stack:
            v, i = stack[-1]
            if i < len(out[v]):
                stack[-1] = (v, i + 1)
                w = out[v][i]
                if state[w] == 1:
                    back.add((v, w))
                elif state[w] == 0:
                    state[w] = 1
                    stack.append((w, 0))
            else:
                state[v] = 2
                stack.pop()
    return back


def _layers(n: int, dag: list[tuple[int, int]]) -> list[int]:
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for a, b in dag:
        preds[b].append(a)
        succs[a].append(b)
        indeg[b] += 1
    ready = [v for v in range(n) if indeg[v] == 0]
    heapq.heapify(ready)
    topo = []
    while ready:
        v = heapq.heappop(ready)
        topo.append(v)
        for w in succs[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(ready, w)
    layer = [0] * n
    for v in topo:
        if preds[v]:
            layer[v] = max(layer[u] for u in preds[v]) + 1
    # A source used only late (a kernel reading model inputs) sits just above its first consumer, not at the top.
    for v in reversed(topo):
        if not preds[v] and succs[v]:
            layer[v] = max(0, min(layer[w] for w in succs[v]) - 1)
    return layer


def _initial_order(rows: list[list[int]], pred: list[list[int]], n: int) -> list[list[int]]:
    """Top layer in input order; each next layer by the mean position of its predecessors (ties: input order)."""
    out = [sorted(rows[0])]
    for row in rows[1:]:
        pos = {v: i for i, v in enumerate(out[-1])}

        def key(v: int) -> tuple[float, int]:
            ps = [pos[u] for u in pred[v] if u in pos]
            return (sum(ps) / len(ps) if ps else float("inf"), v if v < n else n + v)

        out.append(sorted(row, key=key))
    return out


def _reduce_crossings(rows: list[list[int]], pred: list[list[int]], succ: list[list[int]],
                      sweeps: int) -> tuple[list[list[int]], int]:
    best = [list(r) for r in rows]
    best_count = _count_all(best, succ)
    current = [list(r) for r in rows]
    for sweep in range(sweeps):
        if best_count == 0:
            break
        down = sweep % 2 == 0
        span = range(1, len(current)) if down else range(len(current) - 2, -1, -1)
        for lay in span:
            fixed = current[lay - 1] if down else current[lay + 1]
            neighbours = pred if down else succ
            pos = {v: i for i, v in enumerate(fixed)}
            row = current[lay]
            keys = []
            for i, v in enumerate(row):
                ps = [pos[u] for u in neighbours[v]]
                # A node without neighbours on that side keeps its place.
                keys.append((sum(ps) / len(ps) if ps else float(i), i))
            current[lay] = [row[i] for _, i in sorted(keys)]
        count = _count_all(current, succ)
        if count < best_count:
            best, best_count = [list(r) for r in current], count
    return best, best_count


def _count_all(rows: list[list[int]], succ: list[list[int]]) -> int:
    return sum(_count_pair(rows[i], rows[i + 1], succ) for i in range(len(rows) - 1))


def _count_pair(upper: list[int], lower: list[int], succ: list[list[int]]) -> int:
    """Edge crossings between two adjacent layers: inversions of the lower ends, edges sorted by upper end."""
    pos = {v: i for i, v in enumerate(lower)}
    ends = []
    for u in upper:
        ends.extend(sorted(pos[w] for w in succ[u] if w in pos))
    size = len(lower)
    tree = [0] * (size + 1)
    crossings = 0
    seen = 0
    for p in ends:
        # how many earlier edges end strictly to the right of p
        i, not_greater = p + 1, 0
        while i > 0:
            not_greater += tree[i]
            i -= i & -i
        crossings += seen - not_greater
        i = p + 1
        while i <= size:
            tree[i] += 1
            i += i & -i
        seen += 1
    return crossings


def _assign_x(rows: list[list[int]], pred: list[list[int]], succ: list[list[int]],
              weight: dict[tuple[int, int], float], width_of: list[float], node_gap: float) -> list[float]:
    xs = [0.0] * len(width_of)
    offsets: list[list[float]] = []
    for row in rows:
        off, acc = [], 0.0
        for i, v in enumerate(row):
            if i:
                prev = row[i - 1]
                gap = node_gap / 2 if _is_dummy(v, width_of, prev) else node_gap
                acc += (width_of[prev] + width_of[v]) / 2 + gap
            off.append(acc)
        offsets.append(off)
        centre = acc / 2
        for v, o in zip(row, off):
            xs[v] = o - centre
    order = list(range(len(rows)))
    plan = [(order[1:], True, False), (order[-2::-1], False, True)] * 3 + [(order, True, True)] * 2
    for span, use_pred, use_succ in plan:
        for lay in span:
            row, off = rows[lay], offsets[lay]
            targets, weights = [], []
            for v in row:
                total, mass = 0.0, 0.0
                if use_pred:
                    for u in pred[v]:
                        w = weight[(u, v)]
                        total += w * xs[u]
                        mass += w
                if use_succ:
                    for u in succ[v]:
                        w = weight[(v, u)]
                        total += w * xs[u]
                        mass += w
                if mass:
                    targets.append(total / mass)
                    weights.append(mass)
                else:
                    targets.append(xs[v])
                    weights.append(0.05)  # free nodes follow their row, with a light pull to stay put
            fitted = _isotonic([t - o for t, o in zip(targets, off)], weights)
            for v, y, o in zip(row, fitted, off):
                xs[v] = y + o
    return xs


def _is_dummy(v: int, width_of: list[float], prev: int) -> bool:
    # Two dummies side by side (parallel long edges) may sit closer than two nodes.
    return width_of[v] == DUMMY_WIDTH and width_of[prev] == DUMMY_WIDTH


def _isotonic(values: list[float], weights: list[float]) -> list[float]:
    """Weighted least-squares fit by a non-decreasing sequence (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, w in zip(values, weights):
        blocks.append([v, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks[-1]
            blocks[-1] = [(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2]
    out: list[float] = []
    for mean, _w, count in blocks:
        out.extend([mean] * int(count))
    return out


def _ports(rows: list[list[int]], succ: list[list[int]], pred: list[list[int]], xs: list[float],
           width_of: list[float], n: int) -> tuple[dict[tuple[int, int], float], dict[tuple[int, int], float]]:
    """Where each edge leaves its source's bottom and enters its target's top: spread, ordered by direction."""
    out_port: dict[tuple[int, int], float] = {}
    in_port: dict[tuple[int, int], float] = {}
    for row in rows:
        for v in row:
            for mapping, others, key in ((out_port, succ[v], lambda w, v=v: (v, w)),
                                         (in_port, pred[v], lambda u, v=v: (u, v))):
                ordered = sorted(others, key=lambda w: (xs[w], w))
                k = len(ordered)
                if v >= n or k <= 1:
                    for w in ordered:
                        mapping[key(w)] = xs[v]
                    continue
                step = min(14.0, width_of[v] * 0.6 / (k - 1))
                for i, w in enumerate(ordered):
                    mapping[key(w)] = xs[v] + (i - (k - 1) / 2) * step
    return out_port, in_port
