"""Softmax / log_softmax rows too long for one block's registers, read once (TUNING["softmax_split_elems"]):
each row split over cooperating blocks (split_rows.py), each publishing its segment's max and sum of
exponentials (relative to that max), merged as max M = max m_j and sum S = sum l_j exp(m_j - M)."""

from __future__ import annotations

import contextlib

from .rowwise import TUNING
from .split_rows import SplitRow, plan


def split_plan(gen) -> tuple[int, int] | None:
    """(segments, chunks per segment) of a long softmax row, when the prologue's tile can stand for the chunk
    (SameShapeGen.resident_ok); else None."""
    if gen.L.kind != "row" or not gen.resident_ok():
        return None
    return plan(gen.L, TUNING["softmax_split_elems"], ragged=bool(TUNING["softmax_split_ragged"]))


def emit_split_row(sm, segments: int, cps: int, exp) -> tuple[list[str], tuple[int]]:
    """The split-row body of softmax generator `sm` (softmax._Softmax); `exp(arg)` writes an exponential.
    Returns the wrapper's workspace lines and the grid."""
    gen, L, k = sm.gen, sm.L, sm.k
    kern = gen.kernel
    split = SplitRow(kern, L, segments, "softmax", ["m", "l"])
    split.emit_coords()
    ax = L.axis
    lanes = bool(TUNING["split_lane_stats"])
    if not lanes:
        k(f"m = ct.full({L.red_tile}, -math.inf, dtype=ct.float32)")
    stats = []  # per slot: the tile its statistics see (a repeat of the row's last chunk: all -inf)
    for i in range(cps):  # the segment's chunks, kept in registers (padding lanes at -inf)
        xs, _, _ = sm.masked_input(split.chunk(i, cps))
        k(f"res{i} = {xs}")
        stats.append(f"ct.where(in{i}, res{i}, -math.inf)" if split.past_row(i, cps) else f"res{i}")
        if lanes:  # TUNING["split_lane_stats"]: lane-wise maxima, one reduction after the chunks
            k(f"ml = ct.maximum(ml, {stats[i]})" if i else f"ml = {stats[i]}")
        else:
            k(f"m = ct.maximum(m, ct.max({stats[i]}, axis={ax}, keepdims=True))")
    if lanes:
        k(f"m = ct.max(ml, axis={ax}, keepdims=True)")
    k("m_loc = ct.where(m == -math.inf, 0.0, m)")  # a segment of -inf only: its sum is 0 whatever the reference
    if lanes:
        k("ll = " + " + ".join(exp(f"{st} - m_loc") for st in stats))
        k(f"l = ct.sum(ll, axis={ax}, keepdims=True)")
    else:
        k(f"l = ct.full({L.red_tile}, 0.0, dtype=ct.float32)")
        for i in range(cps):
            k(f"l = l + ct.sum({exp(f'{stats[i]} - m_loc')}, axis={ax}, keepdims=True)")
    split.publish()
    live = split.gather()
    k(f"mx = ct.full({L.red_tile}, 0.0, dtype=ct.float32) + ct.max(ct.where({live}, a_m, -math.inf))")
    row_max = sm.row_max("mx")
    k("ref = ct.where(a_m == -math.inf, 0.0, a_m)")
    k(f"s = ct.full({L.red_tile}, 0.0, dtype=ct.float32) + "
      f"ct.sum(ct.where({live}, a_l * {exp(f'ref - ct.sum({row_max})')}, 0.0))")
    for i in range(cps):
        ctx = gen.tile_ctx(f"c{i}", kern)
        skip = split.past_row(i, cps) and TUNING["split_skip_repeats"]  # a repeat of the row's last chunk: no store
        with k.block(f"if in{i}:") if skip else contextlib.nullcontext():
            sm.finish_tile({gen.parts.main: f"res{i}"}, ctx, f"c{i}", f"res{i}", row_max, "s")
    return split.workspace(gen.device), split.grid()
