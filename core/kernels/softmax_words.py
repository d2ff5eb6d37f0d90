"""softmax / log_softmax of whole rows through 64-bit words (TUNING["softmax_words"]): the row tile is loaded
and stored as int64 words of four 16-bit (or two float32) elements instead of element tiles.

A row whose length is not a power of two (1000 classes) leaves the element tile's last lanes outside the row, so
its stores are masked per element: the specialized sm_90 SASS of softmax 16384x1000 bf16 stores with 64
STG.E.U16 per thread. Viewed as words, the same row is 250 int64 words in a 256-word tile: the masked stores
are 8 bytes wide (16 STG.E.64), and the loads stay TMA tiles. The words are split into one float32 tile per
element position (bit operations, as the pooling pair views do), the row statistics combine the position tiles,
and each output word is packed back from the rounded results.

    in  (rows, R / n) int64     n = 4 (float16/bfloat16) or 2 (float32) elements per word
    out (rows, R / n) int64

Requirements (else the element path): a single-tile row (one pass) whose length is not the tile's (rows of a
power-of-two length already store whole vectors), the reduced dim last, R a multiple of n, no fused prologue or
epilogue, the output in the input's dtype.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import KernelSource
from .indexing import word_views
from .pool_aligned import _pair_halves
from .rowwise import TUNING, ct_dtype

if TYPE_CHECKING:
    from .rowwise import Layout, Parts, SameShapeGen

_PER_WORD = {"float16": 4, "bfloat16": 4, "float32": 2}


def words_fit(parts: Parts, layout: Layout) -> bool:
    spec = parts.spec
    x = parts.inputs.get(parts.main)
    if not TUNING["softmax_words"] or x is None or x.dtype not in _PER_WORD or layout.kind != "row":
        return False
    n = _PER_WORD[x.dtype]
    return (layout.nch == 1 and layout.R % n == 0 and layout.R != layout.BR  # a ragged (masked) row tile
            and not parts.prologue and not parts.epilogue
            and len(spec.outputs) == 1 and spec.outputs[0].dtype == x.dtype
            and spec.outputs[0].graph_value == parts.anchor.node)


def _lanes(dtype: str) -> list[str]:
    """float32 tiles of the word tile `w`'s element positions, first element first."""
    if dtype == "float32":
        return list(_pair_halves("float32", "w"))
    return list(_pair_halves(dtype, "lo")) + list(_pair_halves(dtype, "hi"))


def _pack(dtype: str, n: int) -> str:
    """The int64 word of the rounded result tiles y0 .. y{n-1}."""
    if dtype == "float32":
        return "(ct.bitcast(y0, ct.int32).astype(ct.int64) & 4294967295) | (ct.bitcast(y1, ct.int32).astype(ct.int64) << 32)"
    dt = ct_dtype(dtype)
    parts = [f"((ct.bitcast(y{i}.astype({dt}), ct.int16).astype(ct.int64) & 65535) << {16 * i})" for i in range(n)]
    return " | ".join(parts).replace(" << 0)", ")")


def generate_words(gen: SameShapeGen, log: bool, safe: bool, exp) -> KernelSource:
    parts, L, kern = gen.parts, gen.L, gen.kernel
    x = parts.inputs[parts.main]
    n = _PER_WORD[x.dtype]
    Q, BQ = L.R // n, max(1, L.BR // n)
    k = kern.body
    view = f"v_{x.name}"
    prep = [f"{view} = {x.name}.contiguous().reshape({L.O}, {L.R})"]
    prep += [f"{view} = {view}{suffix}" for suffix in word_views(view, n, "torch.int64")]
    kern.tensor(view, view, prep="\n    ".join(prep))
    (oname, out), = gen.out_views
    kern.tensor(oname, f"{out.name}.reshape({L.O}, {L.R}).view(torch.int64)")
    L.emit_block_coords(k)
    k(f"w = ct.load({view}, index=(pid, 0), shape=({L.BO}, {BQ}), padding_mode=ct.PaddingMode.ZERO{L.load_hint})")
    if n == 4:
        k("lo = w.astype(ct.int32)")  # truncation keeps the low word
        k("hi = (w >> 32).astype(ct.int32)")
    lanes = _lanes(x.dtype)
    for i, lane in enumerate(lanes):
        k(f"x{i} = {lane}")
    if Q != BQ:  # words past the row's end
        k(f"q = ct.arange({BQ}, dtype=ct.int32)[None, :]")
        for i in range(n):
            k(f"x{i} = ct.where(q < {Q}, x{i}, -math.inf)")
    maxes = [f"ct.max(x{i}, axis=1, keepdims=True)" for i in range(n)]
    m = maxes[0]
    for other in maxes[1:]:
        m = f"ct.maximum({m}, {other})"
    k(f"m = {m}")
    if safe:  # a row of -inf gives zeros (exp(-inf - -inf) would be NaN)
        k("m = ct.where(m == -math.inf, 0.0, m)")
    for i in range(n):
        k(f"e{i} = {exp(f'x{i} - m')}")
    k("s = " + " + ".join(f"ct.sum(e{i}, axis=1, keepdims=True)" for i in range(n)))
    if log:
        k("ls = m + ct.log(s)")
    else:
        k("r = 1.0 / s")
    for i in range(n):
        k(f"y{i} = x{i} - ls" if log else f"y{i} = e{i} * r")
        if safe and not log:
            k(f"y{i} = ct.where(s == 0.0, 0.0, y{i})")
    k(f"ct.store({oname}, index=(pid, 0), tile={_pack(x.dtype, n)}{L.store_hint})")
    what = "log_softmax" if log else "softmax"
    doc = (f"{', '.join(gen.spec.operations)}: {what} over the last dim of {list(parts.anchor.output)} as rows "
           f"({L.O}, {L.R}) read and written as int64 words ({L.O}, {Q}) of {n} elements, tile ({L.BO}, {BQ})"
           + (f", persistent grid of {L.grid()[0]} blocks" if L.persistent else ""))
    return gen.finish(doc)
