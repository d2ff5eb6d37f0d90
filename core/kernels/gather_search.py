"""Gather-family binary searches: `torch.bucketize(x, boundaries)` and `torch.searchsorted(sorted_sequence, x)`
over a 1-D sorted tensor of M values. Each output element runs ceil(log2(M + 1)) steps of a static binary search
over [0, M], gathering one boundary per step (M is small and stays in L1/L2), and returns the first position whose
boundary is >= x (right / side="right": > x), as the power-of-two steps of a branchless lower bound, unrolled.
NaN compares above every boundary (position M), as PyTorch.
"""

from __future__ import annotations

from .base import Unsupported
from .indexing import array_param


def _search(c, seq, x) -> str:
    if len(seq.shape) != 1:
        raise Unsupported(f"{c.rec.target}: a sorted sequence of rank {len(seq.shape)} (1-D boundaries only)")
    if c.args.get("sorter") is not None:
        raise Unsupported(f"{c.rec.target} with a sorter")
    right = bool(c.args.get("right", False)) or c.args.get("side") == "right"
    m = seq.shape[0]
    xv = c.tmp(f"{c.gather(x, c.coords)}.astype(ct.float32)", "sx")
    nan = c.tmp(f"{xv} != {xv}", "nan")
    cmp = "<=" if right else "<"
    # Branchless lower bound: pos counts the boundaries known to be below x; each static step s (a power of two,
    # largest first) asks whether the s-th boundary after pos is too: one gather, one compare, one select.
    # Where M + 1 is a power of two (1023 boundaries) no step can run past the end; otherwise it is clamped.
    pos = c.tmp("ct.zeros((BR, BL), dtype=ct.int32)", "pos")
    exact = (m + 1) & m == 0
    s = 1 << (m.bit_length() - 1) if m else 0  # the largest power of two <= M (no step over no boundaries)
    while s:
        idx = f"{pos} + {s - 1}" if exact else f"ct.minimum({pos} + {s - 1}, {m - 1})"
        bv = f"ct.gather({array_param(seq)}, ({idx},), check_bounds=False).astype(ct.float32)"
        inside = "" if exact else f"({pos} + {s} <= {m}) & "
        c.lines.append(f"    {pos} = ct.where({inside}(({bv} {cmp} {xv}) | {nan}), {pos} + {s}, {pos})")
        s //= 2
    return pos


def bucketize(c) -> str:
    return _search(c, c.tensor("boundaries"), c.tensor("self"))


def searchsorted(c) -> str:
    return _search(c, c.tensor("sorted_sequence"), c.tensor("self"))


OPS = {"bucketize": bucketize, "searchsorted": searchsorted}
