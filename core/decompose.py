"""PyTorch's own decompositions for captured ops the catalog does not know (runs in the capture child; imports torch).

Composite ops such as `torch.kron`, `tensordot`, `trace`, `addr`, `isclose`, `float_power`, `deg2rad`, `renorm`,
`linalg.matrix_norm`, `multi_dot`, `affine_grid` or `multi_margin_loss` have no kernel generator of their own, but
PyTorch defines each in terms of ops that have one (views, mm, mul, sum, where, ...). Rather than hand-writing a
lowering per op, the exported program is re-traced with PyTorch's decomposition table restricted to exactly those
ops (`torch.export.default_decompositions()`, the table `torch.export` itself maintains): every op the catalog
covers is kept as captured, so a graph without such ops is returned unchanged (the same object).

The decomposed nodes carry `from_node` provenance; each gets the stack trace (the user's file:line) and module
path of the op it came from, so diagnostics and the source pane still point at the user's line.
"""

from __future__ import annotations

from typing import Any

import torch

from .catalog import base_op, catalog_ops

# Ops outside the catalog that core/lowering.py rewrites itself (kept as captured).
_LOWERED = frozenset({"glu"})
_MAX_ROUNDS = 4


def _op_name(target: Any) -> str | None:
    if isinstance(target, torch._ops.OpOverload) and target.namespace == "aten":
        return target._schema.name.split("::", 1)[1]
    return None


def uncovered_ops(ep: torch.export.ExportedProgram) -> set:
    """ATen overloads in the graph that neither the catalog nor the lowering pass knows."""
    known = catalog_ops()
    out = set()
    for node in ep.graph.nodes:
        name = _op_name(node.target) if node.op == "call_function" else None
        if name is not None and base_op(name) not in known and name not in _LOWERED:
            out.add(node.target)
    return out


def _origin(node: torch.fx.Node) -> str | None:
    """The name of the node of the graph before decomposition that `node` came from."""
    chain = node.meta.get("from_node") or []
    if not chain:
        return None
    source = chain[0]
    while getattr(source, "from_node", None):
        source = source.from_node[0]
    return getattr(source, "name", None)


def decompose_uncovered(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """`ep` with every uncovered op that PyTorch can decompose decomposed (repeatedly, as a decomposition may
    produce further uncovered ops); ops without a decomposition stay and become unsupported specs."""
    table_all = None
    tried: set = set()
    for _ in range(_MAX_ROUNDS):
        todo = uncovered_ops(ep) - tried
        if not todo:
            break
        if table_all is None:
            table_all = torch.export.default_decompositions()
        table = {op: table_all[op] for op in sorted(todo, key=str) if op in table_all}
        tried |= todo
        if not table:
            break
        before = {n.name: n.meta for n in ep.graph.nodes}
        ep = ep.run_decompositions(table)
        _restore_provenance(ep, before)
    return ep


def _restore_provenance(ep: torch.export.ExportedProgram, before: dict[str, dict]) -> None:
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        meta = before.get(_origin(node) or node.name)
        if meta is None:
            continue
        for key in ("stack_trace", "nn_module_stack"):
            if not node.meta.get(key) and meta.get(key):
                node.meta[key] = meta[key]
