"""Overlapping max pooling of inputs read as pairs of elements in one word (max_pool2d(3, 2, 1), ResNet's stem
pool): 16-bit inputs as int32, float32 as int64 (MEMORY_TUNING["pool_pairs_fp32"]).

With kernel 3, stride 2 and padding 1 along the last dim, output column j reads input columns 2j-1, 2j and 2j+1:
both halves of pair j and the high half of pair j-1. The input is viewed as pair words, (rows, W / 2),
and each block owns a (BM, BJ) tile of (channel row x output row, output column) outputs. Per window row it loads
the pairs j0.. and j0-1.. with `ct.load_advanced_indexing` (one input row index per tile row, a dense slice at an
element offset, so the shift by one pair needs no gather), splits the halves with bit operations and takes the
maximum in registers. Window rows outside the input are clamped onto the nearest input row, which lies inside the
same window, so they cannot change a maximum; the left pair of column 0 (input column -1, padding) is masked to
-inf. Any kernel/stride/padding along the outer dim of a 2-d pool; NaNs propagate as in PyTorch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..specs import KernelSpec, OpRecord
from .base import KernelSource, pow2_at_least
from .indexing import MEMORY_TUNING, array_param, decode, flat_run_coords
from .pool_aligned import _pair_halves, pair_dtype_ok, pair_views
from .pool_paths import I, _arange_along, _epilogue, _kernel_head, _launch_module, _store_lines
from .rowwise import cdiv

if TYPE_CHECKING:
    from .pool import PoolOp


def pair_windows_fit(pool: PoolOp) -> bool:
    """MEMORY_TUNING["pool_pair_windows"] and a 1-d/2-d max pool (no indices, no dilation) of a 16-bit input (or
    float32 with pool_pairs_fp32) with kernel 3, stride 2, padding 1 along an even last dim of W / 2 >= 2 outputs
    (with one output column the left slice, [-1, 0), would lie wholly outside the input: undefined in cuTile)."""
    return (bool(MEMORY_TUNING["pool_pair_windows"]) and pool.kind == "max" and not pool.with_indices
            and pool.nd in (1, 2) and pair_dtype_ok(pool.x.dtype) and all(d == 1 for d in pool.d)
            and (pool.k[-1], pool.s[-1], pool.p[-1]) == (3, 2, 1) and pool.insp[-1] % 2 == 0
            and pool.outsp[-1] == pool.insp[-1] // 2 and pool.outsp[-1] >= 2)


def _max(a: str, b: str) -> str:
    return f"ct.maximum({a}, {b}, propagate_nan=True)"


def window_row_base(pool: PoolOp, lines: list[str]) -> None:
    """base (first input row of the tile row's channel row) and top (its window's first input row) of a 2-d pool,
    for the tile rows m = (channel row, output row)."""
    if pool.nd == 2:
        H, Ho, S0, P0 = pool.insp[0], pool.outsp[0], pool.s[0], pool.p[0]
        lines += [f"{I}base = (m // {Ho}) * {H}", f"{I}top = (m % {Ho}) * {S0} - {P0}"]


def window_row(pool: PoolOp, k: int) -> str:
    """The input row of window row k (clamped into the input: it then lies in the same window, harmless for a
    maximum)."""
    return f"base + ct.minimum(ct.maximum(top + {k}, 0), {pool.insp[0] - 1})" if pool.nd == 2 else "m"


def shifted_row_loads(pool: PoolOp, x: str, start: str, width: str, k: int) -> list[str]:
    """r = the input row of window row k, v = its words start .. start + width, u = the same one word to the
    left."""
    return [f"{I}r = {window_row(pool, k)}",
            f"{I}v = ct.load_advanced_indexing({x}, (r, ct.Slice({start}, {width})), padding_mode=ct.PaddingMode.ZERO)",
            f"{I}u = ct.load_advanced_indexing({x}, (r, ct.Slice({start} - 1, {width})), "
            "padding_mode=ct.PaddingMode.ZERO)"]


def flat_window_head(pool: PoolOp, per_row: int, col: str) -> list[str]:
    """The prologue of a flat-output pool block (pool_pairs_flat, pool_quads_flat): o = its B output words, m
    their output row (`per_row` words each), `col` their word in the row, inside = col >= 1 (a left neighbour
    word exists), then base / top of the window rows."""
    lines = flat_run_coords("bid", per_row, col) + [f"{I}inside = {col} >= 1"]
    window_row_base(pool, lines)
    return lines


def gathered_row_loads(pool: PoolOp, x: str, col: str, k: int) -> list[str]:
    """As shifted_row_loads for a flat-output block: v = word `col` of window row k, u = word col - 1 (zero past
    the input: the left neighbour of word 0, or rows past the last output, whose stores are dropped)."""
    return [f"{I}r = {window_row(pool, k)}", f"{I}v = ct.gather({x}, (r, {col}), padding_value=0)",
            f"{I}u = ct.gather({x}, (r, {col} - 1), padding_value=0)"]


def generate_pair_windows(spec: KernelSpec, rec: OpRecord, pool: PoolOp, epilogue: list[OpRecord]) -> KernelSource:
    R, In, O = pool.rows, pool.insp, pool.outsp
    H, Ho, K0 = (In[0], O[0], pool.k[0]) if pool.nd == 2 else (1, 1, 1)
    M, Wo = R * Ho, O[-1]
    if MEMORY_TUNING["pool_pairs_flat"] and not epilogue and M * Wo < 2**31 and R * H * Wo < 2**31:
        return _flat_pair_windows(spec, rec, pool, M, H, K0)
    BJ = pow2_at_least(Wo, 1, 256)
    outs = MEMORY_TUNING["pool_pair64_window_outputs" if pool.x.dtype == "float32" else "pool_pair_window_outputs"]
    BM = pow2_at_least(M, 1, max(1, int(outs) // BJ))
    nbj = cdiv(Wo, BJ)
    x = array_param(pool.x)
    lines = _kernel_head(spec, ["BM", "BJ"])
    lines += [f"{I}pid_m = bid // {nbj}", f"{I}pid_j = bid % {nbj}"] if nbj > 1 else \
             [f"{I}pid_m = bid", f"{I}pid_j = 0"]
    lines += [f"{I}m = pid_m * BM + ct.arange(BM, dtype=ct.int32)",
              f"{I}j0 = pid_j * BJ",
              f"{I}inside = ct.arange(BJ, dtype=ct.int32)[None, :] + j0 >= 1"]
    window_row_base(pool, lines)
    lo_hi = _pair_halves(pool.x.dtype, "v")
    left = _pair_halves(pool.x.dtype, "u")[1]
    for k in range(K0):
        lines += shifted_row_loads(pool, x, "j0", "BJ", k)
        lines += [f"{I}t = {_max(_max(*lo_hi), f'ct.where(inside, {left}, -math.inf)')}",
                  f"{I}acc = {'t' if k == 0 else _max('acc', 't')}"]
    out_tile = "(BM, BJ)"
    env: dict[str, str] = {rec.node: "acc"}
    if epilogue:
        lines.append(f"{I}mm = {_arange_along('pid_m * BM', 'BM', 0, 2)}")
        if pool.nd == 2:
            lines += [f"{I}rr = mm // {Ho}", f"{I}o0 = mm % {Ho}"]
        lines.append(f"{I}oj = {_arange_along('pid_j * BJ', 'BJ', 1, 2)}")
        lead = decode("rr" if pool.nd == 2 else "mm", pool.lead, lines, I, "l")
        env = _epilogue(spec, pool, epilogue, env, lead, (["o0"] if pool.nd == 2 else []) + ["oj"], out_tile, lines)
    _store_lines(spec, env, out_tile, "(pid_m, pid_j)", lines)
    views = [f".reshape({R * H}, {In[-1]})"] + pair_views(x, pool.x.dtype)
    return _launch_module(spec, pool, lines, views, [M, Wo], cdiv(M, BM) * nbj, [BM, BJ],
                          f"{rec.op}: 3-wide stride-2 windows over element pairs read as words "
                          f"({R * H}, {In[-1] // 2}); "
                          f"tile {BM} x {BJ} outputs from shifted dense-slice loads, {K0} window rows")


def _flat_pair_windows(spec: KernelSpec, rec: OpRecord, pool: PoolOp, M: int, H: int, K0: int) -> KernelSource:
    """MEMORY_TUNING["pool_pairs_flat"]: the output as one flat run of elements (output row m, column j: pair j
    of the input row), each block storing a dense slice of it (vector stores whatever the row width) and gathering
    the pairs j and j - 1 of its window rows, as pad_words_flat and pool_quads_flat do."""
    Wo = pool.outsp[-1]
    B = pow2_at_least(M * Wo, 1, int(MEMORY_TUNING["pool_pairs_flat_outputs"]))
    x = array_param(pool.x)
    lines = _kernel_head(spec, ["B"]) + flat_window_head(pool, Wo, "j")
    lo_hi = _pair_halves(pool.x.dtype, "v")
    left = _pair_halves(pool.x.dtype, "u")[1]
    for k in range(K0):
        lines += gathered_row_loads(pool, x, "j", k)
        lines += [f"{I}t = {_max(_max(*lo_hi), f'ct.where(inside, {left}, -math.inf)')}",
                  f"{I}acc = {'t' if k == 0 else _max('acc', 't')}"]
    _store_lines(spec, {rec.node: "acc"}, "(B,)", "(bid,)", lines)
    views = [f".reshape({pool.rows * H}, {pool.insp[-1]})"] + pair_views(x, pool.x.dtype)
    return _launch_module(spec, pool, lines, views, [M * Wo], cdiv(M * Wo, B), [B],
                          f"{rec.op}: 3-wide stride-2 windows over element pairs read as words "
                          f"({pool.rows * H}, {pool.insp[-1] // 2}); the output as a flat run of {M * Wo}, {B} per "
                          f"block stored densely, each gathering its {K0} window rows' pairs")
