"""rotate_half inside an elementwise kernel (fusion rule R9, core/rotate_half.py).

A spec's slice, slice, neg, cat quadruple over an input x becomes one float32 tile of the flat block: element j of
each row of 2H is -x[j + H] for j < H, x[j - H] after. Two ways to build it:
  - shuffle: x is read whole by the block (a "full" operand), H is a power of two and rows do not straddle blocks
    (BLOCK a multiple of 2H): the tile of x already in registers is reshaped to (rows, 2, H), its halves extracted,
    swapped (the first negated) and concatenated back: no second read;
  - gather: otherwise (H = 40 for a head dim of 80, or an x broadcast over the iteration space) x is gathered at
    the rotated flat offsets, each lane's row start plus (j + H) mod 2H, and the first half negated. The lanes
    read what the block's own load of x just brought into L1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..op_values import spec_lookup
from ..rotate_half import RotateHalf, match
from ..specs import KernelSpec, OpRecord
from .base import Unsupported
from .indexing import MEMORY_TUNING


@dataclass(frozen=True)
class Rotation:
    m: RotateHalf
    shuffle: bool  # build it from the x tile in registers (else gather)


def split(spec: KernelSpec) -> tuple[list[RotateHalf], list[OpRecord]]:
    """The rotate_halfs among the spec's ops and the remaining (elementwise) ops, in order. Every cat must close
    a rotate_half of a spec input whose halves and negation nothing else reads."""
    lookup = spec_lookup(spec)
    inputs = {t.graph_value or t.name for t in spec.inputs if t.role != "scalar"}
    found: list[RotateHalf] = []
    for r in spec.ops:
        if r.op != "cat":
            continue
        m = match(r.node, r.args, lookup)
        if m is None:
            raise Unsupported(f"{r.target}: a concatenation inside an elementwise kernel that is not rotate_half")
        if m.x not in inputs:
            raise Unsupported(f"{r.target}: rotate_half of {m.x}, which is not an input of the kernel")
        found.append(m)
    inner = {n for m in found for n in (m.lo, m.hi, m.neg, m.cat)}
    rest = [r for r in spec.ops if r.node not in inner]
    private = inner - {m.cat for m in found}
    outputs = {t.graph_value or t.name for t in spec.outputs}
    for r in rest:
        if private & set(r.inputs):
            raise Unsupported(f"{r.target}: reads a half of a rotate_half")
    if private & outputs:
        raise Unsupported("a half of a rotate_half is an output of the kernel")
    return found, rest


def emit(rot: Rotation, index: int, x_var: str, x_arr: str, x_cast: str, block: int,
         rotated_index: Callable[[str], str], lines: list[str], ind: str) -> str:
    """Append the lines building rotate_half(x) as a float32 (BLOCK,) tile; returns its variable. `x_var` is the
    block's float32 tile of x (shuffle), `x_arr`/`x_cast` the array parameter and its cast suffix (gather),
    `rotated_index(offsets_var)` the gather index of x for flat offsets held in that variable."""
    h, d, v = rot.m.half, 2 * rot.m.half, f"rot_{index}"
    if rot.shuffle:
        rows = block // d
        lines.append(f"{ind}{v}_x = ct.reshape({x_var}, ({rows}, 2, {h}))")
        lines.append(f"{ind}{v}_lo = ct.extract({v}_x, index=(0, 0, 0), shape=({rows}, 1, {h}))")
        lines.append(f"{ind}{v}_hi = ct.extract({v}_x, index=(0, 1, 0), shape=({rows}, 1, {h}))")
        lines.append(f"{ind}{v} = ct.reshape(ct.cat((-{v}_hi, {v}_lo), 1), ({block},))")
        return v
    lines.append(f"{ind}{v}_j = offs % {d}")
    lines.append(f"{ind}{v}_offs = offs - {v}_j + ({v}_j + {h}) % {d}")
    lines.append(f"{ind}{v}_g = ct.gather({x_arr}, {rotated_index(f'{v}_offs')}){x_cast}")
    lines.append(f"{ind}{v} = ct.where({v}_j < {h}, -{v}_g, {v}_g)")
    return v


def plan(found: list[RotateHalf], x_full: Callable[[str], bool], block: int) -> list[Rotation]:
    """Shuffle where x is a full operand, H a power of two and BLOCK a multiple of 2H; gather elsewhere."""
    shuffle = MEMORY_TUNING["elementwise_rotate_shuffle"]
    return [Rotation(m, shuffle and x_full(m.x) and m.half & (m.half - 1) == 0 and block % (2 * m.half) == 0)
            for m in found]
