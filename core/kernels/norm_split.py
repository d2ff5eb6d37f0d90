"""Norm rows too long for one block's registers, read once (TUNING["norm_split_elems"]): layer / rms /
instance norm rows and group norm groups.

The two-pass form reads a long row twice (statistics, then normalize): 0.67 of a copy at best. Here each row is
split over S blocks, each holding its segment (whole chunks) in registers: a block takes an atomic ticket (row =
ticket // S, segment = ticket % S), loads its chunks, folds them into (count, mean, M2) or a sum of squares,
publishes those as 64-bit words (flag 1 << 32 | float32 bits: one atomic exchange publishes a value and its
flag together, so relaxed ordering suffices), spins until every segment of its row has published, merges them
(Chan's formula), and normalizes its chunks from registers. Deadlock-free because tickets are taken in start
order: while any row's segments are incomplete, the running blocks hold the lowest unfinished tickets, and
those are all of one row at most S - 1 of them, so a free slot starts the next ticket (the GPU holds far more
than S blocks). The ticket and the status words are zeroed per call by the wrapper.
"""

from __future__ import annotations

from .base import pow2_at_least
from .rowwise import TUNING, Kernel

RELAXED = "memory_order=ct.MemoryOrder.RELAXED"
LOW32 = "4294967295"


def split_plan(norm) -> tuple[int, int] | None:
    """(blocks per row S, chunks per block) for a long norm row (layer, rms, instance; a group norm's group, as
    flat rows or channel rows), or None: TUNING["norm_split_elems"] set, one row per tile, several chunks, a
    prologue the registers can stand for (resident_ok), at least two segments. Chunks per block: the largest
    divisor of the chunk count within the element budget."""
    elems, L = TUNING["norm_split_elems"], norm.L
    if not elems or L.kind not in ("row", "group") or L.BO != 1 or L.nch < 2:
        return None
    if not norm.gen.resident_ok():
        return None
    cps = max([d for d in range(1, L.nch + 1) if L.nch % d == 0 and d * L.chunk_elems <= int(elems)] or [1])
    segments = L.nch // cps
    return (segments, cps) if segments >= 2 else None


def _word(value: str) -> str:
    return f"(1 << 32) | (ct.bitcast(ct.sum({value}), ct.int32).astype(ct.int64) & {LOW32})"


def emit_split_row(norm, kern: Kernel) -> tuple[list[str], tuple[int]]:
    """The split-row body into `kern`; returns the wrapper's workspace lines and the grid."""
    L, k = norm.L, kern.body
    S, cps = norm.split
    if TUNING["norm_split_occupancy"]:
        kern.options["occupancy"] = int(TUNING["norm_split_occupancy"])
    names = norm.stat_names()
    ticket = kern.tensor("norm_ticket", "norm_ticket")
    status = {v: kern.tensor(f"st_{v}", f"norm_st_{v}") for v in names}
    k(f"tid = ct.atomic_add({ticket}, 0, 1, {RELAXED})")
    k(f"seg = tid % {S}")
    k(f"pid = tid // {S}")
    if L.kind == "group":  # group norm's channel rows: (group, channel row, position) tiles
        k("rows = pid + ct.arange(1, dtype=ct.int32)[:, None, None]")
        k(f"chans = ct.arange({L.BC}, dtype=ct.int32)[None, :, None]")
    else:
        k("rows = pid + ct.arange(1, dtype=ct.int32)[:, None]")
    norm.init_stats(k)
    for i in range(cps):  # the segment's chunks, kept in registers
        k(f"c{i} = seg * {cps} + {i}" if cps > 1 else f"c{i} = seg")
        t, _, _ = norm.gen.load_tile(f"c{i}", kern)
        k(f"res{i} = {t}")
        norm.accumulate_chunk(kern, f"c{i}", f"res{i}")
    for v in names:
        k(f"ct.atomic_xchg({status[v]}, (pid, seg), {_word(v)}, {RELAXED})")
    sp = pow2_at_least(S)
    k(f"sidx = ct.arange({sp}, dtype=ct.int32)")
    segs = "sidx" if sp == S else f"ct.minimum(sidx, {S - 1})"  # lanes past S re-read the last segment
    for v in names:
        k(f"w_{v} = ct.atomic_add({status[v]}, (pid, {segs}), 0, {RELAXED})")
    lowest = names[0] if len(names) == 1 else None
    if lowest is None:
        k("w_min = " + _nested_minimum([f"w_{v}" for v in names]))
        lowest = "min"
    with k.block(f"while ct.min(w_{lowest}) < 4294967296:"):  # a word without its flag: not yet published
        for v in names:
            k(f"w_{v} = ct.atomic_add({status[v]}, (pid, {segs}), 0, {RELAXED})")
        if len(names) > 1:
            k("w_min = " + _nested_minimum([f"w_{v}" for v in names]))
    for v in names:
        k(f"a_{v} = ct.bitcast((w_{v} & {LOW32}).astype(ct.int32), ct.float32)")
    live = f"sidx < {S}"
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
    dev = f"{norm.gen.device}.device"
    extra = [f"norm_ticket = torch.zeros((1,), dtype=torch.int32, device={dev})"]
    extra += [f"norm_st_{v} = torch.zeros(({L.O}, {S}), dtype=torch.int64, device={dev})" for v in names]
    return extra, (L.O * S,)


def _nested_minimum(terms: list[str]) -> str:
    out = terms[0]
    for t in terms[1:]:
        out = f"ct.minimum({out}, {t})"
    return out
