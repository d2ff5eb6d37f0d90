"""Top-k along one dim (`torch.topk`, family "topk"): values and int64 indices of the k largest (or smallest)
elements of every line, in order, as a mixture-of-experts router takes them (k of 8-256 expert scores per token).
`torch.sort` / `argsort` of short lines (up to MAX_K elements) are the same kernel with k = the line length.

Each block holds BM whole lines (the topk dim last: a (BM, BN) tile, BN the line length rounded up to a power of
two) in registers and selects k times. By default (TUNING["packed_keys"]) every element becomes one packed key
(sort_keys.py: its value's order-preserving image in the high bits, BN - 1 - column in the low ones), so one max per
round gives both the best value and the first column holding it, and the chosen key (unique) is cleared;
otherwise each round takes the best remaining value, the first column holding it, and a NaN search, and marks
the column taken (four reductions). Matching PyTorch: NaN ranks above every number (first for largest=True, last for
largest=False), ties go to the lower index, -inf/+inf are ordinary values (a taken mask, not a sentinel, so
duplicates of the sentinel are still selected once each). sorted=False is served sorted (a valid answer: PyTorch
leaves that order unspecified).

k above MAX_K (a sort of a line longer than MAX_K, or a large top-k) sorts whole lines with a bitonic network
instead (sort_bitonic.py), up to sort_bitonic.MAX_SORT_LINE elements; longer lines (and k <= MAX_K over lines
longer than MAX_LINE: top-k sampling over a vocabulary) sort chunks and rank their runs (sort_long.py).
"""

from __future__ import annotations

from ..specs import KernelSpec
from .base import KernelSource, Unsupported, pow2_at_least
from .indexing import array_param, module, out_param, ret_outputs, tuple_items
from . import sort_long
from .sort_bitonic import MAX_SORT_LINE, SORT_TUNING, line_wrapper_head
from .sort_bitonic import kernel_lines as bitonic_lines
from .sort_bitonic import line_keys, line_kernel_head
from .sort_keys import Keys

MAX_LINE = 8192  # elements of one line kept in one tile
MAX_K = 128
TILE_ELEMS = 4096  # elements per (BM, BN) tile when lines are short
TUNING = {"packed_keys": True}
I = "    "


def _plan(spec: KernelSpec):
    if len(spec.ops) != 1 or spec.ops[0].op not in ("topk", "sort", "argsort"):
        raise Unsupported(f"a topk kernel with fused ops ({', '.join(spec.operations)})")
    rec = spec.ops[0]
    what = rec.op
    src = [t for t in spec.inputs if t.role != "scalar"]
    if len(src) != 1:
        raise Unsupported(f"{what} of more than one tensor")
    x = src[0]
    if x.dtype not in ("float32", "float16", "bfloat16"):
        raise Unsupported(f"{what} of {x.dtype} values (float32/float16/bfloat16 only)")
    shape = list(x.shape) or [1]
    dim = int(rec.attrs.get("dim", -1))
    dim = dim + len(shape) if dim < 0 else dim
    n = shape[dim]
    if what == "topk":
        k = int(rec.attrs.get("k", rec.args[1] if len(rec.args) > 1 else 1))
        largest = bool(rec.attrs.get("largest", True))
    else:  # a sort is the top-n in order (stable: ties keep their order, as stable=True asks)
        k, largest = n, bool(rec.attrs.get("descending", False))
    if n >= 2 ** 31 - SORT_TUNING["long_chunk"]:
        raise Unsupported(f"{what} over lines of {n} elements (column indices are packed into 32 bits)")
    if k < 1:
        raise Unsupported(f"{what} with k = 0")
    return rec, x, shape, dim, k, largest


def _select_lines(largest: bool) -> list[str]:
    """One selection round: `val`/`col` (BM, 1) of every line, from the (BM, BN) tile `t` and mask `taken`."""
    far, pick = ("-math.inf", "ct.max") if largest else ("math.inf", "ct.min")
    lines = [f"{I}{I}nan_left = isnan & ~taken",
             f"{I}{I}nan_col = ct.min(ct.where(nan_left, cols, BN), axis=1, keepdims=True)",
             f"{I}{I}best = {pick}(ct.where(taken | isnan, {far}, t), axis=1, keepdims=True)",
             f"{I}{I}best_col = ct.min(ct.where(~taken & (t == best), cols, BN), axis=1, keepdims=True)"]
    if largest:  # NaN ranks first
        lines.append(f"{I}{I}use_nan = nan_col < BN")
    else:  # NaN ranks last: only once no number is left
        lines.append(f"{I}{I}use_nan = best_col >= BN")
    lines += [f"{I}{I}col = ct.where(use_nan, nan_col, best_col)",
              f"{I}{I}val = ct.where(use_nan, math.nan, best)"]
    return lines


def _packed_round(largest: bool, keys: Keys) -> list[str]:
    """One selection round over the packed keys: `val`/`col` (BM, 1) of every line, the chosen key cleared."""
    return [f"{I}{I}best = ct.max(keys, axis=1, keepdims=True)",
            f"{I}{I}keys = ct.where(keys == best, {keys.min_key}, keys)",
            f"{I}{I}col = {keys.column_of('best', 'BN')}",
            f"{I}{I}best_rank = {keys.rank_of('best')}",
            *keys.rank_decode(largest, "best_rank", "best_key", "best_bits", "val", I + I)]


def generate(spec: KernelSpec) -> KernelSource:
    rec, x, shape, dim, k, largest = _plan(spec)
    n = shape[dim]
    rows = 1
    for i, s in enumerate(shape):
        if i != dim:
            rows *= s
    items = tuple_items(spec)
    kinds = []
    for o in spec.outputs:
        item = items.get(o.name)
        kinds.append(item[1] if item else (1 if o.dtype == "int64" else 0))
    kid = spec.id
    if (k <= MAX_K and n > MAX_LINE) or (k > MAX_K and n > MAX_SORT_LINE):
        return sort_long.generate(spec, rec, x, shape, dim, k, largest, rows, kinds)
    if k > MAX_K:
        kern, BM, BN, BK = bitonic_lines(kid, spec, x, rec.op, k, n, largest, rows, kinds)
        how = f"a bitonic sort of {BN}"
    else:
        kern, BM, BN, BK = _selection_lines(kid, spec, x, rec.op, k, n, largest, rows, kinds)
        how = f"{k} selection rounds"
    return _module(spec, rec, x, shape, dim, k, largest, rows, kern, BM, BN, BK, how)


def _selection_lines(kid, spec, x, op, k, n, largest, rows, kinds) -> tuple[list[str], int, int, int]:
    BN = pow2_at_least(n)
    BK = pow2_at_least(k)
    BM = max(1, min(TILE_ELEMS // BN, pow2_at_least(rows)))
    packed = bool(TUNING["packed_keys"])
    keys = line_keys(x.dtype, BN, select=True) if packed else Keys()
    kern = line_kernel_head(kid, spec, x, f'{op}: top-{k} {"largest" if largest else "smallest"} of lines of {n} '
                            f'({BM} lines per block)', keys=keys)
    kern += [f"{I}ks = ct.broadcast_to(ct.arange(BK, dtype=ct.int32)[None, :], (BM, BK))"]
    kern += keys.encode(largest, n) if packed else [f"{I}taken = cols >= {n}  # the tile's padding columns",
                                                     f"{I}isnan = t != t"]
    kern += [f"{I}top_val = ct.full((BM, BK), 0.0, dtype=ct.float32)",
             f"{I}top_col = ct.full((BM, BK), 0, dtype=ct.int32)",
             f"{I}for j in range({k}):"]
    kern += _packed_round(largest, keys) if packed else _select_lines(largest)
    kern += [f"{I}{I}top_val = ct.where(ks == j, val, top_val)",
             f"{I}{I}top_col = ct.where(ks == j, col, top_col)"]
    if not packed:
        kern.append(f"{I}{I}taken = taken | (cols == col)")
    for o, kind in zip(spec.outputs, kinds):
        tile = "top_val" if kind == 0 else "top_col"
        kern.append(f"{I}ct.store({out_param(o)}, index=(pid, 0), tile={tile}.astype({out_param(o)}.dtype))")
    return kern, BM, BN, BK


def _module(spec, rec, x, shape, dim, k, largest, rows, kern, BM, BN, BK, how) -> KernelSource:
    kid = spec.id
    xp = array_param(x)
    n = shape[dim]
    w, outs, _ = line_wrapper_head(spec, x, shape, dim, k, rows)
    grid = -(-rows // BM)
    w.append(f"{I}ct.launch(torch.cuda.current_stream(), ({grid}, 1, 1), {kid}_kernel, "
             f"({', '.join([xp] + outs + [str(BM), str(BN), str(BK)])}))")
    w.append(ret_outputs(spec))
    wrapper = "\n".join(w)
    note = (f"{rec.op} k={k} {'largest' if largest else 'smallest'} along dim {dim} of {shape}: {rows} lines of {n} "
            f"in ({BM}, {BN}) tiles, {how}")
    return module(spec, ["\n".join(kern)], wrapper, [f"{kid}_kernel"], [note])
