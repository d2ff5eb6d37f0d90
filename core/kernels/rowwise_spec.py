"""Reading a row-wise spec: its one anchor op (the reduction / softmax / norm / scan), the elementwise prologue its
main input depends on (evaluated on input tiles), the epilogue (evaluated on output tiles), and the emission of
those fused elementwise ops."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..specs import KernelSpec, OpRecord, TensorSpec
from .base import Unsupported

if TYPE_CHECKING:
    from .rowwise_code import Code

ELEMENTWISE = ("elementwise_unary", "elementwise_binary", "elementwise_ternary")


@dataclass
class Parts:
    spec: KernelSpec
    anchor: OpRecord
    prologue: list[OpRecord]  # elementwise ops the anchor's input depends on (evaluated on input tiles)
    epilogue: list[OpRecord]  # the other elementwise ops (evaluated on output tiles)
    main: str  # graph value of the anchor's main input
    inputs: dict[str, TensorSpec]  # graph value → spec input
    getitems: dict[str, int]  # graph value of a getitem of the anchor's tuple result → its index

    @property
    def prologue_values(self) -> set[str]:
        return {op.node for op in self.prologue}

    def input_spec(self, value: str) -> TensorSpec | None:
        return self.inputs.get(value)


def ref_of(arg) -> str | None:
    return arg["ref"] if isinstance(arg, dict) and "ref" in arg else None


def split_spec(spec: KernelSpec, categories: set[str]) -> Parts:
    anchors = [op for op in spec.ops if op.category in categories]
    if len(anchors) != 1:
        raise Unsupported(f"{len(anchors)} {'/'.join(sorted(categories))} ops in one kernel")
    anchor = anchors[0]
    for op in spec.ops:
        if op is not anchor and op.category not in ELEMENTWISE:
            raise Unsupported(f"{op.op} ({op.category}) fused with {anchor.op}")
    main = ref_of(anchor.args[0]) if anchor.args else None
    if main is None:
        raise Unsupported(f"{anchor.op} without a tensor input")
    by_node = {op.node: op for op in spec.ops}
    needed: set[str] = set()
    stack = [main] + [v for v in anchor.inputs if v != main and v in by_node]
    while stack:
        value = stack.pop()
        if value in by_node and value not in needed:
            needed.add(value)
            stack.extend(by_node[value].inputs)
    prologue = [op for op in spec.ops if op.node in needed]
    epilogue = [op for op in spec.ops if op is not anchor and op.node not in needed]
    return Parts(spec, anchor, prologue, epilogue, main, {t.graph_value: t for t in spec.inputs if t.graph_value},
                 _getitem_indices(spec, anchor))


_GETITEM = re.compile(r"^\s*(\w+) = (\w+)\[(\d+)\]\s*$", re.M)


def _getitem_indices(spec: KernelSpec, anchor: OpRecord) -> dict[str, int]:
    """getitem values of the anchor's tuple result (their records are not in spec.ops; the reference has them)."""
    out: dict[str, int] = {}
    for name, src, idx in _GETITEM.findall(spec.reference):
        if src == anchor.node:
            out[name] = int(idx)
    for t in spec.outputs:  # reference names are python names; outputs map them to graph values
        if t.name in out and t.graph_value:
            out[t.graph_value] = out[t.name]
    return out


def emit_ops(ops: list[OpRecord], env: dict[str, str], load_side, code: Code) -> dict[str, str]:
    if not ops:
        return env
    from .expr import emit_elementwise

    return emit_elementwise(ops, env, load_side, code.lines, code.indent)


def as_float(var: str, code: Code) -> str:
    """A float32 view of a prologue result: comparisons give bool tiles (expr names them eb_*)."""
    if var.startswith("eb_"):
        code(f"{var}_f = {var}.astype(ct.float32)")
        return f"{var}_f"
    return var
