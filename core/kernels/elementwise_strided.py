"""The elementwise family's second kernel, for calls whose inputs arrive as strided views.

The flat kernel (elementwise.py) walks contiguous 1D views, so its wrapper copies a non-contiguous input first: a
query made by `view(b, s, h, d).transpose(1, 2)` in front of rotary embeddings costs a copy of q before the kernel
reads it again. This kernel instead tiles the iteration space as (lead..., S, D) with one (BS, DP) tile per block
(DP = D padded to a power of two, BS rows of the second-to-last dim) and reads every operand through its own
strides: `ct.load` of a (1, ..., 1, BS | 1, DP | 1) box at the block's coordinates, index 0 and extent 1 on the dims
where the operand is broadcast (a cos/sin table over batch and heads, an expanded mask), so nothing is gathered
and nothing is copied. Outputs are allocated contiguous, as the flat kernel's.

launch_<id> calls it when some tensor input is not contiguous at run time; contiguous calls keep the flat kernel.
Only for iteration spaces of rank >= 2 whose last dim D is at least `elementwise_strided_min_last` elements (any D
in spaces of at most `elementwise_strided_small_numel` elements, where each copy would be one more launch),
whose outputs all have the iteration shape, with no tril/triu (flat row/column indices) and rotate_halfs that a
(BS, 2, D / 2) shuffle builds (D a power of two); elsewhere the wrapper copies as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .base import pow2_at_least
from .indexing import MEMORY_TUNING


@dataclass(frozen=True)
class StridedPlan:
    shape: tuple[int, ...]  # the iteration space
    bs: int  # rows of the second-to-last dim per tile
    dp: int  # the last dim padded to a power of two

    @property
    def lead(self) -> tuple[int, ...]:
        return self.shape[:-2]

    @property
    def row_blocks(self) -> int:
        return -(-self.shape[-2] // self.bs)

    @property
    def grid(self) -> int:
        return math.prod(self.lead) * self.row_blocks

    def unchecked_blocks(self) -> str | None:
        """Which blocks load and store without bounds checks (MEMORY_TUNING["elementwise_strided_unchecked"]): "all"
        when the tiles cover the iteration space exactly, "inner" when only each lead index's last row block is
        partial (a second copy of the body behind one branch on the row block), None when the last dim is padded
        or the knob is off. H200, the Llama rotary over a transposed q: 0.089 -> 0.043 ms unchecked."""
        if not MEMORY_TUNING["elementwise_strided_unchecked"] or self.shape[-1] != self.dp:
            return None
        if self.shape[-2] % self.bs == 0:
            return "all"
        return "inner" if self.row_blocks > 1 else None


def plan(iter_shape: list[int], outputs_full: bool, indexed: bool,
         rotation_halves: list[int] | None) -> StridedPlan | None:
    """The tiling of the strided kernel, or None where it does not apply (see the module doc). `rotation_halves`:
    the half widths of the kernel's rotate_halfs, None where one rotates an x that is not read whole."""
    min_last = MEMORY_TUNING["elementwise_strided_min_last"]
    if not min_last or len(iter_shape) < 2 or not outputs_full or indexed or rotation_halves is None:
        return None
    d = iter_shape[-1]
    dp = pow2_at_least(d, 16)
    small = math.prod(iter_shape) <= int(MEMORY_TUNING["elementwise_strided_small_numel"] or 0)
    if (d < min_last and not small) or dp > 8192 or math.prod(iter_shape) >= 2 ** 31:
        return None
    if any(2 * h != d or h & (h - 1) for h in rotation_halves):
        return None
    bs = max(1, min(pow2_at_least(iter_shape[-2], 1), int(MEMORY_TUNING["elementwise_strided_tile_elems"]) // dp))
    return StridedPlan(tuple(iter_shape), bs, dp)


def coordinates(p: StridedPlan, ind: str) -> list[str]:
    """Lines setting `sb` (the row block) and `c0..` (the lead coordinates) from the block id."""
    lines = [f"{ind}pid = ct.bid(0)", f"{ind}sb = pid % {p.row_blocks}"]
    rest = f"pid // {p.row_blocks}"
    for i in reversed(range(len(p.lead))):
        lines.append(f"{ind}c{i} = ({rest}) % {p.lead[i]}" if i else f"{ind}c{i} = {rest}")
        rest = f"{rest} // {p.lead[i]}"
    return lines


def aligned(shape: list[int], rank: int) -> list[int]:
    return [1] * (rank - len(shape)) + list(shape)


def load(p: StridedPlan, arr: str, shape: list[int], cast: str, hint: str, unchecked: bool) -> str:
    """The (BS, DP) float32 tile of an operand of `shape` (broadcast to the iteration space) at the block;
    `unchecked`: the block's tile lies inside the iteration space."""
    a = aligned(shape, len(p.shape))
    index = [f"c{i}" if a[i] != 1 else "0" for i in range(len(p.lead))]
    index += ["sb" if a[-2] != 1 else "0", "0"]
    rows, cols = (p.bs if a[-2] != 1 else 1), (p.dp if a[-1] != 1 else 1)
    box = [1] * len(p.lead) + [rows, cols]
    tile = (f"ct.reshape(ct.load({arr}, index=({', '.join(index)},), shape=({', '.join(map(str, box))},), "
            f"{'check_bounds=False' if unchecked else 'padding_mode=ct.PaddingMode.ZERO'}{hint}), "
            f"({rows}, {cols})){cast}")
    return tile if (rows, cols) == (p.bs, p.dp) else f"ct.broadcast_to({tile}, ({p.bs}, {p.dp}))"


def store(p: StridedPlan, arr: str, tile: str, hint: str, unchecked: bool) -> str:
    index = ", ".join([f"c{i}" for i in range(len(p.lead))] + ["sb", "0"])
    box = ", ".join(map(str, [1] * len(p.lead) + [p.bs, p.dp]))
    check = ", check_bounds=False" if unchecked else ""
    return f"ct.store({arr}, index=({index},), tile=ct.reshape({tile}, ({box},)){check}{hint})"


def rotate(p: StridedPlan, index: int, x_var: str, half: int, lines: list[str], ind: str) -> str:
    """rotate_half of the (BS, D) tile x (D = 2 * half, a power of two): its halves swapped, the first negated."""
    v = f"rot_{index}"
    lines.append(f"{ind}{v}_x = ct.reshape({x_var}, ({p.bs}, 2, {half}))")
    lines.append(f"{ind}{v}_lo = ct.extract({v}_x, index=(0, 0, 0), shape=({p.bs}, 1, {half}))")
    lines.append(f"{ind}{v}_hi = ct.extract({v}_x, index=(0, 1, 0), shape=({p.bs}, 1, {half}))")
    lines.append(f"{ind}{v} = ct.reshape(ct.cat((-{v}_hi, {v}_lo), 1), ({p.bs}, {p.dp}))")
    return v


def view(p: StridedPlan, name: str, shape: list[int]) -> str:
    """The wrapper's argument for a tensor of `shape`: itself, or with leading size-1 dims up to the iteration
    rank (indexing with None: a view whatever its strides)."""
    k = len(p.shape) - len(shape)
    return name if k == 0 else f"{name}[{', '.join(['None'] * k)}]"
