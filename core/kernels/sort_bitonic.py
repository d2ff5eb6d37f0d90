"""Whole-line sorts for the topk family: `torch.sort` / `argsort` of lines longer than the selection kernel takes,
and `torch.topk` with k above topk.MAX_K (the line sorted, its first k kept).

Each block holds BM lines of BN elements (the line length rounded up to a power of two) as the packed keys of
sort_keys.py (the value's order-preserving image in the high bits, BN - 1 - column in the low ones: unique keys,
so sorting them descending gives PyTorch's order, ties at the lower index first, NaN first for largest=True and
last otherwise) and sorts them with a bitonic network, log2(BN) (log2(BN) + 1) / 2 compare-exchange stages over the
whole tile. A stage of block size k and stride j views the tile as (BM, BN / 2j, 2, j): `ct.extract` takes the two
halves, maximum/minimum exchange them (descending where the group's bit k is clear), `ct.cat` puts them back.
Padding columns hold the smallest key and sort to the end; stores past the line are dropped by the bounds check.
"""

from __future__ import annotations

from .base import pow2_at_least
from .gemm_common import kernel_decorator
from .indexing import array_param, out_param, wrapper_head
from .sort_keys import Keys

MAX_SORT_LINE = 4096  # elements of one line sorted in one tile
SORT_TILE_ELEMS = 4096  # elements per (BM, BN) tile when lines are short
# "sort_worker_warps": num_worker_warps of the sort kernel (None: the compiler's choice); "sort_form": "halves"
# (each stage extracts the two halves of every pair group and puts max/min back with ct.cat) or "partner" (each
# stage builds the partner tile, key i ^ j, and keeps max or min in place by a column mask)
# "long_chunk": elements per chunk sort of lines longer than MAX_SORT_LINE (sort_long.py); "topk_rounds" /
# "topk_rounds_tile": a top-k of a chunk (sort_long.py) / of a whole line (here) by sorted groups of k and halving
# rounds (network_lines' `keep`) instead of a whole sort (H100, session 30, topk k=256 16384x2048 bf16: the whole
# sort 3.671 ms, 0.18x eager; halving rounds with occupancy 4 0.803, 0.82x)
# "rank_tile": kept keys per block of sort_long.py's rank kernel (sm_90, the 32000-element sort: 128 compiles to
# R64 and no shared memory, 1024 to R254 and 230 KB of shared memory per block, one block per SM)
# "sort_occupancy": the sort kernels' occupancy hint (None: none). Without one the compiler stages the network's
# layout changes through ~170-200 KB of shared memory per block whatever the tile's size (one block per SM); at 4
# the sm_90 cubins take 33 KB and a quarter fewer instructions, spill-free. H100, session 30: sort 4096 per line
# 8192x4096 fp32 4.534 -> 2.107 ms, top-50 of 1024x32000 bf16 1.675 -> 0.551, sort 256x32000 fp32 1.613 -> 0.841
# (occupancy 2 and 8 worker warps measured slower than 4)
# "keys32" / "keys32_select": float16 / bfloat16 lines whose span fits 16 bits as int32 keys (sort_keys.py), not
# int64, in the sorts (bitonic, long lines) / in topk.py's selection rounds. H100, session 32, bf16: top-8 of 1024
# 0.200 -> 0.110 ms, top-256 of 2048 0.809 -> 0.360, top-50 of 32000 0.552 -> 0.246, sort of 4096 1.601 -> 0.732
SORT_TUNING = {"sort_worker_warps": None, "sort_form": "halves", "long_chunk": 4096, "topk_rounds": True,
               "topk_rounds_tile": True, "rank_tile": 128,
               "sort_occupancy": 4, "keys32": True, "keys32_select": True}
I = "    "


def stages(bn: int) -> list[tuple[int, int]]:
    """(block size k, stride j) of every compare-exchange stage of a bitonic sort of `bn` (a power of two)."""
    out = []
    k = 2
    while k <= bn:
        j = k // 2
        while j >= 1:
            out.append((k, j))
            j //= 2
        k *= 2
    return out


def tile_shape(rows: int, n: int) -> tuple[int, int]:
    bn = pow2_at_least(n, 2)
    return max(1, min(SORT_TILE_ELEMS // bn, pow2_at_least(rows))), bn


def line_kernel_head(kid: str, spec, x, doc: str, sort: bool = False, keys: Keys = Keys()) -> list[str]:
    """The start of a topk-family kernel: signature (x, outputs, BM, BN, BK), a docstring, the block's (BM, BN)
    tile `t` of lines (float32, or the 16-bit source values for narrow `keys`) and its column indices `cols`."""
    xp = array_param(x)
    params = [xp] + [out_param(o) for o in spec.outputs]
    return [sort_decorator() if sort else "@ct.kernel",
            f"def {kid}_kernel({', '.join(params)}, BM: ct.Constant[int], BN: ct.Constant[int], "
            "BK: ct.Constant[int]):",
            f'{I}"""{doc}"""',
            f"{I}pid = ct.bid(0)",
            f"{I}t = ct.load({xp}, index=(pid, 0), shape=(BM, BN), padding_mode=ct.PaddingMode.ZERO)"
            + keys.load_cast,
            f"{I}cols = ct.broadcast_to(ct.arange(BN, dtype=ct.int32)[None, :], (BM, BN))"]


def line_keys(dtype: str, span: int, select: bool = False) -> Keys:
    """The packed keys of lines of `dtype` whose low part spans `span` columns, for a sort or (`select`) for
    selection rounds (SORT_TUNING["keys32"] / ["keys32_select"])."""
    return Keys.for_line(dtype, span, bool(SORT_TUNING["keys32_select" if select else "keys32"]))


def sort_decorator() -> str:
    """The sort kernels' @ct.kernel line, with SORT_TUNING's worker warps and occupancy hint where set."""
    return kernel_decorator(SORT_TUNING["sort_occupancy"], worker_warps=SORT_TUNING["sort_worker_warps"])


def network_lines(bm: str, bn: int, bn_name: str = "BN", keep: int | None = None) -> list[str]:
    """The compare-exchange stages sorting the (bm, bn) packed tile `keys` descending along its last dim (`bm`,
    `bn_name`: the names of its extents in the kernel; `cols`: the tile's column indices, for the partner form).

    With `keep` (a power of two below bn) only the first `keep` keys are wanted, and `keys` ends as a (bm, keep)
    tile: groups of `keep` are sorted in alternating directions (the network's stages up to that size), then each
    round keeps the elementwise maximum of every descending group and its ascending neighbour (a bitonic sequence
    holding the pair's top `keep`) and merges it (log2 keep stages over half the keys): log2 keep (log2 keep + 1) / 2
    stages over bn keys plus (log2 keep + 1) over bn / 2 + bn / 4 + ... instead of log2 bn (log2 bn + 1) / 2."""
    partner = SORT_TUNING["sort_form"] == "partner"
    if keep is None or keep >= bn:
        return _stage_lines(bm, bn, bn_name, stages(bn), partner)
    L = _stage_lines(bm, bn, bn_name, stages(keep), partner)
    n = bn
    merge = [s for s in stages(keep) if s[0] == keep]
    while n > keep:
        L += _halves(bm, n // (2 * keep), keep)
        L.append(f"{I}keys = ct.reshape(ct.maximum(a, b), ({bm}, {n // 2}))  # each pair's top {keep}, bitonic")
        n //= 2
        L += _stage_lines(bm, n, str(n), merge, False)
    return L


def _halves(bm: str, g: int, j: int) -> list[str]:
    """`keys` viewed as (bm, g, 2, j): `a` and `b`, the first and second half of every group of 2j."""
    return [f"{I}v = ct.reshape(keys, ({bm}, {g}, 2, {j}))",
            f"{I}a = ct.extract(v, index=(0, 0, 0, 0), shape=({bm}, {g}, 1, {j}))",
            f"{I}b = ct.extract(v, index=(0, 0, 1, 0), shape=({bm}, {g}, 1, {j}))"]


def _stage_lines(bm: str, bn: int, bn_name: str, stage_list: list[tuple[int, int]], partner: bool) -> list[str]:
    """Compare-exchange stages (size, j) over the (bm, bn) tile `keys`: a group of `size` descending where its
    bit `size` of the column is clear, ascending otherwise; size == bn: the whole line descending."""
    L: list[str] = []
    for size, j in stage_list:
        g = bn // (2 * j)
        L += _halves(bm, g, j)
        if partner:
            L += [f"{I}p = ct.reshape(ct.cat((b, a), 2), ({bm}, {bn_name}))",
                  f"{I}keep_max = ((cols & {j}) == 0)" + ("" if size == bn else f" == ((cols & {size}) == 0)"),
                  f"{I}keys = ct.where(keep_max, ct.maximum(keys, p), ct.minimum(keys, p))"]
            continue
        L += [f"{I}hi = ct.maximum(a, b)",
              f"{I}lo = ct.minimum(a, b)"]
        if size == bn:  # the last merge: the whole line descending
            L.append(f"{I}keys = ct.reshape(ct.cat((hi, lo), 2), ({bm}, {bn_name}))")
        else:
            L += [f"{I}down = ct.reshape(((ct.arange({g}, dtype=ct.int32) * {2 * j}) & {size}) == 0, (1, {g}, 1, 1))",
                  f"{I}keys = ct.reshape(ct.cat((ct.where(down, hi, lo), ct.where(down, lo, hi)), 2), "
                  f"({bm}, {bn_name}))"]
    return L


def first_keys(bm: str, bn: int, bn_name: str, keep: int, keep_name: str, rounds: bool, into: str) -> list[str]:
    """`into` = the first `keep` of the (bm, bn) packed `keys` once sorted: by halving rounds (network_lines'
    `keep`) when `rounds` and keep < bn, else by the whole network and an extract."""
    if rounds and keep < bn:
        L = network_lines(bm, bn, bn_name, keep=keep)
    else:
        L = network_lines(bm, bn, bn_name)
        if keep < bn:
            return L + [f"{I}{into} = ct.extract(keys, index=(0, 0), shape=({bm}, {keep_name}))"]
    return L + ([f"{I}{into} = keys"] if into != "keys" else [])


def line_wrapper_head(spec, x, shape: list[int], dim: int, k: int, rows: int) -> tuple[list[str], list[str], str]:
    """The topk-family wrapper's first lines: the source as (rows, n) lines (the topk dim moved last), the outputs
    allocated (as views back into the model's layout when the dim is not last); returns (lines, the outputs as
    (rows, k) launch arguments, the device expression)."""
    xp = array_param(x)
    n = shape[dim]
    w: list[str] = []
    device = wrapper_head(spec, w)
    last = dim == len(shape) - 1
    if last:
        w.append(f"{I}{xp} = {xp}.contiguous().view({rows}, {n})")
    else:
        w.append(f"{I}{xp} = {xp}.movedim({dim}, -1).contiguous().view({rows}, {n})  # the topk dim last")
    lines_shape = tuple([s for i, s in enumerate(shape) if i != dim] + [k])
    outs = []
    for o in spec.outputs:
        if last:
            w.append(f"{I}{o.name} = torch.empty({tuple(o.shape)!r}, dtype=torch.{o.dtype}, device={device})")
            outs.append(f"{o.name}.view({rows}, {k})")
        else:  # written with the topk dim last, returned in the model's layout (a view)
            w.append(f"{I}{o.name}_lines = torch.empty({lines_shape!r}, dtype=torch.{o.dtype}, device={device})")
            w.append(f"{I}{o.name} = {o.name}_lines.movedim(-1, {dim})")
            outs.append(f"{o.name}_lines.view({rows}, {k})")
    return w, outs, device


def kernel_lines(kid: str, spec, x, op: str, k: int, n: int, largest: bool, rows: int,
                 kinds: list[int]) -> tuple[list[str], int, int, int]:
    """The sort kernel's lines and its (BM, BN, BK) tile constants."""
    BM, BN = tile_shape(rows, n)
    BK = pow2_at_least(k)
    keys = line_keys(x.dtype, BN)
    L = line_kernel_head(kid, spec, x, f'{op}: lines of {n} sorted {"descending" if largest else "ascending"} '
                         f'by a bitonic network ({BM} lines per block), the first {k} stored', sort=True, keys=keys)
    L += keys.encode(largest, n)
    L += first_keys("BM", BN, "BN", BK, "BK", SORT_TUNING["topk_rounds_tile"], into="top")
    L += keys.decode(largest, "top", "BN")
    for o, kind in zip(spec.outputs, kinds):
        tile = "top_val" if kind == 0 else "top_col"
        L.append(f"{I}ct.store({out_param(o)}, index=(pid, 0), tile={tile}.astype({out_param(o)}.dtype))")
    return L, BM, BN, BK
