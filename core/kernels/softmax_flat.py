"""softmax / log_softmax of long rows whose stride is not a multiple of 16 bytes (TUNING["softmax_flat"]), and of
16-byte rows that split rows would cut raggedly (["softmax_flat_aligned"]), read once through the flat tensor in
aligned tiles.

A row of 50257 float32 (GPT-2's vocabulary) starts 4 bytes past a 16-byte boundary on every other row, so the
element tiles of the row layout cannot use TMA or 128-bit accesses: the specialized sm_90 SASS of the split-row
softmax (softmax_split.py) loads and stores such rows with 128 LDG.E and 128 STG.E of 32 bits per thread, where
a 50256-float row gets 64 TMA tile loads and 48 STG.E.128. Here the tensor is one flat run of O * R elements cut
into blocks of K aligned tiles of T; block b takes the flat range [b*K*T, (b+1)*K*T), which (K*T <= R + 1)
touches at most two rows: ra = b*K*T // R and ra + 1 (TUNING["softmax_flat_*"]: T = 4096, K = 2). Each block

  1. takes an atomic ticket (blocks start in ticket order, as split_rows.py's),
  2. loads its K tiles into registers (elements past the tensor at -inf: the padding, or with
     TUNING["softmax_flat_tma"] zero padding, which lets tileiras load through TMA, and a mask on the tensor's
     last tile; the last block's slots wholly past the tensor load nothing and store nothing),
  3. reduces them to (max, sum of exponentials) for each of its two rows (elements at or past the flat index
     (ra + 1) * R belong to the second) and publishes the four as flagged status words,
  4. spins until every block touching rows ra and ra + 1 has published (at most W, a power of two), merges
     their statistics per row (a block's first-row pair counts for its first row, its second-row pair for the
     next), and
  5. stores its K tiles normalized by the statistics of each element's row, whole and aligned.

Every block carries K*T elements (no short last segment as in split rows of 13 chunks, 4 + 4 + 4 + 1), and
every flat tile is written by one block. Deadlock-free as split_rows.py: a block only waits for blocks of its
two rows, at most W - 1 tickets away, so W resident blocks always let the lowest waiting one finish.

Requirements (else the split or two-pass row forms): the reduced dim last, rows of more than one chunk, the
row stride not a multiple of 16 bytes (or 16-byte rows whose split rows would be ragged: _ragged_split), no fused
prologue or epilogue, one output in the input's dtype, and flat indices that fit int32. A length that is not a
multiple of 16 elements (an odd batch: 4095x50257) reads and writes its tiles through a prefix view of one, and
its last few elements element-wise (Tail).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from .base import KernelSource, off_16_bytes, pow2_at_least
from .rowwise import TUNING, cdiv, ct_dtype, load_hint
from .rowwise_values import FLOAT_DTYPES
from .split_rows import RELAXED, flag_word, plan, spin_read, status_workspace

if TYPE_CHECKING:
    from .rowwise import Layout, Parts, SameShapeGen

_NAMES = ("ma", "la", "mb", "lb")  # (max, sum of exp) of the block's first row, then of its second


def flat_plan(parts: Parts, layout: Layout) -> tuple[int, int] | None:
    """(tile T, tiles per block K) for a flat split softmax of these rows, or None where it does not apply."""
    spec = parts.spec
    x = parts.inputs.get(parts.main)
    if not TUNING["softmax_flat"] or x is None or x.dtype not in FLOAT_DTYPES or layout.kind != "row":
        return None
    R = layout.R
    if (layout.nch < 2 or (not off_16_bytes(x.dtype, R) and not _ragged_split(layout)) or parts.prologue
            or parts.epilogue or len(spec.outputs) != 1 or spec.outputs[0].dtype != x.dtype
            or spec.outputs[0].graph_value != parts.anchor.node):
        return None
    T = int(TUNING["softmax_flat_tile"])
    K = max(1, min(int(TUNING["softmax_flat_elems"]) // T, (R + 1) // T))  # K*T <= R + 1: at most two rows
    if T > R + 1 or (layout.O + 1) * R + K * T >= 2 ** 31:  # (the window's end: (ra + 2) * R)
        return None
    return T, K


def _ragged_split(layout: Layout) -> bool:
    """TUNING["softmax_flat_aligned"]: whether 16-byte rows would be split over blocks with a short last segment
    (50256 floats: 4, 4, 4 and 1 chunks of 4096, a row waiting for its slowest block), which the flat form
    balances."""
    if not TUNING["softmax_flat_aligned"]:
        return False
    split = plan(layout, TUNING["softmax_split_elems"], ragged=bool(TUNING["softmax_split_ragged"]))
    return split is not None and split[0] * split[1] != layout.nch


def window(R: int, KT: int) -> int:
    """Blocks that rows ra and ra + 1 touch, at most (from block ra*R // KT to ((ra+2)*R - 1) // KT), as a power
    of two."""
    return pow2_at_least((2 * R - 1) // KT + 2)


def generate_flat(gen: SameShapeGen, T: int, K: int, log: bool, safe: bool, exp) -> KernelSource:
    parts, L, kern = gen.parts, gen.L, gen.kernel
    x = parts.inputs[parts.main]
    O, R = L.O, L.R
    F, KT = O * R, K * T
    NB = cdiv(F, KT)
    W = window(R, KT)
    k = kern.body
    occupancy = TUNING["softmax_flat_occupancy"]
    if occupancy:
        kern.options["occupancy"] = int(occupancy)
    full = kern.tensor(f"v_{x.name}", f"v_{x.name}", prep=f"v_{x.name} = {x.name}.contiguous().reshape(-1)")
    (oname, out), = gen.out_views
    NT = cdiv(F, T)
    tail = F % 16  # elements past the largest multiple of 16: gathered into the last tile and scattered (Tail)
    last = Tail(full, f"p_{x.name}", oname, f"p_{out.name}", NT, T, F - tail) if tail else None
    view, store_view = (last.view, last.out_view) if last else (full, oname)
    if last:
        kern.tensor(last.view, f"v_{x.name}[:{F - tail}]")
    kern.tensor(oname, f"{out.name}.reshape(-1)")
    if last:
        kern.tensor(last.out_view, f"{out.name}.reshape(-1)[:{F - tail}]")
    ticket = kern.tensor("sm_ticket", "sm_ticket")
    status = {v: kern.tensor(f"st_{v}", f"sm_st_{v}") for v in _NAMES}
    hints = load_hint() + (
        "" if TUNING["split_chunk_tma"] is None else f", allow_tma={bool(TUNING['split_chunk_tma'])}")
    k(f"tid = ct.atomic_add({ticket}, 0, 1, {RELAXED})")
    k(f"ra = tid * {KT} // {R}")
    k(f"bound = (ra + 1) * {R}")  # flat index of row ra + 1's first element
    k(f"lane = ct.arange({T}, dtype=ct.int32)")
    past = [i for i in range(K) if (NB - 1) * K + i >= NT]  # slots wholly past the tensor in the last block
    tma = bool(TUNING["softmax_flat_tma"])  # zero padding (TMA loads) and a mask past the tensor; else -inf padding
    for i in range(K):
        tile = f"tid * {K} + {i}"
        load = (f"x{i} = ct.load({view}, index=({tile},), shape=({T},), "
                f"padding_mode=ct.PaddingMode.{'ZERO' if tma else 'NEG_INF'}{hints}).astype(ct.float32)")
        if i in past:  # (block-uniform branches)
            with k.block(f"if {tile} < {NT}:"):
                k(load)
            with k.block("else:"):
                k(f"x{i} = ct.full(({T},), -math.inf, dtype=ct.float32)")
        else:
            k(load)
        if last and i == (NT - 1) % K:
            last.merge(k, tile, f"x{i}")
        if tma and F % T and not last and i == (NT - 1) % K:  # the tensor's last tile, zero-padded: its tail to -inf
            with k.block(f"if {tile} == {NT - 1}:"):
                k(f"x{i} = ct.where(lane < {F % T}, x{i}, -math.inf)")
        k(f"cut{i} = bound - ({tile}) * {T}")  # the tile's elements from lane cut<i> on are row ra + 1's
    one = "ct.full((1,), {}, dtype=ct.float32)"
    k(f"ma = {one.format('-math.inf')}")
    k(f"mb = {one.format('-math.inf')}")
    for i in range(K):  # the row maxima: one reduction per tile, two for the tile a row boundary cuts
        _by_row(k, i, T, [f"ma = ct.maximum(ma, ct.max(x{i}, axis=0, keepdims=True))"],
                [f"mb = ct.maximum(mb, ct.max(x{i}, axis=0, keepdims=True))"],
                [f"ma = ct.maximum(ma, ct.max(ct.where(lane >= cut{i}, -math.inf, x{i}), axis=0, keepdims=True))",
                 f"mb = ct.maximum(mb, ct.max(ct.where(lane >= cut{i}, x{i}, -math.inf), axis=0, keepdims=True))"])
    k("ra_ref = ct.where(ma == -math.inf, 0.0, ma)")  # a row part of -inf only: its sum is 0 whatever the reference
    k("rb_ref = ct.where(mb == -math.inf, 0.0, mb)")
    k(f"la = {one.format('0.0')}")
    k(f"lb = {one.format('0.0')}")
    for i in range(K):
        _by_row(k, i, T, [f"la = la + ct.sum({exp(f'x{i} - ra_ref')}, axis=0, keepdims=True)"],
                [f"lb = lb + ct.sum({exp(f'x{i} - rb_ref')}, axis=0, keepdims=True)"],
                [f"e = {exp(f'x{i} - ct.where(lane >= cut{i}, rb_ref, ra_ref)')}",
                 f"la = la + ct.sum(ct.where(lane >= cut{i}, 0.0, e), axis=0, keepdims=True)",
                 f"lb = lb + ct.sum(ct.where(lane >= cut{i}, e, 0.0), axis=0, keepdims=True)"])
    for v in _NAMES:
        k(f"ct.atomic_xchg({status[v]}, (tid,), {flag_word('1', f'ct.sum({v})')}, {RELAXED})")
    # the blocks of rows ra and ra + 1, lanes past the last one repeating it
    k(f"first = ra * {R} // {KT}")
    k(f"last = ct.minimum(((ra + 2) * {R} - 1) // {KT}, {NB - 1})")
    k(f"wj = first + ct.arange({W}, dtype=ct.int32)")
    k("j = ct.minimum(wj, last)")

    spin_read(k, status, "(j,)")  # (every block of the window)
    k(f"rj = j * {KT} // {R}")  # each block's first row
    k("live = wj <= last")
    for r, row in (("0", "ra"), ("1", "ra + 1")):
        k(f"own{r} = live & (rj == {row})")  # blocks starting in the row: their first-row pair
        k(f"prev{r} = live & (rj + 1 == {row})")  # blocks starting in the row before: their second-row pair
        k(f"m{r} = ct.where(own{r}, a_ma, ct.where(prev{r}, a_mb, -math.inf))")
        k(f"l{r} = ct.where(own{r}, a_la, ct.where(prev{r}, a_lb, 0.0))")
        k(f"M{r} = ct.max(m{r})")
        if safe:  # a row of -inf gives zeros (exp(-inf - -inf) would be NaN)
            k(f"M{r} = ct.where(M{r} == -math.inf, 0.0, M{r})")
        k(f"S{r} = ct.sum(ct.where(m{r} == -math.inf, 0.0, l{r} * {exp(f'm{r} - M{r}')}))")
        if log:
            k(f"Z{r} = M{r} + ct.log(S{r})")
        else:
            k(f"Q{r} = 1.0 / S{r}")
    odt = ct_dtype(out.dtype)
    tma_out = TUNING["softmax_flat_store_tma"]
    store_hint = "" if tma_out is None else f", allow_tma={bool(tma_out)}"
    cast = "" if odt == "ct.float32" else f".astype({odt})"
    for i in range(K):
        def finish(r: str) -> list[str]:  # tile i's elements of row r ("0", "1", or "cut": by lane), stored
            pick = (lambda a, b: f"ct.where(lane >= cut{i}, {b}, {a})") if r == "cut" else (
                lambda a, b: b if r == "1" else a)
            if log:
                lines = [f"y = x{i} - {pick('Z0', 'Z1')}"]
            else:
                lines = [f"y = {exp(f'x{i} - ' + pick('M0', 'M1'))} * {pick('Q0', 'Q1')}"]
                if safe:
                    lines.append(f"y = ct.where({pick('S0', 'S1')} == 0.0, 0.0, y)")
            store = f"ct.store({store_view}, index=(tid * {K} + {i},), tile=y{cast}{store_hint})"
            if last and i == (NT - 1) % K:
                return lines + [lambda k: last.store(k, f"tid * {K} + {i}", f"y{cast}", store)]
            return lines + [store]

        with k.block(f"if tid * {K} + {i} < {NT}:") if i in past else contextlib.nullcontext():
            _by_row(k, i, T, finish("0"), finish("1"), finish("cut"))
    wrapper = status_workspace("sm", gen.device, NB, _NAMES)
    what = "log_softmax" if log else "softmax"
    why = "a stride off 16 bytes" if off_16_bytes(x.dtype, R) else "ragged as split rows"
    doc = (f"{', '.join(gen.spec.operations)}: {what} over the last dim of {list(parts.anchor.output)}: rows of "
           f"{R} ({why}) read once as the flat tensor in aligned tiles of {T}, {K} per block "
           f"({NB} blocks, each touching at most two rows), (max, sum of exp) per row merged through atomics "
           f"over windows of {W} blocks")
    return gen.finish(doc, grid=(NB,), extra_lines=wrapper)


def _by_row(k, i: int, T: int, first: list[str], second: list[str], both: list[str]) -> None:
    """Lines for tile `i` wholly in the block's first row, wholly in the second (or past the tensor), or cut by
    the row boundary at lane cut<i> (a block-uniform branch)."""
    for header, lines in ((f"if cut{i} >= {T}:", first), (f"elif cut{i} <= 0:", second), ("else:", both)):
        with k.block(header):
            for line in lines:
                line(k) if callable(line) else k(line)


class Tail:
    """A flat tensor whose length F is not a multiple of 16 elements: tileiras vectorizes the tiles of a 1D view
    only when its length is (sm_90: softmax 8x50257 float32 loads with 128 LDG.E of 32 bits, 16x50257 with 32
    LDG.E.128), so every tile is loaded from and stored to a prefix view of the largest multiple of 16, P
    elements, exactly as an even length's; then the last tile (NT - 1) alone, in a block-uniform branch after
    its load or store, gathers or scatters its lanes from P on through the whole view (the gather's -inf past
    F, the scatter dropping indices past it). `lane` is the kernel's arange over a tile."""

    def __init__(self, full: str, view: str, out_full: str, out_view: str, NT: int, T: int, P: int):
        self.full, self.view, self.out_full, self.out_view = full, view, out_full, out_view
        self.NT, self.T, self.first = NT, T, P - (NT - 1) * T  # the last tile's first lane past the prefix

    def merge(self, k, tile: str, var: str) -> None:
        """After `var`'s load of `tile` from the prefix: for the last tile, its lanes past the prefix gathered."""
        with k.block(f"if {tile} == {self.NT - 1}:"):
            k(f"{var} = ct.where(lane >= {self.first}, ct.gather({self.full}, {(self.NT - 1) * self.T} + lane, "
              f"mask=lane >= {self.first}, padding_value=-math.inf).astype(ct.float32), {var})")

    def store(self, k, tile: str, value: str, store: str) -> None:
        """`store` (to the prefix), then for the last tile its lanes past the prefix scattered."""
        k(store)
        with k.block(f"if {tile} == {self.NT - 1}:"):
            k(f"ct.scatter({self.out_full}, {(self.NT - 1) * self.T} + lane, {value}, mask=lane >= {self.first})")
