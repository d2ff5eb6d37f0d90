"""Pooling kernels: max/avg pooling (1d/2d/3d, with indices), adaptive avg/max pooling, fused elementwise epilogue.

Layout: the input is (lead..., *spatial) with nd spatial dims (lead is (N, C), (C,) or anything else); the output
(lead..., *out_spatial) is tiled as a 2-D (rows = lead elements, cols = flattened output positions) problem. Three
strategies, chosen per spec:
- windowed (general): each block owns a (BR, BP) tile of outputs, walks the pooling window with runtime loops and
  reads the window element of every output with one `ct.gather` (int32 offsets into a flat view of the input when it
  has < 2^31 elements, per-dim indices otherwise); window elements outside the input are masked to -inf (max) or 0
  (avg). Windows follow PyTorch exactly: start = o*stride - pad (+ k*dilation); the avg divisor clips the window to
  the padded input first (count_include_pad) or to the input (exclude pad), divisor_override wins; adaptive windows
  are [floor(o*In/Out), ceil((o+1)*In/Out)); max keeps the first maximum (NaN propagates) and its flat spatial
  index. ceil_mode only changes the output size, which the spec carries.
- aligned (kernel == stride, power-of-two kernel, no padding/dilation/indices: the common max_pool2d(2)): the
  wrapper views the input as (rows * O0, K0, O1, K1, ...) so every window offset is its own axis; each block loads a
  (BM, K0, BO1, K1, ...) tile with `ct.load` and reduces the K axes (ceil_mode tails: load + in-kernel reshape).
  Tile sizes and the layout come from indexing.MEMORY_TUNING.
- shifted (overlapping windows, no dilation/indices, power-of-two stride dividing each input dim: max_pool2d(3, 2, 1)
  on even sizes, 3x3/1 pools): the input is viewed as (rows, In0/s0, s0, ..., InL) and every distinct window shift
  is one tile-aligned `ct.load` of that view sliced at the block's first output + shift (`Array.slice`); blocks
  at the start of a dim read their negative-shift halo with a bounds-checked `ct.gather` (see _shifted).
- global (every output spatial size 1 and a window covering the whole input): a row reduction over (BR, BS) tiles of
  the (rows, positions) view, coalesced `ct.load`s, float32 accumulation.
"""

from __future__ import annotations

from ..specs import KernelSpec, OpRecord
from .base import KernelSource, Unsupported, pow2_at_least
from .expr import COL_INDEX, ROW_INDEX, bind_args
from .indexing import (MEMORY_TUNING, SideLoader, alloc_outputs, array_param, decode, elementwise, guarded,
                       input_args, input_for, module, out_param, output_vars, prod, register_tuple_items, ret_outputs, tup, tuple_items,
                       wrapper_head)

I = "    "
FLAT_LIMIT = 2 ** 31  # inputs with fewer elements are gathered through a flat view with int32 offsets
_KINDS = {
    "max_pool1d": ("max", 1), "max_pool2d": ("max", 2), "max_pool3d": ("max", 3),
    "max_pool1d_with_indices": ("max", 1), "max_pool2d_with_indices": ("max", 2),
    "max_pool3d_with_indices": ("max", 3),
    "avg_pool1d": ("avg", 1), "avg_pool2d": ("avg", 2), "avg_pool3d": ("avg", 3),
    "adaptive_avg_pool1d": ("aavg", 1), "adaptive_avg_pool2d": ("aavg", 2), "adaptive_avg_pool3d": ("aavg", 3),
    "_adaptive_avg_pool2d": ("aavg", 2), "_adaptive_avg_pool3d": ("aavg", 3),
    "adaptive_max_pool1d": ("amax", 1), "adaptive_max_pool2d": ("amax", 2), "adaptive_max_pool3d": ("amax", 3),
}
_TUPLE_OPS = {"max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
              "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d"}


def _ints(v, nd: int, default=None) -> list[int]:
    if v is None or v == []:
        if default is None:
            raise Unsupported(f"missing pooling parameter (got {v!r})")
        return list(default)
    if isinstance(v, int):
        return [v] * nd
    v = [int(x) for x in v]
    return v * nd if len(v) == 1 else v


def _indices_used(spec: KernelSpec, rec: OpRecord) -> bool:
    """Whether anything reads element 1 (the indices) of a (values, indices) pooling result."""
    names = {n for n, (src, i) in tuple_items(spec).items() if src == rec.node and i == 1}
    used = {o.graph_value for o in spec.outputs} | {o.name for o in spec.outputs}
    used |= {v for r in spec.ops for v in r.inputs}
    return bool(names & used)


class _Pool:
    """The parsed pooling op."""

    def __init__(self, spec: KernelSpec, rec: OpRecord):
        op = rec.op
        if op not in _KINDS:
            raise Unsupported(f"{rec.target}: no pooling generator for this op")
        self.kind, nd = _KINDS[op]
        self.nd = nd
        a = bind_args(rec)
        self.x = input_for(spec, a.get("self", rec.args[0] if rec.args else None), rec.target)
        shape = list(self.x.shape)
        if len(shape) < nd + 1:
            raise Unsupported(f"{rec.target}: input of rank {len(shape)}")
        self.lead, self.insp = shape[:-nd], shape[-nd:]
        out = list(rec.output)
        if len(out) != len(shape) or out[:-nd] != self.lead:
            raise Unsupported(f"{rec.target}: unexpected output shape {out} for input {shape}")
        self.outsp = out[-nd:]
        self.out_shape = out
        self.with_indices = op in _TUPLE_OPS and _indices_used(spec, rec)
        self.divisor = None
        self.count_include_pad = True
        if self.kind in ("max", "avg"):
            self.k = _ints(a.get("kernel_size"), nd)
            self.s = _ints(a.get("stride"), nd, self.k)
            self.p = _ints(a.get("padding", 0), nd, [0] * nd)
            self.d = _ints(a.get("dilation", 1), nd, [1] * nd) if self.kind == "max" else [1] * nd
            if self.kind == "avg":
                self.count_include_pad = bool(a.get("count_include_pad", True))
                div = a.get("divisor_override")
                self.divisor = int(div) if isinstance(div, (int, float)) and div else None
            if any(v <= 0 for v in self.k + self.s + self.d) or any(v < 0 for v in self.p):
                raise Unsupported(f"{rec.target}: kernel/stride/dilation must be positive, padding >= 0")
        else:
            self.k = [max(self._aend(o, i, n) - self._astart(o, i, n) for o in range(n))
                      for i, n in zip(self.insp, self.outsp)]
            self.s, self.p, self.d = [1] * nd, [0] * nd, [1] * nd
        if any(n <= 0 for n in self.outsp + self.insp):
            raise Unsupported(f"{rec.target}: empty input or output")

    @staticmethod
    def _astart(o: int, i: int, n: int) -> int:
        return (o * i) // n

    @staticmethod
    def _aend(o: int, i: int, n: int) -> int:
        return -((-(o + 1) * i) // n)

    @property
    def is_global(self) -> bool:
        if self.with_indices or any(n != 1 for n in self.outsp):
            return False
        if self.kind in ("aavg", "amax"):
            return True
        return all(p == 0 and d == 1 and k == i for p, d, k, i in zip(self.p, self.d, self.k, self.insp))

    @property
    def is_aligned(self) -> bool:
        """Non-overlapping power-of-two windows with no padding or dilation (the common max_pool2d(2))."""
        if self.kind not in ("max", "avg") or self.with_indices:
            return False
        return all(k == s and p == 0 and d == 1 and k & (k - 1) == 0 and o * k <= i + k - 1
                   for k, s, p, d, o, i in zip(self.k, self.s, self.p, self.d, self.outsp, self.insp))

    @property
    def is_shiftable(self) -> bool:
        """Windows at a power-of-two stride that divides the input, no dilation, no indices (max_pool2d(3, 2, 1) on
        an even-sized input, 3x3/1 pools, ...): the input viewed as (rows, In0/s0, s0, ...) holds every window
        element of a block's outputs in a few shifted, tile-aligned sub-arrays (see _shifted)."""
        if self.kind not in ("max", "avg") or self.with_indices:
            return False
        if not all(d == 1 and s & (s - 1) == 0 and i % s == 0 for d, s, i in zip(self.d, self.s, self.insp)):
            return False
        # one load (and a gather fallback) per distinct shift vector: keep the kernel small
        return prod([len(_shift_groups(k, s, p)) for k, s, p in zip(self.k, self.s, self.p)]) <= 27

    @property
    def rows(self) -> int:
        return prod(self.lead)

    @property
    def positions(self) -> int:
        return prod(self.outsp)


def _tiles(rows: int, cols: int, col_cap: int, budget: int) -> tuple[int, int]:
    bc = pow2_at_least(cols, 1, col_cap)
    br = pow2_at_least(rows, 1, max(1, budget // bc))
    return br, bc


@guarded
def generate(spec: KernelSpec) -> KernelSource:
    _, anchor, epilogue = _split(spec)
    pool = _Pool(spec, anchor)
    if pool.is_global:
        return _global(spec, anchor, pool, epilogue)
    if pool.is_aligned:
        return _aligned(spec, anchor, pool, epilogue)
    if pool.is_shiftable and MEMORY_TUNING["pool_overlap_mode"] == "shifted":
        return _shifted(spec, anchor, pool, epilogue)
    return _windowed(spec, anchor, pool, epilogue)


def _pow2_floor(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def _aligned_tiles(K: list[int], O: list[int], R: int, budget: int) -> tuple[int, list[int]]:
    """(BR, BO): output tile of an aligned pool, ~`budget` input elements per block, the innermost output dim
    first (up to 256 input elements wide, for coalesced rows), then outer dims, then rows."""
    nd = len(K)
    rem = budget
    BO = [1] * nd
    for i in reversed(range(nd)):
        cap = max(1, rem // K[i])
        if i == nd - 1:
            cap = min(cap, max(1, 256 // K[i]))
        BO[i] = pow2_at_least(O[i], 1, _pow2_floor(cap))
        rem = max(1, rem // (BO[i] * K[i]))
    return pow2_at_least(R, 1, _pow2_floor(rem)), BO


def _aligned(spec: KernelSpec, rec: OpRecord, pool: _Pool, epilogue: list[OpRecord]) -> KernelSource:
    """Non-overlapping windows (kernel == stride, no padding/dilation, power-of-two kernel): coalesced `ct.load`s
    of whole windows instead of per-element gathers. Two layouts (MEMORY_TUNING["pool_aligned_mode"]):
    - "split": the wrapper views the input as (rows, O0, K0, O1, K1, ...) (a free view: each spatial dim split
      into output position x window offset) and each block loads a (BR, BO0, K0, BO1, K1, ...) tile and reduces
      the K axes — no data movement inside the kernel;
    - "reshape": each block loads a (BR, BO0*K0, ...) tile of the (rows, In...) input and reshapes it.
    A ceil_mode tail (the last window clipped by the input) cannot be viewed that way and uses "reshape"."""
    nd, kid = pool.nd, spec.id
    R, K, O, In = pool.rows, pool.k, pool.outsp, pool.insp
    BR, BO = _aligned_tiles(K, O, R, int(MEMORY_TUNING["pool_aligned_elems"]))
    nb = [-(-o // b) for o, b in zip(O, BO)]
    nbp = prod(nb)
    is_max = pool.kind == "max"
    split_mode = MEMORY_TUNING["pool_aligned_mode"] == "split" and all(o * k <= i for o, k, i in zip(O, K, In))
    if split_mode and In[0] == O[0] * K[0]:
        return _aligned_merged(spec, rec, pool, epilogue)
    x = array_param(pool.x)
    params = ", ".join(input_args(spec) + [out_param(o) for o in spec.outputs])
    consts = ", ".join(["BR: ct.Constant[int]"] + [f"BO{i}: ct.Constant[int]" for i in range(nd)])
    lines = ["@ct.kernel", f"def {kid}_kernel({params}, {consts}):",
             f"{I}bid = ct.bid(0)", f"{I}pid_r = bid // {nbp}", f"{I}q = bid % {nbp}"]
    for i in range(nd):
        inner = prod(nb[i + 1:])
        expr = "q" if inner == 1 else f"(q // {inner})"
        if nb[i] == 1:
            lines.append(f"{I}pid_{i} = 0")
        else:
            lines.append(f"{I}pid_{i} = {expr} % {nb[i]}" if i > 0 else f"{I}pid_{i} = {expr}")
    split = tup(["BR"] + [x for i in range(nd) for x in (f"BO{i}", str(K[i]))])
    out_tile = tup(["BR"] + [f"BO{i}" for i in range(nd)])
    axes = tup([2 + 2 * i for i in range(nd)])
    index = tup(["pid_r"] + [f"pid_{i}" for i in range(nd)])
    pad = "ct.PaddingMode.NEG_INF" if is_max else "ct.PaddingMode.ZERO"
    if split_mode:
        split_index = tup(["pid_r"] + [x for i in range(nd) for x in (f"pid_{i}", "0")])
        lines.append(f"{I}t = ct.load({x}, index={split_index}, shape={split}, padding_mode={pad})"
                     f".astype(ct.float32)")
    else:
        in_tile = tup(["BR"] + [f"BO{i} * {K[i]}" for i in range(nd)])
        lines.append(f"{I}t = ct.reshape(ct.load({x}, index={index}, shape={in_tile}, padding_mode={pad})"
                     f".astype(ct.float32), {split})")
    # coordinates of the outputs: rows (BR, 1, ...), spatial (1, .., BOi, .., 1)
    lines.append(f"{I}rr = ct.reshape(pid_r * BR + ct.arange(BR, dtype=ct.int32), {tup(['BR'] + ['1'] * nd)})")
    osp = []
    for i in range(nd):
        shape = ["1"] * (nd + 1)
        shape[i + 1] = f"BO{i}"
        lines.append(f"{I}o{i} = ct.reshape(pid_{i} * BO{i} + ct.arange(BO{i}, dtype=ct.int32), {tup(shape)})")
        osp.append(f"o{i}")
    if is_max:
        lines.append(f"{I}acc = ct.max(t, axis={axes}, propagate_nan=True)")
    else:
        lines.append(f"{I}acc = ct.sum(t, axis={axes})")
        if pool.divisor is not None:
            lines.append(f"{I}acc = acc / {float(pool.divisor)!r}")
        else:
            terms = []
            for i in range(nd):
                if O[i] * K[i] > In[i]:  # ceil_mode tail: the last window is clipped to the input
                    terms.append(f"(ct.minimum(o{i} * {K[i]} + {K[i]}, {In[i]}) - o{i} * {K[i]})")
            if terms:
                full = prod([K[i] for i in range(nd) if O[i] * K[i] <= In[i]])
                div = " * ".join(terms + ([str(full)] if full != 1 else []))
                lines.append(f"{I}acc = acc / ct.broadcast_to(({div}).astype(ct.float32), {out_tile})")
            else:
                lines.append(f"{I}acc = acc / {float(prod(K))!r}")
    env: dict[str, str] = {rec.node: "acc"}
    if epilogue:
        lead = decode("rr", pool.lead, lines, I, "l")
        row = osp[-2] if nd >= 2 else (lead[-1] if lead else "0")
        for key, c in ((ROW_INDEX, row), (COL_INDEX, osp[-1])):
            env[key] = f"ct.zeros({out_tile}, dtype=ct.int32)" if c == "0" else f"ct.broadcast_to({c}, {out_tile})"
        sides = SideLoader(spec, lead + osp, pool.out_shape, out_tile, lines, I)
        env = elementwise(epilogue, env, sides, lines, I)
    _store_lines(spec, env, out_tile, index, lines)
    kernel = "\n".join(lines)

    w: list[str] = []
    device = wrapper_head(spec, w)
    w.append(f"{I}{x} = {x}.reshape({', '.join(map(str, [R] + In))})")
    if split_mode:
        if any(o * k < i for o, k, i in zip(O, K, In)):  # floor mode: the last input rows/cols are never read
            w.append(f"{I}{x} = {x}[:, {', '.join(f':{o * k}' for o, k in zip(O, K))}]")
        w.append(f"{I}{x} = {x}.view({', '.join(map(str, [R] + [v for o, k in zip(O, K) for v in (o, k)]))})")
    alloc_outputs(spec, device, w)
    _check_output_shapes(spec, pool)
    outs = [f"{o.name}.view({', '.join(map(str, [R] + O))})" for o in spec.outputs]
    w.append(f"{I}ct.launch(torch.cuda.current_stream(), ({-(-R // BR) * nbp}, 1, 1), {kid}_kernel, "
             f"({', '.join(input_args(spec) + outs + [str(BR)] + [str(b) for b in BO])}))")
    w.append(ret_outputs(spec))
    return module(spec, [kernel], "\n".join(w), [f"{kid}_kernel"],
                  [f"{rec.op}: non-overlapping {K} windows, tile {BR} rows x {BO} outputs from "
                   f"{'split-view' if split_mode else 'reshaped'} tile loads"])


def _aligned_merged(spec: KernelSpec, rec: OpRecord, pool: _Pool, epilogue: list[OpRecord]) -> KernelSource:
    """The "split" layout with the rows merged into the first output dim: the input is viewed as
    (rows * O0, K0, O1, K1, ...) and the output as (rows * O0, O1, ...), so the tile's row axis runs over
    (row, output row) pairs and no lanes are lost to a partial O0 tile (56 output rows are not a power of two).
    Needs In0 == O0 * K0 (the view then costs nothing)."""
    nd, kid = pool.nd, spec.id
    R, K, O, In = pool.rows, pool.k, pool.outsp, pool.insp
    M = R * O[0]
    budget = int(MEMORY_TUNING["pool_aligned_elems"])
    BM, BO = _aligned_tiles(K[1:], O[1:], M, max(1, budget // K[0]))
    nb = [-(-o // b) for o, b in zip(O[1:], BO)]
    nbp = prod(nb)
    is_max = pool.kind == "max"
    x = array_param(pool.x)
    params = ", ".join(input_args(spec) + [out_param(o) for o in spec.outputs])
    consts = ", ".join(["BM: ct.Constant[int]"] + [f"BO{i + 1}: ct.Constant[int]" for i in range(nd - 1)])
    lines = ["@ct.kernel", f"def {kid}_kernel({params}, {consts}):",
             f"{I}bid = ct.bid(0)", f"{I}pid_m = bid // {nbp}" if nbp > 1 else f"{I}pid_m = bid"]
    if nbp > 1:
        lines.append(f"{I}q = bid % {nbp}")
    for j in range(nd - 1):
        inner = prod(nb[j + 1:])
        expr = "q" if inner == 1 else f"(q // {inner})"
        if nb[j] == 1:
            lines.append(f"{I}pid_{j + 1} = 0")
        else:
            lines.append(f"{I}pid_{j + 1} = {expr} % {nb[j]}" if j > 0 else f"{I}pid_{j + 1} = {expr}")
    tile = tup(["BM", str(K[0])] + [v for i in range(1, nd) for v in (f"BO{i}", str(K[i]))])
    index = tup(["pid_m", "0"] + [v for i in range(1, nd) for v in (f"pid_{i}", "0")])
    out_tile = tup(["BM"] + [f"BO{i}" for i in range(1, nd)])
    out_index = tup(["pid_m"] + [f"pid_{i}" for i in range(1, nd)])
    axes = tup([1 + 2 * i for i in range(nd)])
    pad = "ct.PaddingMode.NEG_INF" if is_max else "ct.PaddingMode.ZERO"
    lines.append(f"{I}t = ct.load({x}, index={index}, shape={tile}, padding_mode={pad}).astype(ct.float32)")
    if is_max:
        lines.append(f"{I}acc = ct.max(t, axis={axes}, propagate_nan=True)")
    else:
        lines.append(f"{I}acc = ct.sum(t, axis={axes}) / {float(pool.divisor or prod(K))!r}")
    env: dict[str, str] = {rec.node: "acc"}
    if epilogue:
        lines.append(f"{I}mm = ct.reshape(pid_m * BM + ct.arange(BM, dtype=ct.int32), {tup(['BM'] + ['1'] * (nd - 1))})")
        lines.append(f"{I}rr = mm // {O[0]}")
        osp = ["o0"]
        lines.append(f"{I}o0 = mm % {O[0]}")
        for i in range(1, nd):
            shape = ["1"] * nd
            shape[i] = f"BO{i}"
            lines.append(f"{I}o{i} = ct.reshape(pid_{i} * BO{i} + ct.arange(BO{i}, dtype=ct.int32), {tup(shape)})")
            osp.append(f"o{i}")
        lead = decode("rr", pool.lead, lines, I, "l")
        row = osp[-2] if nd >= 2 else (lead[-1] if lead else "0")
        for key, c in ((ROW_INDEX, row), (COL_INDEX, osp[-1])):
            env[key] = f"ct.zeros({out_tile}, dtype=ct.int32)" if c == "0" else f"ct.broadcast_to({c}, {out_tile})"
        sides = SideLoader(spec, lead + osp, pool.out_shape, out_tile, lines, I)
        env = elementwise(epilogue, env, sides, lines, I)
    _store_lines(spec, env, out_tile, out_index, lines)
    kernel = "\n".join(lines)

    w: list[str] = []
    device = wrapper_head(spec, w)
    w.append(f"{I}{x} = {x}.reshape({', '.join(map(str, [R] + In))})")
    if any(o * k < i for o, k, i in zip(O, K, In)):  # floor mode: the last input rows/cols are never read
        w.append(f"{I}{x} = {x}[:, {', '.join(f':{o * k}' for o, k in zip(O, K))}]")
    view = [M, K[0]] + [v for o, k in zip(O[1:], K[1:]) for v in (o, k)]
    w.append(f"{I}{x} = {x}.view({', '.join(map(str, view))})")
    alloc_outputs(spec, device, w)
    _check_output_shapes(spec, pool)
    outs = [f"{o.name}.view({', '.join(map(str, [M] + O[1:]))})" for o in spec.outputs]
    w.append(f"{I}ct.launch(torch.cuda.current_stream(), ({-(-M // BM) * nbp}, 1, 1), {kid}_kernel, "
             f"({', '.join(input_args(spec) + outs + [str(BM)] + [str(b) for b in BO])}))")
    w.append(ret_outputs(spec))
    return module(spec, [kernel], "\n".join(w), [f"{kid}_kernel"],
                  [f"{rec.op}: non-overlapping {K} windows; input viewed as {view}, tile {BM} x {BO} outputs "
                   f"from split-view tile loads"])


def _split(spec: KernelSpec):
    idx = [i for i, r in enumerate(spec.ops) if r.category == "pooling"]
    if len(idx) != 1:
        raise Unsupported(f"expected one pooling op, found {len(idx)}")
    if idx[0] != 0:
        raise Unsupported("a pooling kernel with a fused prologue")
    return [], spec.ops[idx[0]], spec.ops[idx[0] + 1:]


def _store_lines(spec: KernelSpec, env: dict[str, str], shape: str, index: str, lines: list[str]) -> None:
    for o, var in output_vars(spec, env):
        lines.append(f"    ct.store({out_param(o)}, index={index}, "
                     f"tile=ct.broadcast_to({var}, {shape}).astype({out_param(o)}.dtype))")


def _windowed(spec: KernelSpec, rec: OpRecord, pool: _Pool, epilogue: list[OpRecord]) -> KernelSource:
    nd, kid = pool.nd, spec.id
    R, P = pool.rows, pool.positions
    # Tiles: up to 256 output positions, ~2048 outputs per block (the window loop keeps them in registers).
    BR, BP = _tiles(R, P, int(MEMORY_TUNING["pool_window_cols"]), int(MEMORY_TUNING["pool_window_outputs"]))
    npb = -(-P // BP)
    x = array_param(pool.x)
    lines = [f"@ct.kernel",
             f"def {kid}_kernel({', '.join(input_args(spec) + [out_param(o) for o in spec.outputs])}, "
             f"BR: ct.Constant[int], BP: ct.Constant[int]):",
             f"    bid = ct.bid(0)",
             f"    pid_r = bid // {npb}",
             f"    pid_p = bid % {npb}",
             f"    rr = (pid_r * BR + ct.arange(BR, dtype=ct.int32))[:, None]",
             f"    pp = (pid_p * BP + ct.arange(BP, dtype=ct.int32))[None, :]"]
    # A contiguous input of < 2^31 elements is read through a flat view with int32 offsets (one index per
    # gather instead of one per dim); window elements outside the input are then masked explicitly.
    flat_x = prod(pool.x.shape) < FLAT_LIMIT
    lead = [] if flat_x else decode("rr", pool.lead, lines, "    ", "l")
    osp = decode("pp", pool.outsp, lines, "    ", "o", bound_outer=True)
    if flat_x:
        lines.append(f"    base = rr * {prod(pool.insp)}")
    is_max = pool.kind in ("max", "amax")
    adaptive = pool.kind in ("aavg", "amax")
    tile = f"(BR, BP)"
    # window start (and, for adaptive pooling, end) per spatial dim: (1, BP) int32 tiles
    for i in range(nd):
        In, On = pool.insp[i], pool.outsp[i]
        if adaptive:
            lines.append(f"    ws{i} = ({osp[i]} * {In}) // {On}")
            lines.append(f"    we{i} = (({osp[i]} + 1) * {In} + {On - 1}) // {On}")
        else:
            start = osp[i] if pool.s[i] == 1 else f"{osp[i]} * {pool.s[i]}"
            lines.append(f"    ws{i} = {start} - {pool.p[i]}" if pool.p[i] else f"    ws{i} = {start} + 0")
    if is_max:
        lines.append(f"    acc = ct.full({tile}, -math.inf, dtype=ct.float32)")
        if pool.with_indices:
            lines.append(f"    arg = ct.full({tile}, -1, dtype=ct.int32)")
    else:
        lines.append(f"    acc = ct.zeros({tile}, dtype=ct.float32)")
    ind = "    "
    ok = None  # the running "window element inside the input" mask (None: always inside)
    for i in range(nd):
        In = pool.insp[i]
        lines.append(f"{ind}for k{i} in range({pool.k[i]}):")
        ind += "    "
        step = f"k{i}" if pool.d[i] == 1 else f"k{i} * {pool.d[i]}"
        lines.append(f"{ind}i{i} = ws{i} + {step}")
        conds = []
        if adaptive:
            conds.append(f"(i{i} < we{i})")
        elif pool.with_indices or flat_x:
            last = (pool.outsp[i] - 1) * pool.s[i] - pool.p[i] + (pool.k[i] - 1) * pool.d[i]
            if pool.p[i] > 0:
                conds.append(f"(i{i} >= 0)")
            if last >= In:
                conds.append(f"(i{i} < {In})")
        if conds:
            lines.append(f"{ind}ok{i} = {' & '.join(([ok] if ok else []) + conds)}")
            ok = f"ok{i}"
    spatial = " + ".join(f"i{i} * {prod(pool.insp[i + 1:])}" if i < nd - 1 else f"i{i}" for i in range(nd))
    gidx = f"base + ({spatial})" if flat_x else tup(lead + [f"i{i}" for i in range(nd)])
    pad = "-math.inf" if is_max else "0.0"
    mask = f", mask={ok}" if ok else ""
    lines.append(f"{ind}v = ct.gather({x}, {gidx}{mask}, padding_value={pad}).astype(ct.float32)")
    if is_max:
        if pool.with_indices:
            flat = spatial
            better = "((v > acc) | ct.isnan(v) | (arg < 0))"
            lines.append(f"{ind}upd = {ok + ' & ' if ok else ''}{better}")
            lines.append(f"{ind}arg = ct.where(upd, ct.broadcast_to({flat}, {tile}), arg)")
            lines.append(f"{ind}acc = ct.where(upd, v, acc)")
        else:
            lines.append(f"{ind}acc = ct.where((v > acc) | ct.isnan(v), v, acc)")
    else:
        lines.append(f"{ind}acc = acc + v")
    # average divisor, per output position
    if pool.kind == "aavg":
        cnt = " * ".join(f"(we{i} - ws{i})" for i in range(nd))
        lines.append(f"    acc = acc / ct.broadcast_to(({cnt}).astype(ct.float32), {tile})")
    elif pool.kind == "avg":
        if pool.divisor is not None:
            lines.append(f"    acc = acc / {float(pool.divisor)!r}")
        else:
            terms = []
            for i in range(nd):
                In, K, Pd = pool.insp[i], pool.k[i], pool.p[i]
                lines.append(f"    we{i} = ct.minimum(ws{i} + {K}, {In + Pd})")
                if pool.count_include_pad:
                    terms.append(f"(we{i} - ws{i})")
                else:
                    terms.append(f"(ct.minimum(we{i}, {In}) - ct.maximum(ws{i}, 0))")
            lines.append(f"    acc = acc / ct.broadcast_to(({' * '.join(terms)}).astype(ct.float32), {tile})")
    env: dict[str, str] = {}
    elements = ["acc", "arg" if pool.with_indices else None]
    if rec.op in _TUPLE_OPS:
        register_tuple_items(spec, env, rec.node, elements)
    else:
        env[rec.node] = "acc"
    if epilogue:
        if flat_x:
            lead = decode("rr", pool.lead, lines, "    ", "l")
        coords = lead + osp
        row = osp[-2] if nd >= 2 else (lead[-1] if lead else "0")
        for key, c in ((ROW_INDEX, row), (COL_INDEX, osp[-1])):
            env[key] = f"ct.zeros({tile}, dtype=ct.int32)" if c == "0" else f"ct.broadcast_to({c}, {tile})"
        sides = SideLoader(spec, coords, pool.out_shape, tile, lines, "    ",
                           exclude=[pool.x.graph_value] if flat_x else [])
        env = elementwise(epilogue, env, sides, lines, "    ")
    _store_lines(spec, env, tile, "(pid_r, pid_p)", lines)
    kernel = "\n".join(lines)

    w: list[str] = []
    device = wrapper_head(spec, w)
    if flat_x:
        w.append(f"    {x} = {x}.reshape(-1)")
    alloc_outputs(spec, device, w)
    outs = [f"{o.name}.view({R}, {P})" for o in spec.outputs]
    _check_output_shapes(spec, pool)
    grid = -(-R // BR) * npb
    w.append(f"    ct.launch(torch.cuda.current_stream(), ({grid}, 1, 1), {kid}_kernel, "
             f"({', '.join(input_args(spec) + outs + [str(BR), str(BP)])}))")
    w.append(ret_outputs(spec))
    return module(spec, [kernel], "\n".join(w), [f"{kid}_kernel"],
                  [f"{rec.op}: window {pool.k}, stride {pool.s}, padding {pool.p}, dilation {pool.d}; "
                   f"tile {BR} rows x {BP} output positions, gathered window loads"])


def _check_output_shapes(spec: KernelSpec, pool: _Pool) -> None:
    for o in spec.outputs:
        if o.shape != pool.out_shape:
            raise Unsupported(f"output {o.name} has shape {o.shape}, expected the pooled shape {pool.out_shape}")


def _global(spec: KernelSpec, rec: OpRecord, pool: _Pool, epilogue: list[OpRecord]) -> KernelSource:
    kid = spec.id
    R, S = pool.rows, prod(pool.insp)
    BS = pow2_at_least(S, 16, int(MEMORY_TUNING["pool_global_cols"]))
    BR = pow2_at_least(R, 1, max(1, int(MEMORY_TUNING["pool_global_elems"]) // BS))
    # keep at least ~2 blocks per SM where the rows allow it
    while BR > 1 and -(-R // BR) < 264:
        BR //= 2
    is_max = pool.kind in ("max", "amax")
    x = array_param(pool.x)
    lines = [f"@ct.kernel",
             f"def {kid}_kernel({', '.join(input_args(spec) + [out_param(o) for o in spec.outputs])}, "
             f"BR: ct.Constant[int], BS: ct.Constant[int]):",
             f"    pid = ct.bid(0)"]
    # S = nfull * BS + the power-of-two parts of the rest (largest first, so each part's offset is a multiple of
    # its width and it is one tile-aligned load): no lanes are wasted on padding (784 = 512 + 256 + 16); a last
    # part under 16 positions is one padded load
    nfull, rest = divmod(S, BS) if S >= BS else (0, S)
    parts, off = [], nfull * BS
    while rest:
        b = _pow2_floor(rest) if rest >= 16 else pow2_at_least(rest)
        parts.append((b, off))
        off += b
        rest = max(0, rest - b)
    pad = "NEG_INF" if is_max else "ZERO"
    red, comb = ("ct.max", "ct.maximum") if is_max else ("ct.sum", None)
    nan = ", propagate_nan=True" if is_max else ""
    init = "-math.inf" if is_max else "0.0"
    lines.append(f"    res = ct.full((BR, 1), {init}, dtype=ct.float32)")
    if nfull:
        lines += [f"    acc = ct.full((BR, BS), {init}, dtype=ct.float32)",
                  f"    for j in range({nfull}):",
                  f"        t = ct.load({x}, index=(pid, j), shape=(BR, BS), "
                  f"padding_mode=ct.PaddingMode.{pad}).astype(ct.float32)",
                  f"        acc = ct.maximum(acc, t, propagate_nan=True)" if is_max else f"        acc = acc + t",
                  f"    res = {red}(acc, axis=1, keepdims=True{nan})"]
    for b, o in parts:
        t = (f"ct.load({x}, index=(pid, {o // b}), shape=(BR, {b}), padding_mode=ct.PaddingMode.{pad})"
             f".astype(ct.float32)")
        part = f"{red}({t}, axis=1, keepdims=True{nan})"
        lines.append(f"    res = ct.maximum(res, {part}, propagate_nan=True)" if is_max else f"    res = res + {part}")
    if not is_max:
        lines.append(f"    res = res / {float(pool.divisor or S)!r}")
    env: dict[str, str] = {}
    if rec.op in _TUPLE_OPS:
        register_tuple_items(spec, env, rec.node, ["res", None])
    else:
        env[rec.node] = "res"
    if epilogue:
        lines.append(f"    rr = (pid * BR + ct.arange(BR, dtype=ct.int32))[:, None]")
        lead = decode("rr", pool.lead, lines, "    ", "l")
        coords = lead + ["0"] * pool.nd
        env[ROW_INDEX] = "ct.zeros((BR, 1), dtype=ct.int32)"
        env[COL_INDEX] = "ct.zeros((BR, 1), dtype=ct.int32)"
        sides = SideLoader(spec, coords, pool.out_shape, "(BR, 1)", lines, "    ", exclude=[pool.x.graph_value])
        env = elementwise(epilogue, env, sides, lines, "    ")
    _store_lines(spec, env, "(BR, 1)", "(pid, 0)", lines)
    kernel = "\n".join(lines)

    w: list[str] = []
    device = wrapper_head(spec, w)
    w.append(f"    {x} = {x}.reshape({R}, {S})")
    alloc_outputs(spec, device, w)
    _check_output_shapes(spec, pool)
    outs = [f"{o.name}.view({R}, 1)" for o in spec.outputs]
    w.append(f"    ct.launch(torch.cuda.current_stream(), ({-(-R // BR)}, 1, 1), {kid}_kernel, "
             f"({', '.join(input_args(spec) + outs + [str(BR), str(BS)])}))")
    w.append(ret_outputs(spec))
    return module(spec, [kernel], "\n".join(w), [f"{kid}_kernel"],
                  [f"{rec.op}: global pooling as a row reduction over {S} positions, tile {BR} x {BS}"])


def _shift_groups(k: int, s: int, p: int) -> dict[int, tuple[int, int]]:
    """Window offsets e = k - p of one dim grouped by the split view's (block shift q, phase range [a, b]):
    input index o*s + e = (o + q)*s + r with q = e // s, r = e % s."""
    groups: dict[int, list[int]] = {}
    for kk in range(k):
        e = kk - p
        groups.setdefault(e // s, []).append(e % s)
    return {q: (min(rs), max(rs)) for q, rs in sorted(groups.items())}


def _phase_load(a: int, b: int, s: int) -> tuple[int, int, bool]:
    """(tile size, tile index, needs a mask) along a phase axis of length s to cover phases a..b."""
    n = b - a + 1
    if n & (n - 1) == 0 and a % n == 0:
        return n, a // n, False
    return s, 0, True


def _shifted(spec: KernelSpec, rec: OpRecord, pool: _Pool, epilogue: list[OpRecord]) -> KernelSource:
    """Overlapping windows without gathers. The wrapper views the input as (rows, N0, s0, N1, s1, ...) (Ni = Ini /
    si, a free view); the window element k of output o along a dim sits at (o + q, r) with q = (k - p) // s,
    r = (k - p) % s. For every distinct shift vector q a block loads one tile-aligned, coalesced
    (BR, BO0, ., BO1, ., ...) tile of the view sliced at (o0 + q) (`Array.slice`, runtime start), reduces its
    phase axes and folds it into the accumulator: max_pool2d(3, 2, 1) takes 4 loads (2x2, 2x1, 1x2 and 1x1
    phases) instead of 9 gathers, and each input element comes from DRAM once (the shifted loads hit L2). A
    shifted tile that would start before the input (the first block along a dim, where the window reaches into
    the padding) or lies past its end is read with `ct.gather` instead (bounds-checked, padded)."""
    nd, kid = pool.nd, spec.id
    R, K, S, P, O, In = pool.rows, pool.k, pool.s, pool.p, pool.outsp, pool.insp
    N = [i // s for i, s in zip(In, S)]
    is_max = pool.kind == "max"
    budget = int(MEMORY_TUNING["pool_overlap_outputs"])
    BO = [1] * nd
    rem = budget
    for i in reversed(range(nd)):
        cap = min(rem, int(MEMORY_TUNING["pool_overlap_cols" if i == nd - 1 else "pool_overlap_rows"]))
        BO[i] = pow2_at_least(O[i], 1, _pow2_floor(max(1, cap)))
        rem = max(1, rem // BO[i])
    BR = pow2_at_least(R, 1, _pow2_floor(rem))
    nb = [-(-o // b) for o, b in zip(O, BO)]
    nbp = prod(nb)
    rank = 1 + 2 * nd
    # "merged": the innermost dim stays unsplit in the view (rows of the input contiguous, 16-byte strides: TMA
    # eligible) and the loaded (.., BO * s) tile is reshaped in registers; "split": (.., N, s) view axes
    merged = MEMORY_TUNING["pool_overlap_inner"] == "merged"
    vrank = rank - 1 if merged else rank
    x = array_param(pool.x)
    pad = "ct.PaddingMode.NEG_INF" if is_max else "ct.PaddingMode.ZERO"
    padv = "-math.inf" if is_max else "0.0"
    params = ", ".join(input_args(spec) + [out_param(o) for o in spec.outputs])
    consts = ", ".join(["BR: ct.Constant[int]"] + [f"BO{i}: ct.Constant[int]" for i in range(nd)])
    lines = ["@ct.kernel", f"def {kid}_kernel({params}, {consts}):", f"{I}bid = ct.bid(0)",
             f"{I}pid_r = bid // {nbp}" if nbp > 1 else f"{I}pid_r = bid"]
    if nbp > 1:
        lines.append(f"{I}q = bid % {nbp}")
    for i in range(nd):
        inner = prod(nb[i + 1:])
        expr = "q" if inner == 1 else f"(q // {inner})"
        if nb[i] == 1:
            lines.append(f"{I}pid_{i} = 0")
        else:
            lines.append(f"{I}pid_{i} = {expr} % {nb[i]}" if i > 0 else f"{I}pid_{i} = {expr}")
        lines.append(f"{I}os{i} = pid_{i} * BO{i}")

    def at(axis: int, n: str) -> str:
        shape = ["1"] * rank
        shape[axis] = n
        return tup(shape)

    acc_shape = tup(["BR"] + [v for i in range(nd) for v in (f"BO{i}", "1")])
    lines.append(f"{I}acc = ct.full({acc_shape}, {padv}, dtype=ct.float32)")
    groups = [_shift_groups(K[i], S[i], P[i]) for i in range(nd)]
    gather_rows_done = False
    combos = [[]]
    for g in groups:
        combos = [c + [q] for c in combos for q in g]
    # the unshifted tile first: it brings the block's data from DRAM, the shifted ones mostly hit L2
    combos.sort(key=lambda c: (sum(abs(q) for q in c), c))
    last = nd - 1
    for combo in combos:
        loads = [_phase_load(*groups[i][q], S[i]) for i, q in enumerate(combo)]
        if merged:  # the innermost dim is unsplit: always whole (output, phase) pairs, unneeded phases masked
            a_, b_ = groups[last][combo[last]]
            loads[last] = (S[last], 0, (a_, b_) != (0, S[last] - 1))
        split_shape = ["BR"] + [v for i in range(nd) for v in (f"BO{i}", str(loads[i][0]))]
        shape = tup(split_shape[:-2] + [f"BO{last} * {S[last]}"] if merged else split_shape)
        conds, view, index = [], x, ["pid_r"]
        never = False  # the slice start is out of range in every block (one block along a dim): gather only
        for i, q in enumerate(combo):
            start = f"os{i} + {q}" if q > 0 else (f"os{i} - {-q}" if q < 0 else f"os{i}")
            if q < 0:
                conds.append(f"({start} >= 0)")
                never = never or nb[i] == 1
            if (nb[i] - 1) * BO[i] + q >= N[i]:
                conds.append(f"({start} < {N[i]})")
                never = never or q >= N[i]
            inner = merged and i == last
            if q != 0:
                el = f"({start}) * {S[i]}" if inner else start
                view = f"{view}.slice(axis={1 + 2 * i}, start={el}, stop={In[i] if inner else N[i]})"
                index.append("0")
            else:
                index.append(f"pid_{i}")
            if not inner:
                index.append(str(loads[i][1]))
        load = f"ct.load({view}, index={tup(index)}, shape={shape}, padding_mode={pad})"
        ind = I
        if conds:
            if not gather_rows_done:
                gather_rows_done = True
                lines.append(f"{I}gr = ct.reshape(pid_r * BR + ct.arange(BR, dtype=ct.int32), "
                             f"{tup(['BR'] + ['1'] * (vrank - 1))})")
            if not never:
                lines.append(f"{I}if {' & '.join(conds) if len(conds) > 1 else conds[0]}:")
                ind = I + I
        if not never:
            lines.append(f"{ind}v = {load}")
        if conds:
            if not never:
                lines.append(f"{I}else:")
            ind = I + I if not never else I

            def at_v(axis: int, n: str) -> str:
                sh = ["1"] * vrank
                sh[axis] = n
                return tup(sh)

            gidx = ["gr"]
            for i, q in enumerate(combo):
                sz, ti, _ = loads[i]
                off = f"os{i} + {q}" if q > 0 else (f"os{i} - {-q}" if q < 0 else f"os{i}")
                if merged and i == last:
                    gidx.append(f"ct.reshape(({off}) * {S[i]} + ct.arange(BO{i} * {S[i]}, dtype=ct.int32), "
                                f"{at_v(vrank - 1, f'BO{i} * {S[i]}')})")
                    continue
                gidx.append(f"ct.reshape({off} + ct.arange(BO{i}, dtype=ct.int32), {at_v(1 + 2 * i, f'BO{i}')})")
                gidx.append(f"ct.reshape({ti * sz} + ct.arange({sz}, dtype=ct.int32), {at_v(2 + 2 * i, str(sz))})")
            lines.append(f"{ind}v = ct.gather({x}, {tup(gidx)}, padding_value={padv})")
        lines.append(f"{I}v = v.astype(ct.float32)")
        if merged:
            lines.append(f"{I}v = ct.reshape(v, {tup(split_shape)})")
        for i, q in enumerate(combo):
            sz, _, masked = loads[i]
            if masked:
                a, b = groups[i][q]
                ph = f"ct.arange({sz}, dtype=ct.int32)"
                lines.append(f"{I}ph = ct.reshape({ph}, {at(2 + 2 * i, str(sz))})")
                lines.append(f"{I}v = ct.where((ph >= {a}) & (ph <= {b}), v, {padv})")
        axes = [2 + 2 * i for i in range(nd) if loads[i][0] > 1]
        red = "v"
        if axes:
            fn = "ct.max" if is_max else "ct.sum"
            extra = ", propagate_nan=True" if is_max else ""
            red = f"{fn}(v, axis={tup(axes) if len(axes) > 1 else axes[0]}, keepdims=True{extra})"
        lines.append(f"{I}acc = ct.maximum(acc, {red}, propagate_nan=True)" if is_max else f"{I}acc = acc + {red}")
    out_tile = tup(["BR"] + [f"BO{i}" for i in range(nd)])
    lines.append(f"{I}acc = ct.reshape(acc, {out_tile})")
    osp = []
    for i in range(nd):
        shape = ["1"] * (nd + 1)
        shape[i + 1] = f"BO{i}"
        lines.append(f"{I}o{i} = ct.reshape(os{i} + ct.arange(BO{i}, dtype=ct.int32), {tup(shape)})")
        osp.append(f"o{i}")
    if pool.kind == "avg":
        if pool.divisor is not None:
            lines.append(f"{I}acc = acc / {float(pool.divisor)!r}")
        else:
            terms = []
            for i in range(nd):
                lines.append(f"{I}ws{i} = o{i} * {S[i]} - {P[i]}")
                lines.append(f"{I}we{i} = ct.minimum(ws{i} + {K[i]}, {In[i] + P[i]})")
                terms.append(f"(we{i} - ws{i})" if pool.count_include_pad
                             else f"(ct.minimum(we{i}, {In[i]}) - ct.maximum(ws{i}, 0))")
            lines.append(f"{I}acc = acc / ct.broadcast_to(({' * '.join(terms)}).astype(ct.float32), {out_tile})")
    env: dict[str, str] = {rec.node: "acc"}
    if epilogue:
        lines.append(f"{I}rr = ct.reshape(pid_r * BR + ct.arange(BR, dtype=ct.int32), {tup(['BR'] + ['1'] * nd)})")
        lead = decode("rr", pool.lead, lines, I, "l")
        row = osp[-2] if nd >= 2 else (lead[-1] if lead else "0")
        for key, c in ((ROW_INDEX, row), (COL_INDEX, osp[-1])):
            env[key] = f"ct.zeros({out_tile}, dtype=ct.int32)" if c == "0" else f"ct.broadcast_to({c}, {out_tile})"
        sides = SideLoader(spec, lead + osp, pool.out_shape, out_tile, lines, I, exclude=[pool.x.graph_value])
        env = elementwise(epilogue, env, sides, lines, I)
    _store_lines(spec, env, out_tile, tup(["pid_r"] + [f"pid_{i}" for i in range(nd)]), lines)
    kernel = "\n".join(lines)

    w: list[str] = []
    device = wrapper_head(spec, w)
    view = [R] + [v for n, s in zip(N, S) for v in (n, s)]
    if merged:
        view = view[:-2] + [In[-1]]
    w.append(f"{I}{x} = {x}.reshape({', '.join(map(str, [R] + In))}).view({', '.join(map(str, view))})")
    alloc_outputs(spec, device, w)
    _check_output_shapes(spec, pool)
    outs = [f"{o.name}.view({', '.join(map(str, [R] + O))})" for o in spec.outputs]
    w.append(f"{I}ct.launch(torch.cuda.current_stream(), ({-(-R // BR) * nbp}, 1, 1), {kid}_kernel, "
             f"({', '.join(input_args(spec) + outs + [str(BR)] + [str(b) for b in BO])}))")
    w.append(ret_outputs(spec))
    return module(spec, [kernel], "\n".join(w), [f"{kid}_kernel"],
                  [f"{rec.op}: window {K}, stride {S}, padding {P}; input viewed as {view}, {len(combos)} shifted "
                   f"tile loads per block of {BR} rows x {BO} outputs"])
