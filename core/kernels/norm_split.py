"""Norm rows too long for one block's registers, read once (TUNING["norm_split_elems"]): layer / rms / instance
norm rows and group norm groups split over cooperating blocks (split_rows.py), each folding its chunks into
(count, mean, M2) or a sum of squares, merged across the row's segments with Chan's formula."""

from __future__ import annotations

import contextlib

from .rowwise import TUNING, Kernel
from .rowwise_values import flit
from .split_rows import SplitRow, plan


def split_plan(norm) -> tuple[int, int] | None:
    """(segments, chunks per segment) of a long norm row (split_rows.plan), when the prologue's tile can stand
    for the chunk between the statistics and the normalizing (SameShapeGen.resident_ok) and, for group norm
    groups, TUNING["norm_split_groups"] is set; else None."""
    if not norm.gen.resident_ok() or (norm.kind == "group" and not TUNING["norm_split_groups"]):
        return None
    return plan(norm.L, TUNING["norm_split_elems"], ragged=bool(TUNING["norm_split_ragged"]))


def emit_split_row(norm, kern: Kernel) -> tuple[list[str], tuple[int]]:
    """The split-row body into `kern`; returns the wrapper's workspace lines and the grid."""
    L, k = norm.L, kern.body
    S, cps = norm.split
    names = norm.stat_names()
    split = SplitRow(kern, L, S, "norm", names)
    split.emit_coords()
    lanes = bool(TUNING["split_lane_stats"]) and L.valid() is None
    if not lanes:
        norm.init_stats(k)
    elif not norm.rms:  # the segment's count: its chunks in the row
        full = sum(not split.past_row(i, cps) for i in range(cps))
        k(f"n = ct.full({L.red_tile}, {flit(full * L.chunk_elems)}, dtype=ct.float32)")
    for i in range(cps):  # the segment's chunks, kept in registers
        c = split.chunk(i, cps)
        t, _, _ = norm.gen.load_tile(c, kern)
        k(f"res{i} = {t}")
        # a short last segment's repeat of the row's last chunk: no statistics
        past = split.past_row(i, cps)
        with k.block(f"if in{i}:") if past else contextlib.nullcontext():
            if lanes:
                _fold_lanes(norm, k, i, past)
            else:
                norm.accumulate_chunk(kern, c, f"res{i}")
    if lanes:
        _lane_stats(norm, k, split, cps)
    split.publish()
    live = split.gather()
    zero = f"ct.full({L.red_tile}, 0.0, dtype=ct.float32)"
    if norm.rms:
        k(f"ss = {zero} + ct.sum(ct.where({live}, a_ss, 0.0))")
    else:  # Chan's merge of the segments' (count, mean, M2)
        k(f"s_n = ct.where({live}, a_n, 0.0)")
        k("s_mu = ct.sum(s_n * a_mean) / ct.sum(s_n)")
        k("s_d = a_mean - s_mu")
        k(f"m2 = {zero} + ct.sum(ct.where({live}, a_m2 + s_n * s_d * s_d, 0.0))")
        k(f"mean = {zero} + s_mu")
    norm.emit_rstd(k)
    for i in range(cps):
        ctx = norm.gen.tile_ctx(f"c{i}", kern)
        norm.finish_tile(kern, {norm.parts.main: f"res{i}"}, ctx, f"c{i}", f"res{i}")
    return split.workspace(norm.gen.device), split.grid()


def _fold_lanes(norm, k, i: int, past: bool) -> None:
    """TUNING["split_lane_stats"]: add chunk `i` to the lane-wise sum (of squares, for rms); a slot `past` the
    row (emitted inside its `if in<i>:`) adds its count too."""
    term = f"res{i} * res{i}" if norm.rms else f"res{i}"
    k(f"acc = acc + {term}" if i else f"acc = {term}")
    if past and not norm.rms:
        k(f"n = n + {flit(norm.L.chunk_elems)}")


def _lane_stats(norm, k, split: SplitRow, cps: int) -> None:
    """The segment's statistics from the lane-wise sum: the sum of squares, or the mean and then M2 as the sum
    of squared deviations from it over the chunks in registers (two reductions in all)."""
    ax = norm.L.axis
    if norm.rms:
        k(f"ss = ct.sum(acc, axis={ax}, keepdims=True)")
        return
    k(f"mean = ct.sum(acc, axis={ax}, keepdims=True) / n")
    for i in range(cps):
        with k.block(f"if in{i}:") if split.past_row(i, cps) else contextlib.nullcontext():
            k(f"dv = res{i} - mean")
            k("dd = dd + dv * dv" if i else "dd = dv * dv")
    k(f"m2 = ct.sum(dd, axis={ax}, keepdims=True)")
