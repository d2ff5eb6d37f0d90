"""Gather-family binary searches: `torch.bucketize(x, boundaries)` and `torch.searchsorted(sorted_sequence, x)`
over a 1-D sorted tensor of M values. Each output element runs ceil(log2(M + 1)) steps of a static binary search
over [0, M], gathering one boundary per step (M is small and stays in L1/L2), and returns the first position whose
boundary is >= x (right / side="right": > x). NaN compares above every boundary (position M), as PyTorch.
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
    lo = c.tmp("ct.zeros((BR, BL), dtype=ct.int32)", "lo")
    hi = c.tmp(f"ct.full((BR, BL), {m}, dtype=ct.int32)", "hi")
    steps = max(1, m.bit_length())  # ceil(log2(M + 1)): enough halvings of [0, M]
    cmp = "<=" if right else "<"
    c.lines.append(f"    for _ in range({steps}):")
    c.lines.append(f"        mid = ({lo} + {hi}) // 2")
    c.lines.append(f"        bv = ct.gather({array_param(seq)}, (ct.minimum(mid, {m - 1}),)).astype(ct.float32)")
    c.lines.append(f"        up = (mid < {hi}) & (({_broadcast('bv')} {cmp} {xv}) | ({xv} != {xv}))")
    c.lines.append(f"        {lo} = ct.where(up, mid + 1, {lo})")
    c.lines.append(f"        {hi} = ct.where(up, {hi}, mid)")
    return lo


def _broadcast(v: str) -> str:
    return f"ct.broadcast_to({v}, (BR, BL))"


def bucketize(c) -> str:
    return _search(c, c.tensor("boundaries"), c.tensor("self"))


def searchsorted(c) -> str:
    return _search(c, c.tensor("sorted_sequence"), c.tensor("self"))


OPS = {"bucketize": bucketize, "searchsorted": searchsorted}
