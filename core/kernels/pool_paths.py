"""The code paths of the pooling generator (pool.py parses the op and picks one; its docstring describes them all):
generate_windowed (general gather path, adaptive pooling included), generate_shifted (overlapping windows from
shifted tile loads) and generate_global; the aligned path (k == s windows) is in pool_aligned.py and the 16-bit
pair windows in pool_pairs.py, both built from the shared parts here.

Every path emits the same parts in the same order: kernel head and block ids, the pooled `acc` tile, the average
divisor, the fused elementwise epilogue, the stores, then a launch wrapper that views the input and the outputs.
The helpers below emit those shared parts once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..specs import KernelSpec, OpRecord
from .base import KernelSource, Unsupported, pow2_at_least
from .expr import COL_INDEX, ROW_INDEX
from .indexing import (MEMORY_TUNING, SideLoader, alloc_outputs, array_param, decode, elementwise, input_args, module,
                       out_param, output_vars, prod, register_tuple_items, ret_outputs, tup, wrapper_head)
from .rowwise import cdiv, pow2_floor

if TYPE_CHECKING:
    from .pool import PoolOp

I = "    "


# ---- small expression builders ---------------------------------------------------------------------------------

def _padding_mode(is_max: bool) -> str:
    """What a `ct.load` pads with: the identity of the reduction."""
    return "ct.PaddingMode.NEG_INF" if is_max else "ct.PaddingMode.ZERO"


def _aligned_padding(is_max: bool, exact: bool) -> str:
    """Padding of an aligned pool's loads: an exact view (no ceil_mode tail) has its padded lanes feed only outputs
    that are never stored, so it may take TMA's zero fill (MEMORY_TUNING["pool_aligned_pad"]); else the identity."""
    if exact and MEMORY_TUNING["pool_aligned_pad"] == "zero":
        return "ct.PaddingMode.ZERO"
    return _padding_mode(is_max)


def _identity(is_max: bool) -> str:
    return "-math.inf" if is_max else "0.0"


def _reduce(is_max: bool, value: str, axis, keepdims: bool = False) -> str:
    """ct.max (NaN propagating) or ct.sum of `value` over `axis`."""
    keep = ", keepdims=True" if keepdims else ""
    if is_max:
        return f"ct.max({value}, axis={axis}{keep}, propagate_nan=True)"
    return f"ct.sum({value}, axis={axis}{keep})"


def _combine(is_max: bool, acc: str, value: str) -> str:
    return f"ct.maximum({acc}, {value}, propagate_nan=True)" if is_max else f"{acc} + {value}"


def _axis_shape(rank: int, axis: int, n: str) -> str:
    """A shape of `rank` ones with `n` at `axis`."""
    shape = ["1"] * rank
    shape[axis] = n
    return tup(shape)


def _arange_along(start: str | None, n: str, axis: int, rank: int) -> str:
    """`start + arange(n)` as an int32 tile laid along `axis` of a rank-`rank` tile."""
    head = f"{start} + " if start else ""
    return f"ct.reshape({head}ct.arange({n}, dtype=ct.int32), {_axis_shape(rank, axis, n)})"


# ---- kernel parts shared by the paths --------------------------------------------------------------------------

def _kernel_head(spec: KernelSpec, consts: Sequence[str], block: str = "bid") -> list[str]:
    """The decorator, the signature (inputs, outputs, then the `consts` as ct.Constant[int]) and the block id."""
    params = ", ".join(input_args(spec) + [out_param(o) for o in spec.outputs])
    consts = ", ".join(f"{c}: ct.Constant[int]" for c in consts)
    return ["@ct.kernel", f"def {spec.id}_kernel({params}, {consts}):", f"{I}{block} = ct.bid(0)"]


def _block_pids(lines: list[str], nb: list[int], row_pid: str, first: int = 0, offsets: bool = False,
                always_divide: bool = False) -> None:
    """Split `bid` into the row block `row_pid` and one block index pid_<d> per tiled output dim d (nb[d - first]
    blocks along it, row-major, d counting from `first`); `offsets` also emits os<d> = pid_<d> * BO<d>. A single
    spatial block skips the division unless `always_divide` (the aligned path keeps its `bid // 1`)."""
    nbp = prod(nb)
    if nbp > 1 or always_divide:
        lines += [f"{I}{row_pid} = bid // {nbp}", f"{I}q = bid % {nbp}"]
    else:
        lines.append(f"{I}{row_pid} = bid")
    for j, n in enumerate(nb):
        d = first + j
        inner = prod(nb[j + 1:])
        expr = "q" if inner == 1 else f"(q // {inner})"
        if n == 1:
            lines.append(f"{I}pid_{d} = 0")
        else:
            lines.append(f"{I}pid_{d} = {expr} % {n}" if j > 0 else f"{I}pid_{d} = {expr}")
        if offsets:
            lines.append(f"{I}os{d} = pid_{d} * BO{d}")


def _output_tiles(rows: int, O: list[int], K: list[int], budget: int, caps: list[int | None]) -> tuple[int, list[int]]:
    """(BR, BO): a tile of BR rows x BO outputs reading ~`budget` input elements (K per output along each dim),
    filled from the innermost output dim outwards (at most caps[d] outputs along dim d), then rows."""
    rem = budget
    BO = [1] * len(O)
    for i in reversed(range(len(O))):
        cap = max(1, rem // K[i])
        if caps[i] is not None:
            cap = min(cap, caps[i])
        BO[i] = pow2_at_least(O[i], 1, pow2_floor(max(1, cap)))
        rem = max(1, rem // (BO[i] * K[i]))
    return pow2_at_least(rows, 1, pow2_floor(rem)), BO


def _output_coords(lines: list[str], dims: Sequence[int], start: str) -> list[str]:
    """o<d> = the output coordinates of tiled spatial dim d (for d in `dims`, on axes 1, 2, ... after the row
    axis); `start` is the block's first output, a template over {d}. Returns the names."""
    rank = 1 + len(dims)
    for k, d in enumerate(dims):
        lines.append(f"{I}o{d} = {_arange_along(start.format(d=d), f'BO{d}', 1 + k, rank)}")
    return [f"o{d}" for d in dims]


def _divide(lines: list[str], divisor: float) -> None:
    lines.append(f"{I}acc = acc / {float(divisor)!r}")


def _divide_by(lines: list[str], terms: list[str], tile: str) -> None:
    """acc / the per-output product of `terms` (int32 tiles)."""
    lines.append(f"{I}acc = acc / ct.broadcast_to(({' * '.join(terms)}).astype(ct.float32), {tile})")


def _avg_divisor(pool: PoolOp, lines: list[str], tile: str, starts: list[str] | None = None) -> None:
    """avg pooling: acc / divisor_override, else / each output's window clipped to the padded input (and to the
    input itself without count_include_pad), as PyTorch does. The window starts ws<d> exist already unless
    `starts` gives their expressions."""
    if pool.divisor is not None:
        _divide(lines, pool.divisor)
        return
    terms = []
    for i in range(pool.nd):
        In, K, P = pool.insp[i], pool.k[i], pool.p[i]
        if starts:
            lines.append(f"{I}ws{i} = {starts[i]}")
        lines.append(f"{I}we{i} = ct.minimum(ws{i} + {K}, {In + P})")
        terms.append(f"(we{i} - ws{i})" if pool.count_include_pad
                     else f"(ct.minimum(we{i}, {In}) - ct.maximum(ws{i}, 0))")
    _divide_by(lines, terms, tile)


def _result_env(spec: KernelSpec, pool: PoolOp, rec: OpRecord, values: list[str | None]) -> dict[str, str]:
    """The op's result(s) by graph value: a tuple op registers its getitem items (values, indices)."""
    env: dict[str, str] = {}
    if pool.returns_tuple:
        register_tuple_items(spec, env, rec.node, values)
    else:
        env[rec.node] = values[0]
    return env


def _fuse(spec: KernelSpec, pool: PoolOp, epilogue: list[OpRecord], env: dict[str, str], coords: list[str],
          tile: str, lines: list[str], exclude: Sequence[str] = ()) -> dict[str, str]:
    """Emit the fused elementwise epilogue on a `tile` of outputs at output coordinates `coords`."""
    sides = SideLoader(spec, coords, pool.out_shape, tile, lines, I, exclude=exclude)
    return elementwise(epilogue, env, sides, lines, I)


def _epilogue(spec: KernelSpec, pool: PoolOp, epilogue: list[OpRecord], env: dict[str, str], lead: list[str],
              osp: list[str], tile: str, lines: list[str], exclude: Sequence[str] = ()) -> dict[str, str]:
    """_fuse at coordinates (lead..., *osp), with the row/column index tiles the epilogue may read."""
    row = osp[-2] if len(osp) >= 2 else (lead[-1] if lead else "0")
    for key, c in ((ROW_INDEX, row), (COL_INDEX, osp[-1])):
        env[key] = f"ct.zeros({tile}, dtype=ct.int32)" if c == "0" else f"ct.broadcast_to({c}, {tile})"
    return _fuse(spec, pool, epilogue, env, lead + osp, tile, lines, exclude)


def _store_lines(spec: KernelSpec, env: dict[str, str], shape: str, index: str, lines: list[str]) -> None:
    for o, var in output_vars(spec, env):
        lines.append(f"{I}ct.store({out_param(o)}, index={index}, "
                     f"tile=ct.broadcast_to({var}, {shape}).astype({out_param(o)}.dtype))")


def _check_output_shapes(spec: KernelSpec, pool: PoolOp) -> None:
    for o in spec.outputs:
        if o.shape != pool.out_shape:
            raise Unsupported(f"output {o.name} has shape {o.shape}, expected the pooled shape {pool.out_shape}")


def _launch_module(spec: KernelSpec, pool: PoolOp, kernel: list[str], x_views: list[str], out_dims: list[int],
                   grid: int, consts: list[int], note: str, out_suffix: str = "") -> KernelSource:
    """The module: the kernel, then a launch wrapper that applies `x_views` (suffixes such as `.reshape(...)`) to
    the input, views every output as `out_dims` (then `out_suffix`) and launches `grid` blocks with the tile
    sizes `consts`."""
    x = array_param(pool.x)
    w: list[str] = []
    device = wrapper_head(spec, w)
    w += [f"{I}{x} = {x}{v}" for v in x_views]
    alloc_outputs(spec, device, w)
    _check_output_shapes(spec, pool)
    outs = [f"{o.name}.view({', '.join(map(str, out_dims))}){out_suffix}" for o in spec.outputs]
    w.append(f"{I}ct.launch(torch.cuda.current_stream(), ({grid}, 1, 1), {spec.id}_kernel, "
             f"({', '.join(input_args(spec) + outs + [str(c) for c in consts])}))")
    w.append(ret_outputs(spec))
    return module(spec, ["\n".join(kernel)], "\n".join(w), [f"{spec.id}_kernel"], [note])


# ---- general gather path (adaptive pooling included) ----------------------------------------------------------

def generate_windowed(spec: KernelSpec, rec: OpRecord, pool: PoolOp, epilogue: list[OpRecord],
                      flat_x: bool) -> KernelSource:
    """Each block owns a (BR, BP) tile of (rows, flattened output positions), walks the window with runtime loops
    and gathers one window element of every output per step. `flat_x`: the input is read through a flat view with
    int32 offsets (one index per gather instead of one per dim); window elements outside it are then masked."""
    nd = pool.nd
    R, P = pool.rows, pool.positions
    # up to 256 output positions, ~2048 outputs per block (the window loop keeps them in registers)
    BP = pow2_at_least(P, 1, int(MEMORY_TUNING["pool_window_cols"]))
    BR = pow2_at_least(R, 1, max(1, int(MEMORY_TUNING["pool_window_outputs"]) // BP))
    npb = cdiv(P, BP)
    x = array_param(pool.x)
    lines = _kernel_head(spec, ["BR", "BP"])
    lines += [f"{I}pid_r = bid // {npb}",
              f"{I}pid_p = bid % {npb}",
              f"{I}rr = (pid_r * BR + ct.arange(BR, dtype=ct.int32))[:, None]",
              f"{I}pp = (pid_p * BP + ct.arange(BP, dtype=ct.int32))[None, :]"]
    lead = [] if flat_x else decode("rr", pool.lead, lines, I, "l")
    osp = decode("pp", pool.outsp, lines, I, "o", bound_outer=True)
    if flat_x:
        lines.append(f"{I}base = rr * {prod(pool.insp)}")
    is_max = pool.kind in ("max", "amax")
    adaptive = pool.kind in ("aavg", "amax")
    tile = "(BR, BP)"
    # window start (and, for adaptive pooling, end) per spatial dim: (1, BP) int32 tiles
    for i in range(nd):
        In, On = pool.insp[i], pool.outsp[i]
        if adaptive:
            lines.append(f"{I}ws{i} = ({osp[i]} * {In}) // {On}")
            lines.append(f"{I}we{i} = (({osp[i]} + 1) * {In} + {On - 1}) // {On}")
        else:
            start = osp[i] if pool.s[i] == 1 else f"{osp[i]} * {pool.s[i]}"
            lines.append(f"{I}ws{i} = {start} - {pool.p[i]}" if pool.p[i] else f"{I}ws{i} = {start} + 0")
    if is_max:
        lines.append(f"{I}acc = ct.full({tile}, -math.inf, dtype=ct.float32)")
        if pool.with_indices:
            lines.append(f"{I}arg = ct.full({tile}, -1, dtype=ct.int32)")
    else:
        lines.append(f"{I}acc = ct.zeros({tile}, dtype=ct.float32)")
    ind = I
    ok = None  # the running "window element inside the input" mask (None: always inside)
    for i in range(nd):
        In = pool.insp[i]
        lines.append(f"{ind}for k{i} in range({pool.k[i]}):")
        ind += I
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
    mask = f", mask={ok}" if ok else ""
    lines.append(f"{ind}v = ct.gather({x}, {gidx}{mask}, padding_value={_identity(is_max)}).astype(ct.float32)")
    if is_max:
        if pool.with_indices:
            better = "((v > acc) | ct.isnan(v) | (arg < 0))"
            lines.append(f"{ind}upd = {ok + ' & ' if ok else ''}{better}")
            lines.append(f"{ind}arg = ct.where(upd, ct.broadcast_to({spatial}, {tile}), arg)")
            lines.append(f"{ind}acc = ct.where(upd, v, acc)")
        else:
            lines.append(f"{ind}acc = ct.where((v > acc) | ct.isnan(v), v, acc)")
    else:
        lines.append(f"{ind}acc = acc + v")
    if pool.kind == "aavg":
        _divide_by(lines, [f"(we{i} - ws{i})" for i in range(nd)], tile)
    elif pool.kind == "avg":
        _avg_divisor(pool, lines, tile)
    env = _result_env(spec, pool, rec, ["acc", "arg" if pool.with_indices else None])
    if epilogue:
        if flat_x:
            lead = decode("rr", pool.lead, lines, I, "l")
        env = _epilogue(spec, pool, epilogue, env, lead, osp, tile, lines,
                        exclude=[pool.x.graph_value] if flat_x else [])
    _store_lines(spec, env, tile, "(pid_r, pid_p)", lines)
    return _launch_module(spec, pool, lines, [".reshape(-1)"] if flat_x else [], [R, P], cdiv(R, BR) * npb,
                          [BR, BP], f"{rec.op}: window {pool.k}, stride {pool.s}, padding {pool.p}, dilation "
                          f"{pool.d}; tile {BR} rows x {BP} output positions, gathered window loads")


# ---- shifted path: overlapping windows from shifted tile loads -------------------------------------------------

def shift_groups(k: int, s: int, p: int) -> dict[int, tuple[int, int]]:
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


def _shifted_start(i: int, q: int) -> str:
    """The first view row of the block's tile along dim i, shifted by q."""
    return f"os{i} + {q}" if q > 0 else (f"os{i} - {-q}" if q < 0 else f"os{i}")


class _ShiftedView:
    """The input viewed as (rows, N0, s0, N1, s1, ...) (Ni = Ini / si; with `merged` the innermost dim stays
    unsplit: (.., In_last)) and how a block of BR rows x BO outputs reads the tile of one shift vector from it."""

    def __init__(self, pool: PoolOp, BO: list[int], nb: list[int], merged: bool):
        self.nd, self.S, self.In, self.BO, self.nb, self.merged = pool.nd, pool.s, pool.insp, BO, nb, merged
        self.N = [i // s for i, s in zip(pool.insp, pool.s)]
        self.groups = [shift_groups(k, s, p) for k, s, p in zip(pool.k, pool.s, pool.p)]
        self.x = array_param(pool.x)
        self.rank = 1 + 2 * pool.nd
        self.vrank = self.rank - 1 if merged else self.rank

    def phase_loads(self, combo: list[int]) -> list[tuple[int, int, bool]]:
        """_phase_load per dim; merged: the innermost dim always reads whole (output, phase) pairs, unneeded
        phases masked."""
        loads = [_phase_load(*self.groups[i][q], self.S[i]) for i, q in enumerate(combo)]
        if self.merged:
            last = self.nd - 1
            a, b = self.groups[last][combo[last]]
            loads[last] = (self.S[last], 0, (a, b) != (0, self.S[last] - 1))
        return loads

    def bounds(self, combo: list[int]) -> tuple[list[str], bool]:
        """Runtime conditions under which the shifted tile lies inside the view, and whether they fail in every
        block (a single block along a dim whose shift leaves the view): then the tile is always gathered."""
        conds, never = [], False
        for i, q in enumerate(combo):
            start = _shifted_start(i, q)
            if q < 0:
                conds.append(f"({start} >= 0)")
                never = never or self.nb[i] == 1
            if (self.nb[i] - 1) * self.BO[i] + q >= self.N[i]:
                conds.append(f"({start} < {self.N[i]})")
                never = never or q >= self.N[i]
        return conds, never

    def load(self, combo: list[int], loads: list[tuple[int, int, bool]], shape: str, pad: str) -> str:
        """One tile-aligned `ct.load` of the view sliced at the block's shifted start (`Array.slice`)."""
        view, index = self.x, ["pid_r"]
        for i, q in enumerate(combo):
            inner = self.merged and i == self.nd - 1
            if q != 0:
                start = _shifted_start(i, q)
                el = f"({start}) * {self.S[i]}" if inner else start
                view = f"{view}.slice(axis={1 + 2 * i}, start={el}, stop={self.In[i] if inner else self.N[i]})"
                index.append("0")
            else:
                index.append(f"pid_{i}")
            if not inner:
                index.append(str(loads[i][1]))
        return f"ct.load({view}, index={tup(index)}, shape={shape}, padding_mode={pad})"

    def gather(self, combo: list[int], loads: list[tuple[int, int, bool]], padv: str) -> str:
        """The same tile as a bounds-checked `ct.gather` (rows from `gr`), padded with `padv`."""
        gidx = ["gr"]
        for i, q in enumerate(combo):
            sz, ti, _ = loads[i]
            off = _shifted_start(i, q)
            if self.merged and i == self.nd - 1:
                gidx.append(_arange_along(f"({off}) * {self.S[i]}", f"BO{i} * {self.S[i]}", self.vrank - 1,
                                          self.vrank))
                continue
            gidx.append(_arange_along(off, f"BO{i}", 1 + 2 * i, self.vrank))
            gidx.append(_arange_along(str(ti * sz), str(sz), 2 + 2 * i, self.vrank))
        return f"ct.gather({self.x}, {tup(gidx)}, padding_value={padv})"


def generate_shifted(spec: KernelSpec, rec: OpRecord, pool: PoolOp, epilogue: list[OpRecord]) -> KernelSource:
    """Overlapping windows without gathers. The wrapper views the input as (rows, N0, s0, N1, s1, ...) (Ni = Ini /
    si, a free view); the window element k of output o along a dim sits at (o + q, r) with q = (k - p) // s,
    r = (k - p) % s. For every distinct shift vector q a block loads one tile-aligned, coalesced
    (BR, BO0, ., BO1, ., ...) tile of the view sliced at (o0 + q) (`Array.slice`, runtime start), reduces its
    phase axes and folds it into the accumulator: max_pool2d(3, 2, 1) takes 4 loads (2x2, 2x1, 1x2 and 1x1
    phases) instead of 9 gathers, and each input element comes from DRAM once (the shifted loads hit L2). A
    shifted tile that would start before the input (the first block along a dim, where the window reaches into
    the padding) or lies past its end is read with `ct.gather` instead (bounds-checked, padded)."""
    nd = pool.nd
    R, K, S, P, O, In = pool.rows, pool.k, pool.s, pool.p, pool.outsp, pool.insp
    is_max = pool.kind == "max"
    caps = [int(MEMORY_TUNING["pool_overlap_cols" if i == nd - 1 else "pool_overlap_rows"]) for i in range(nd)]
    BR, BO = _output_tiles(R, O, [1] * nd, int(MEMORY_TUNING["pool_overlap_outputs"]), caps)
    nb = [cdiv(o, b) for o, b in zip(O, BO)]
    # "merged": the innermost dim stays unsplit in the view (rows of the input contiguous, 16-byte strides: TMA
    # eligible) and the loaded (.., BO * s) tile is reshaped in registers; "split": (.., N, s) view axes
    merged = MEMORY_TUNING["pool_overlap_inner"] == "merged"
    sv = _ShiftedView(pool, BO, nb, merged)
    pad, padv = _padding_mode(is_max), _identity(is_max)
    lines = _kernel_head(spec, ["BR"] + [f"BO{i}" for i in range(nd)])
    _block_pids(lines, nb, "pid_r", offsets=True)
    acc_shape = tup(["BR"] + [v for i in range(nd) for v in (f"BO{i}", "1")])
    lines.append(f"{I}acc = ct.full({acc_shape}, {padv}, dtype=ct.float32)")
    combos = [[]]
    for g in sv.groups:
        combos = [c + [q] for c in combos for q in g]
    # the unshifted tile first: it brings the block's data from DRAM, the shifted ones mostly hit L2
    combos.sort(key=lambda c: (sum(abs(q) for q in c), c))
    last = nd - 1
    gather_rows_done = False
    for combo in combos:
        loads = sv.phase_loads(combo)
        split_shape = ["BR"] + [v for i in range(nd) for v in (f"BO{i}", str(loads[i][0]))]
        shape = tup(split_shape[:-2] + [f"BO{last} * {S[last]}"] if merged else split_shape)
        conds, never = sv.bounds(combo)
        if conds and not gather_rows_done:
            gather_rows_done = True
            lines.append(f"{I}gr = {_arange_along('pid_r * BR', 'BR', 0, sv.vrank)}")
        if never:
            lines.append(f"{I}v = {sv.gather(combo, loads, padv)}")
        elif conds:
            lines += [f"{I}if {' & '.join(conds) if len(conds) > 1 else conds[0]}:",
                      f"{I}{I}v = {sv.load(combo, loads, shape, pad)}",
                      f"{I}else:",
                      f"{I}{I}v = {sv.gather(combo, loads, padv)}"]
        else:
            lines.append(f"{I}v = {sv.load(combo, loads, shape, pad)}")
        lines.append(f"{I}v = v.astype(ct.float32)")
        if merged:
            lines.append(f"{I}v = ct.reshape(v, {tup(split_shape)})")
        for i, q in enumerate(combo):
            sz, _, masked = loads[i]
            if masked:
                a, b = sv.groups[i][q]
                lines.append(f"{I}ph = {_arange_along(None, str(sz), 2 + 2 * i, sv.rank)}")
                lines.append(f"{I}v = ct.where((ph >= {a}) & (ph <= {b}), v, {padv})")
        axes = [2 + 2 * i for i in range(nd) if loads[i][0] > 1]
        red = _reduce(is_max, "v", tup(axes) if len(axes) > 1 else axes[0], keepdims=True) if axes else "v"
        lines.append(f"{I}acc = {_combine(is_max, 'acc', red)}")
    out_tile = tup(["BR"] + [f"BO{i}" for i in range(nd)])
    lines.append(f"{I}acc = ct.reshape(acc, {out_tile})")
    osp = _output_coords(lines, range(nd), "os{d}")
    if pool.kind == "avg":
        _avg_divisor(pool, lines, out_tile, starts=[f"o{i} * {S[i]} - {P[i]}" for i in range(nd)])
    env: dict[str, str] = {rec.node: "acc"}
    if epilogue:
        lines.append(f"{I}rr = {_arange_along('pid_r * BR', 'BR', 0, nd + 1)}")
        lead = decode("rr", pool.lead, lines, I, "l")
        env = _epilogue(spec, pool, epilogue, env, lead, osp, out_tile, lines, exclude=[pool.x.graph_value])
    _store_lines(spec, env, out_tile, tup(["pid_r"] + [f"pid_{i}" for i in range(nd)]), lines)
    view = [R] + [v for n, s in zip(sv.N, S) for v in (n, s)]
    if merged:
        view = view[:-2] + [In[-1]]
    views = [f".reshape({', '.join(map(str, [R] + In))}).view({', '.join(map(str, view))})"]
    return _launch_module(spec, pool, lines, views, [R] + O, cdiv(R, BR) * prod(nb), [BR] + BO,
                          f"{rec.op}: window {K}, stride {S}, padding {P}; input viewed as {view}, {len(combos)} "
                          f"shifted tile loads per block of {BR} rows x {BO} outputs")


# ---- global path: one window covering the whole input ----------------------------------------------------------

def generate_global(spec: KernelSpec, rec: OpRecord, pool: PoolOp, epilogue: list[OpRecord]) -> KernelSource:
    """A row reduction over (BR, BS) tiles of the (rows, positions) view: coalesced `ct.load`s, float32
    accumulation."""
    R, S = pool.rows, prod(pool.insp)
    BS = pow2_at_least(S, 16, int(MEMORY_TUNING["pool_global_cols"]))
    BR = pow2_at_least(R, 1, max(1, int(MEMORY_TUNING["pool_global_elems"]) // BS))
    # keep at least ~2 blocks per SM where the rows allow it
    while BR > 1 and cdiv(R, BR) < 264:
        BR //= 2
    is_max = pool.kind in ("max", "amax")
    x = array_param(pool.x)
    lines = _kernel_head(spec, ["BR", "BS"], block="pid")
    # S = nfull * BS + the power-of-two parts of the rest (largest first, so each part's offset is a multiple of
    # its width and it is one tile-aligned load): no lanes are wasted on padding (784 = 512 + 256 + 16); a last
    # part under 16 positions is one padded load
    nfull, rest = divmod(S, BS) if S >= BS else (0, S)
    parts, off = [], nfull * BS
    while rest:
        b = pow2_floor(rest) if rest >= 16 else pow2_at_least(rest)
        parts.append((b, off))
        off += b
        rest = max(0, rest - b)
    pad, init = _padding_mode(is_max), _identity(is_max)
    tma = MEMORY_TUNING["pool_global_tma"]
    if tma is not None:
        pad += f", allow_tma={bool(tma)}"
    lines.append(f"{I}res = ct.full((BR, 1), {init}, dtype=ct.float32)")
    if nfull:
        lines += [f"{I}acc = ct.full((BR, BS), {init}, dtype=ct.float32)",
                  f"{I}for j in range({nfull}):",
                  f"{I}{I}t = ct.load({x}, index=(pid, j), shape=(BR, BS), padding_mode={pad}).astype(ct.float32)",
                  f"{I}{I}acc = {_combine(is_max, 'acc', 't')}",
                  f"{I}res = {_reduce(is_max, 'acc', 1, keepdims=True)}"]
    for b, o in parts:
        t = f"ct.load({x}, index=(pid, {o // b}), shape=(BR, {b}), padding_mode={pad}).astype(ct.float32)"
        lines.append(f"{I}res = {_combine(is_max, 'res', _reduce(is_max, t, 1, keepdims=True))}")
    if not is_max:
        lines.append(f"{I}res = res / {float(pool.divisor or S)!r}")
    env = _result_env(spec, pool, rec, ["res", None])
    if epilogue:
        lines.append(f"{I}rr = (pid * BR + ct.arange(BR, dtype=ct.int32))[:, None]")
        lead = decode("rr", pool.lead, lines, I, "l")
        env[ROW_INDEX] = "ct.zeros((BR, 1), dtype=ct.int32)"
        env[COL_INDEX] = "ct.zeros((BR, 1), dtype=ct.int32)"
        env = _fuse(spec, pool, epilogue, env, lead + ["0"] * pool.nd, "(BR, 1)", lines,
                    exclude=[pool.x.graph_value])
    _store_lines(spec, env, "(BR, 1)", "(pid, 0)", lines)
    return _launch_module(spec, pool, lines, [f".reshape({R}, {S})"], [R, 1], cdiv(R, BR), [BR, BS],
                          f"{rec.op}: global pooling as a row reduction over {S} positions, tile {BR} x {BS}")
