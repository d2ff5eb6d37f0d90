"""Pools of 16-bit inputs through 64-bit words (MEMORY_TUNING["pool_quads"]): 2-wide aligned windows and
max_pool(3, 2, 1) (generate_quad_windows).

The int32 pair view (pool_aligned) reads one window pair per 4-byte load and writes one 2-byte output per store:
specialized sm_90 SASS of max_pool2d(2) 64x128x112x112 bf16 has 16 LDG.E and 8 STG.E.U16 per thread, while the
float32 pools through int64 pair words (LDG.E.64 / STG.E) reach 0.87-0.89 of a same-size copy against the 16-bit
path's 0.67. Here the input is viewed as int64 words of four elements, two adjacent windows' pairs per word, and
the two outputs of a word are packed into one int32 word: 8-byte loads and 4-byte stores, as in the float32 case.

    in  (rows * O0, K0, W / 4) int64      a word = elements 4q .. 4q+3 of one window row
    out (rows * O0, Wo / 2)    int32      a word = outputs 2q (low half) and 2q + 1 (high half)

Each output is reduced in float32 (exact for max: the result is one of the inputs, and its 16-bit pattern comes
back unchanged) and rounded once to the input dtype for avg. Requirements (else the pair path): max or avg, 2-d
(or 1-d) pools with windows k = stride, no padding/dilation/indices/ceil overhang, last kernel dim 2, width a
multiple of 4, no fused epilogue.

max_pool(3, 2, 1) windows (generate_quad_windows) store, with MEMORY_TUNING["pool_quads_flat"] (the default), the
output as one flat run of those int32 words, each block a dense slice (vector stores, whatever the row width),
its input words gathered by index (_flat_quad_windows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..specs import KernelSpec, OpRecord
from .base import KernelSource, pow2_at_least
from .indexing import MEMORY_TUNING, array_param, out_param, word_views
from .pool_aligned import _pair_halves
from .pool_paths import I, _block_pids, _combine, _kernel_head, _launch_module
from .pool_pairs import (flat_window_head, gathered_row_loads, pair_windows_fit, shifted_row_loads,
                         window_row_base)
from .rowwise import cdiv, ct_dtype

if TYPE_CHECKING:
    from .pool import PoolOp


def _packed_store(spec: KernelSpec, pool: PoolOp, lines: list[str], index: str = "(pid_m, pid_1)") -> None:
    """Store float32 tiles a (outputs 2q) and b (outputs 2q + 1) rounded to the input dtype, packed into int32
    words: a's 16 bits low, b's high."""
    dt = ct_dtype(pool.x.dtype)
    lines += [f"{I}lo = ct.bitcast(a.astype({dt}), ct.int16).astype(ct.int32) & 65535",
              f"{I}hi = ct.bitcast(b.astype({dt}), ct.int16).astype(ct.int32) << 16",
              f"{I}ct.store({out_param(spec.outputs[0])}, index={index}, tile=lo | hi)"]


def quads_fit(pool: PoolOp, epilogue: list[OpRecord]) -> bool:
    K, O, In = pool.k, pool.outsp, pool.insp
    return (bool(MEMORY_TUNING["pool_quads"]) and pool.is_aligned and not epilogue and pool.nd in (1, 2)
            and pool.x.dtype in ("float16", "bfloat16") and K[-1] == 2 and In[-1] % 4 == 0
            and In[-1] == 2 * O[-1] and all(o * k == i for o, k, i in zip(O, K, In)))


def generate_quads(spec: KernelSpec, rec: OpRecord, pool: PoolOp) -> KernelSource:
    R, K, O, In = pool.rows, pool.k, pool.outsp, pool.insp
    K0, O0 = (K[0], O[0]) if pool.nd == 2 else (1, 1)
    M, Q = R * O0, In[-1] // 4  # output rows; words per window row (= output words per output row)
    BQ = pow2_at_least(Q, 1, 256)
    words = int(MEMORY_TUNING["pool_quads_bytes"]) // 8  # int64 words per block
    BM = pow2_at_least(M, 1, max(1, words // (BQ * K0)))
    nbq = cdiv(Q, BQ)
    is_max = pool.kind == "max"
    lines = _kernel_head(spec, ["BM", "BQ"])
    _block_pids(lines, [nbq], "pid_m", first=1)
    for r in range(K0):
        lines.append(f"{I}v = ct.reshape(ct.load({array_param(pool.x)}, index=(pid_m, {r}, pid_1), shape=(BM, 1, BQ), "
                     "padding_mode=ct.PaddingMode.ZERO), (BM, BQ))")
        lo, hi = "v.astype(ct.int32)", "(v >> 32).astype(ct.int32)"  # truncation keeps the low 32 bits
        for name, half in (("a", lo), ("b", hi)):
            e = _pair_halves(pool.x.dtype, f"w{name}")
            lines.append(f"{I}w{name} = {half}")
            pair = _combine(is_max, *e)
            lines.append(f"{I}{name} = {pair if r == 0 else _combine(is_max, name, pair)}")
    if not is_max:
        div = float(pool.divisor or K0 * 2)
        lines += [f"{I}a = a / {div!r}", f"{I}b = b / {div!r}"]
    _packed_store(spec, pool, lines)
    views = [f".reshape({M}, {K0}, {In[-1]})"] + word_views(array_param(pool.x), 4, "torch.int64")
    return _launch_module(spec, pool, lines, views, [M, O[-1]], cdiv(M, BM) * nbq, [BM, BQ],
                          f"{rec.op}: 2-wide windows of 16-bit elements read as 64-bit words ({M}, {K0}, {Q}), "
                          f"two outputs packed per 32-bit word; tile {BM} x {BQ} words", ".view(torch.int32)")


def quad_windows_fit(pool: PoolOp, epilogue: list[OpRecord]) -> bool:
    """max_pool(3, 2, 1) along a last dim that is a multiple of 4 (the pair-window case, pool_pairs.py), 16-bit,
    no fused epilogue, at least two words per row (a slice wholly outside its row is undefined in cuTile)."""
    return (bool(MEMORY_TUNING["pool_quads"]) and pair_windows_fit(pool) and not epilogue
            and pool.x.dtype in ("float16", "bfloat16") and pool.insp[-1] % 4 == 0 and pool.insp[-1] >= 8)


def _quad_window_rows(pool: PoolOp, lines: list[str], load) -> None:
    """The window rows' maxima a (outputs 2q) and b (2q + 1) of the words `load(k)` emits into v (word q of
    window row k) and u (word q - 1), `inside` being q >= 1."""
    e0, e1 = _pair_halves(pool.x.dtype, "wa")
    e2, e3 = _pair_halves(pool.x.dtype, "wb")
    left = _pair_halves(pool.x.dtype, "wu")[1]
    for k in range(pool.k[0] if pool.nd == 2 else 1):
        lines += load(k)
        lines += [f"{I}wa = v.astype(ct.int32)",
                  f"{I}wb = (v >> 32).astype(ct.int32)",
                  f"{I}wu = (u >> 32).astype(ct.int32)",
                  f"{I}e1 = {e1}",
                  f"{I}ta = {_combine(True, _combine(True, e0, 'e1'), f'ct.where(inside, {left}, -math.inf)')}",
                  f"{I}tb = {_combine(True, _combine(True, 'e1', e2), e3)}",
                  f"{I}a = {'ta' if k == 0 else _combine(True, 'a', 'ta')}",
                  f"{I}b = {'tb' if k == 0 else _combine(True, 'b', 'tb')}"]


def generate_quad_windows(spec: KernelSpec, rec: OpRecord, pool: PoolOp) -> KernelSource:
    """As pool_pairs.generate_pair_windows, with int64 words of four elements: outputs 2q and 2q + 1 read
    elements 4q-1 .. 4q+1 and 4q+1 .. 4q+3, i.e. word q and the last element of word q - 1 (a dense slice one word
    to the left, masked to -inf for q = 0: padding); the two outputs are stored packed in one int32 word."""
    R, In, O = pool.rows, pool.insp, pool.outsp
    H, Ho = (In[0], O[0]) if pool.nd == 2 else (1, 1)
    M, Q = R * Ho, In[-1] // 4
    if MEMORY_TUNING["pool_quads_flat"] and M * Q < 2**31 and R * H * Q < 2**31:
        return _flat_quad_windows(spec, rec, pool, M, Q, H)
    BQ = pow2_at_least(Q, 1, 128)
    BM = pow2_at_least(M, 1, max(1, int(MEMORY_TUNING["pool_pair_window_outputs"]) // (2 * BQ)))
    nbq = cdiv(Q, BQ)
    x = array_param(pool.x)
    lines = _kernel_head(spec, ["BM", "BQ"])
    _block_pids(lines, [nbq], "pid_m", first=1)
    lines += [f"{I}m = pid_m * BM + ct.arange(BM, dtype=ct.int32)",
              f"{I}q0 = pid_1 * BQ",
              f"{I}inside = ct.arange(BQ, dtype=ct.int32)[None, :] + q0 >= 1"]
    window_row_base(pool, lines)
    _quad_window_rows(pool, lines, lambda k: shifted_row_loads(pool, x, "q0", "BQ", k))
    _packed_store(spec, pool, lines)
    views = [f".reshape({R * H}, {In[-1]})"] + word_views(x, 4, "torch.int64")
    return _launch_module(spec, pool, lines, views, [M, O[-1]], cdiv(M, BM) * nbq, [BM, BQ],
                          f"{rec.op}: 3-wide stride-2 windows over 16-bit elements read as 64-bit words "
                          f"({R * H}, {Q}); tile {BM} x {BQ} words from shifted dense-slice loads, "
                          f"{pool.k[0] if pool.nd == 2 else 1} window rows, two outputs packed per 32-bit word",
                          ".view(torch.int32)")


def _flat_quad_windows(spec: KernelSpec, rec: OpRecord, pool: PoolOp, M: int, Q: int, H: int) -> KernelSource:
    """MEMORY_TUNING["pool_quads_flat"]: the output as one flat run of int32 words (output row m, word q: the
    same q as the input word), each block storing a dense slice of it and gathering its input words."""
    B = pow2_at_least(M * Q, 1, int(MEMORY_TUNING["pool_quads_flat_words"]))
    x = array_param(pool.x)
    lines = _kernel_head(spec, ["B"]) + flat_window_head(pool, Q, "q")
    _quad_window_rows(pool, lines, lambda k: gathered_row_loads(pool, x, "q", k))
    _packed_store(spec, pool, lines, "(bid,)")
    views = [f".reshape({pool.rows * H}, {pool.insp[-1]})"] + word_views(x, 4, "torch.int64")
    return _launch_module(spec, pool, lines, views, [M * pool.outsp[-1]], cdiv(M * Q, B), [B],
                          f"{rec.op}: 3-wide stride-2 windows over 16-bit elements read as 64-bit words "
                          f"({pool.rows * H}, {Q}); the output as a flat run of {M * Q} 32-bit words of two "
                          f"outputs, {B} per block stored densely, each gathering its window rows' words",
                          ".view(torch.int32)")
