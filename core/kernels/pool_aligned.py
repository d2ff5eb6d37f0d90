"""The aligned pooling path (kernel == stride, power-of-two kernel, no padding/dilation: max_pool2d(2)) and the pair
views it shares with pool_pairs.py: 2-wide innermost windows read as one word per pair of elements (int32 for 16-bit
inputs, int64 for float32) and split with bit operations. pool.py's docstring describes every path."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..specs import KernelSpec, OpRecord
from .base import KernelSource
from .indexing import MEMORY_TUNING, array_param, decode, prod, tup, word_views
from .pool_paths import (I, _aligned_padding, _arange_along, _block_pids, _combine, _divide, _divide_by, _epilogue,
                         _kernel_head, _launch_module, _output_coords, _output_tiles, _reduce, _store_lines)
from .rowwise import cdiv

if TYPE_CHECKING:
    from .pool import PoolOp


# ---- aligned path: kernel == stride ------------------------------------------------------------------------------

def _aligned_tiles(K: list[int], O: list[int], R: int, budget: int) -> tuple[int, list[int]]:
    """(BR, BO) of an aligned pool: the innermost output dim first, up to 256 input elements wide (coalesced rows)."""
    return _output_tiles(R, O, K, budget, [max(1, 256 // k) if i == len(K) - 1 else None for i, k in enumerate(K)])


def _floor_crop(O: list[int], K: list[int], In: list[int]) -> list[str]:
    """Floor mode leaves the last input rows/cols unread: crop them so the split view is exact."""
    if any(o * k < i for o, k, i in zip(O, K, In)):
        return [f"[:, {', '.join(f':{o * k}' for o, k in zip(O, K))}]"]
    return []


def generate_aligned(spec: KernelSpec, rec: OpRecord, pool: PoolOp, epilogue: list[OpRecord]) -> KernelSource:
    """Non-overlapping windows (kernel == stride, no padding/dilation, power-of-two kernel): coalesced `ct.load`s
    of whole windows instead of per-element gathers. Two layouts (MEMORY_TUNING["pool_aligned_mode"]):
    - "split": the wrapper views the input as (rows, O0, K0, O1, K1, ...) (a free view: each spatial dim split
      into output position x window offset) and each block loads a (BR, BO0, K0, BO1, K1, ...) tile and reduces
      the K axes — no data movement inside the kernel;
    - "rows": as "split", but the innermost dim stays whole (.., O_last * K_last): the tile's contiguous axis is
      wide (a plain coalesced row load) and only that axis is reshaped into (BO_last, K_last) in the kernel;
    - "reshape": each block loads a (BR, BO0*K0, ...) tile of the (rows, In...) input and reshapes it.
    A ceil_mode tail (the last window clipped by the input) cannot be viewed that way and uses "reshape"."""
    nd = pool.nd
    R, K, O, In = pool.rows, pool.k, pool.outsp, pool.insp
    BR, BO = _aligned_tiles(K, O, R, int(MEMORY_TUNING["pool_aligned_elems"]))
    nb = [cdiv(o, b) for o, b in zip(O, BO)]
    is_max = pool.kind == "max"
    mode = MEMORY_TUNING["pool_aligned_mode"]
    split_mode = mode in ("split", "rows") and all(o * k <= i for o, k, i in zip(O, K, In))
    if split_mode and In[0] == O[0] * K[0] and (mode == "split" or nd > 1):
        return _generate_aligned_merged(spec, rec, pool, epilogue, inner_merged=mode == "rows")
    split_mode = split_mode and mode == "split"
    x = array_param(pool.x)
    lines = _kernel_head(spec, ["BR"] + [f"BO{i}" for i in range(nd)])
    _block_pids(lines, nb, "pid_r", always_divide=True)
    split = tup(["BR"] + [v for i in range(nd) for v in (f"BO{i}", str(K[i]))])
    out_tile = tup(["BR"] + [f"BO{i}" for i in range(nd)])
    index = tup(["pid_r"] + [f"pid_{i}" for i in range(nd)])
    pad = _aligned_padding(is_max, exact=all(o * k <= i for o, k, i in zip(O, K, In)))
    if split_mode:
        split_index = tup(["pid_r"] + [v for i in range(nd) for v in (f"pid_{i}", "0")])
        lines.append(f"{I}t = ct.load({x}, index={split_index}, shape={split}, padding_mode={pad})"
                     f".astype(ct.float32)")
    else:
        in_tile = tup(["BR"] + [f"BO{i} * {K[i]}" for i in range(nd)])
        lines.append(f"{I}t = ct.reshape(ct.load({x}, index={index}, shape={in_tile}, padding_mode={pad})"
                     f".astype(ct.float32), {split})")
    # coordinates of the outputs: rows (BR, 1, ...), spatial (1, .., BOi, .., 1)
    lines.append(f"{I}rr = {_arange_along('pid_r * BR', 'BR', 0, nd + 1)}")
    osp = _output_coords(lines, range(nd), "pid_{d} * BO{d}")
    lines.append(f"{I}acc = {_reduce(is_max, 't', tup([2 + 2 * i for i in range(nd)]))}")
    if not is_max:
        if pool.divisor is not None:
            _divide(lines, pool.divisor)
        else:
            # a ceil_mode tail: the last window is clipped to the input
            terms = [f"(ct.minimum(o{i} * {K[i]} + {K[i]}, {In[i]}) - o{i} * {K[i]})"
                     for i in range(nd) if O[i] * K[i] > In[i]]
            if terms:
                full = prod([K[i] for i in range(nd) if O[i] * K[i] <= In[i]])
                _divide_by(lines, terms + ([str(full)] if full != 1 else []), out_tile)
            else:
                _divide(lines, prod(K))
    env: dict[str, str] = {rec.node: "acc"}
    if epilogue:
        lead = decode("rr", pool.lead, lines, I, "l")
        env = _epilogue(spec, pool, epilogue, env, lead, osp, out_tile, lines)
    _store_lines(spec, env, out_tile, index, lines)
    views = [f".reshape({', '.join(map(str, [R] + In))})"]
    if split_mode:
        views += _floor_crop(O, K, In)
        views.append(f".view({', '.join(map(str, [R] + [v for o, k in zip(O, K) for v in (o, k)]))})")
    return _launch_module(spec, pool, lines, views, [R] + O, cdiv(R, BR) * prod(nb), [BR] + BO,
                          f"{rec.op}: non-overlapping {K} windows, tile {BR} rows x {BO} outputs from "
                          f"{'split-view' if split_mode else 'reshaped'} tile loads")


def _generate_aligned_merged(spec: KernelSpec, rec: OpRecord, pool: PoolOp, epilogue: list[OpRecord],
                             inner_merged: bool = False) -> KernelSource:
    """The "split" layout with the rows merged into the first output dim: the input is viewed as
    (rows * O0, K0, O1, K1, ...) and the output as (rows * O0, O1, ...), so the tile's row axis runs over
    (row, output row) pairs and no lanes are lost to a partial O0 tile (56 output rows are not a power of two).
    Needs In0 == O0 * K0 (the view then costs nothing). `inner_merged` ("rows" mode, nd > 1) keeps the last dim
    whole in the view, (.., O_last * K_last), and splits only that axis of the loaded tile."""
    nd = pool.nd
    R, K, O, In = pool.rows, pool.k, pool.outsp, pool.insp
    M = R * O[0]
    pairs = inner_merged and _pair_view(pool)
    budget = (int(MEMORY_TUNING["pool_pairs_bytes"]) // (4 if pool.x.dtype == "float32" else 2) if pairs
              else int(MEMORY_TUNING["pool_aligned_elems"]))
    BM, BO = _aligned_tiles(K[1:], O[1:], M, max(1, budget // K[0]))
    nb = [cdiv(o, b) for o, b in zip(O[1:], BO)]
    is_max = pool.kind == "max"
    x = array_param(pool.x)
    lines = _kernel_head(spec, ["BM"] + [f"BO{i + 1}" for i in range(nd - 1)])
    _block_pids(lines, nb, "pid_m", first=1)
    split_tile = ["BM", str(K[0])] + [v for i in range(1, nd) for v in (f"BO{i}", str(K[i]))]
    split_index = ["pid_m", "0"] + [v for i in range(1, nd) for v in (f"pid_{i}", "0")]
    if inner_merged and not pairs:
        tile = tup(split_tile[:-2] + [f"BO{nd - 1} * {K[-1]}"])
        index = tup(split_index[:-2] + [f"pid_{nd - 1}"])
    else:
        tile, index = tup(split_tile), tup(split_index)
    out_tile = tup(["BM"] + [f"BO{i}" for i in range(1, nd)])
    out_index = tup(["pid_m"] + [f"pid_{i}" for i in range(1, nd)])
    axes = tup([1 + 2 * i for i in range(nd)])
    divide = "" if is_max else f" / {float(pool.divisor or prod(K))!r}"
    if pairs:
        _pair_loads(lines, pool, x, nd, is_max, out_tile)
        if divide:
            lines.append(f"{I}acc = acc{divide}")
    else:
        pad = _aligned_padding(is_max, exact=True)
        lines.append(f"{I}t = ct.load({x}, index={index}, shape={tile}, padding_mode={pad}).astype(ct.float32)")
        if inner_merged:  # reduce the outer window axes first, then split the (smaller) row tile's last axis
            lines.append(f"{I}t = {_reduce(is_max, 't', tup([1 + 2 * i for i in range(nd - 1)]))}")
            lines.append(f"{I}acc = {_reduce(is_max, f'ct.reshape(t, {out_tile[:-1]}, {K[-1]}))', nd)}{divide}")
        else:
            lines.append(f"{I}acc = {_reduce(is_max, 't', axes)}{divide}")
    env: dict[str, str] = {rec.node: "acc"}
    if epilogue:
        lines += [f"{I}mm = {_arange_along('pid_m * BM', 'BM', 0, nd)}", f"{I}rr = mm // {O[0]}",
                  f"{I}o0 = mm % {O[0]}"]
        osp = ["o0"] + _output_coords(lines, range(1, nd), "pid_{d} * BO{d}")
        lead = decode("rr", pool.lead, lines, I, "l")
        env = _epilogue(spec, pool, epilogue, env, lead, osp, out_tile, lines)
    _store_lines(spec, env, out_tile, out_index, lines)
    view = [M, K[0]] + [v for o, k in zip(O[1:], K[1:]) for v in (o, k)]
    if inner_merged:
        view = view[:-2] + [O[-1] * K[-1]]
    views = [f".reshape({', '.join(map(str, [R] + In))})"] + _floor_crop(O, K, In)
    views.append(f".view({', '.join(map(str, view))})")
    if pairs:
        views += pair_views(x, pool.x.dtype)
    how = "element pairs read as one word" if pairs else ("row" if inner_merged else "split-view")
    return _launch_module(spec, pool, lines, views, [M] + O[1:], cdiv(M, BM) * prod(nb), [BM] + BO,
                          f"{rec.op}: non-overlapping {K} windows; input viewed as {view}, tile {BM} x {BO} outputs "
                          f"from {how} tile loads")


def pair_dtype_ok(dtype: str) -> bool:
    """16-bit inputs read as int32 pairs (MEMORY_TUNING pool_aligned_pairs / pool_pair_windows), float32 as int64
    pairs only with MEMORY_TUNING["pool_pairs_fp32"]."""
    return dtype in ("float16", "bfloat16") or (dtype == "float32" and bool(MEMORY_TUNING["pool_pairs_fp32"]))


def pair_views(x: str, dtype: str) -> list[str]:
    """Wrapper suffixes viewing `x` as pair words (int64 for float32, int32 for 16-bit dtypes)."""
    return word_views(x, 2, "torch.int64" if dtype == "float32" else "torch.int32")



def _pair_view(pool: PoolOp) -> bool:
    """An input whose innermost windows are exact pairs (k = 2 = s, even width) is read as words of two elements,
    one window row per lane, and split into its halves in registers (MEMORY_TUNING["pool_aligned_pairs"]): no
    in-kernel reshape of the (.., O, 2) axis, which the compiler lowers through shared-memory shuffles."""
    return (bool(MEMORY_TUNING["pool_aligned_pairs"]) and pool.k[-1] == 2 and pool.insp[-1] == 2 * pool.outsp[-1]
            and pair_dtype_ok(pool.x.dtype))


def _pair_loads(lines: list[str], pool: PoolOp, x: str, nd: int, is_max: bool, out_tile: str) -> None:
    """acc = the pooled (BM, BO1, ...) tile from one (BM, 1, BO1, 1, ..., BO_last) int32 load per offset of the
    outer window dims (4 loads for 2x2x2): every reduction is then between registers of one thread."""
    offsets = [()]
    for k in pool.k[:-1]:
        offsets = [o + (j,) for o in offsets for j in range(k)]
    shape = tup(["BM", "1"] + [v for i in range(1, nd) for v in (f"BO{i}", "1")][:-1])
    for n, off in enumerate(offsets):
        index = ["pid_m", str(off[0])] + [v for i in range(1, nd) for v in (f"pid_{i}", str((off + (0,))[i]))][:-1]
        lines.append(f"{I}v = ct.reshape(ct.load({x}, index={tup(index)}, shape={shape}, "
                     f"padding_mode=ct.PaddingMode.ZERO), {out_tile})")
        lo, hi = _pair_halves(pool.x.dtype, "v")
        pair = _combine(is_max, lo, hi)
        lines.append(f"{I}acc = {pair if n == 0 else _combine(is_max, 'acc', pair)}")


def _pair_halves(dtype: str, v: str) -> tuple[str, str]:
    """The float32 values of the low (first) and high (second) element of the pair words in tile `v`."""
    if dtype == "float32":  # int64 words; truncating to int32 keeps the low word
        return (f"ct.bitcast({v}.astype(ct.int32), ct.float32)",
                f"ct.bitcast(({v} >> 32).astype(ct.int32), ct.float32)")
    if dtype == "bfloat16":  # a bfloat16 is the top half of the float32 with the same value
        return f"ct.bitcast({v} << 16, ct.float32)", f"ct.bitcast({v} & -65536, ct.float32)"
    return (f"ct.bitcast({v}.astype(ct.int16), ct.float16).astype(ct.float32)",
            f"ct.bitcast(({v} >> 16).astype(ct.int16), ct.float16).astype(ct.float32)")
