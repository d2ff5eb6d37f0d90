"""Gather-style kernels: every output element reads one source element whose index is computed from its position.

Covered ops: embedding, index_select, gather, index.Tensor (advanced indexing, any number of index tensors,
adjacent or not, negative indices wrap), take, flip, roll (with dims or flattened), repeat, tile, constant_pad_nd /
pad (constant, reflect, replicate, circular) and reflection_pad*/replication_pad*, one_hot, pixel_shuffle,
pixel_unshuffle, upsampling (gather_resample.py: nearest / nearest-exact 1-3d, linear / bilinear / trilinear,
bicubic; nearest by 2^k and bilinear x2 at input resolution in gather_upscale.py, behind a knob), repeat_interleave
(int repeats), diagonal, diag_embed, channel_shuffle, im2col (F.unfold), diff and cross (gather_rearrange.py); with
fused elementwise epilogues.

Layout: the output (any rank) is viewed as (R, L) = (all leading dims, last dim) and tiled (BR, BL); a block decodes
its rows into leading coordinates ((BR, 1) tiles) and its columns into the last coordinate ((1, BL) tile), maps
them to source coordinates (op-specific integer arithmetic, including reading index tensors with `ct.gather`) and
gathers the source with the per-dim bounds check of `ct.gather` (out-of-range → padding value, which is how
constant padding and masked positions are produced). Embedding rows are read with `ct.load_advanced_indexing`
(one sparse token index per output row, a dense slice of the embedding dim). Sources are read through their
strides (no copies); the output tile is written with one coalesced `ct.store`. Scatter-style writes (scatter,
scatter_add, scatter_reduce, index_add, index_copy, index_put with one index tensor or boolean mask) are
scatter.py's; bucketize / searchsorted gather_search.py's (embedding_bag sum/mean is lowered to those and
embedding rows, core/lowering.py). Unsupported (skeletons): embedding_bag max, index_put with several index
tensors, repeat_interleave with a tensor of repeats and boolean-mask selection (data-dependent shapes).
"""

from __future__ import annotations

import struct
from typing import Any

from ..specs import KernelSpec, OpRecord, TensorSpec
from . import (gather_channels, gather_rearrange, gather_resample, gather_search, gather_upscale, gather_words,
               scatter)
from .base import KernelSource, Unsupported, pow2_at_least
from .expr import COL_INDEX, ROW_INDEX, bind_args, scalar_value
from .gemm_common import kernel_decorator
from .indexing import (MEMORY_TUNING, SideLoader, alloc_outputs, array_param, broadcast_index, decode, elementwise,
                       flat_index, guarded, input_args, input_for, is_ref, module, out_param, output_vars, prod,
                       ret_outputs, tup, wrapper_head)

I = "    "


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def _f32_div(a: int, b: int) -> float:
    """a / b rounded once to float32, as the device computes it."""
    import torch

    return float(torch.tensor(float(a), dtype=torch.float32) / torch.tensor(float(b), dtype=torch.float32))


class _Ctx:
    """Code being built for one gather kernel: output coordinates in, source value expression out."""

    def __init__(self, spec: KernelSpec, rec: OpRecord, out_shape: list[int], coords: list[str]):
        self.spec, self.rec, self.out_shape, self.coords = spec, rec, out_shape, coords
        self.lines: list[str] = []
        self.n = 0
        self.args = bind_args(rec)

    def tmp(self, expr: str, name: str = "t") -> str:
        self.n += 1
        var = f"{name}{self.n}"
        self.lines.append(f"{I}{var} = {expr}")
        return var

    def tensor(self, key: str) -> TensorSpec:
        return input_for(self.spec, self.args.get(key), self.rec.target)

    def gather(self, t: TensorSpec, idx: list[str], pad: str | None = None, mask: str | None = None) -> str:
        if mask:  # a gather mask must broadcast to the index shape: give the indices the full tile shape
            idx = [f"ct.broadcast_to({idx[0]}, (BR, BL))"] + list(idx[1:]) if idx else idx
        extra = (f", mask={mask}" if mask else "") + (f", padding_value={pad}" if pad is not None else "")
        return f"ct.gather({array_param(t)}, {tup(idx if t.shape else ['0'])}{extra})"

    def index_values(self, t: TensorSpec, idx: list[str], size: int | None, name: str = "ix") -> str:
        """Load int indices (as int32), wrapping negative ones by `size` when given."""
        v = self.tmp(f"{self.gather(t, idx)}.astype(ct.int32)", name)
        if size is not None:
            v = self.tmp(f"ct.where({v} < 0, {v} + {size}, {v})", name)
        return v


def _ints(v: Any) -> list[int]:
    if isinstance(v, int):
        return [v]
    return [int(x) for x in (v or [])]


def _dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


# ---- op-specific source index mapping: returns the expression of the gathered source value ---------------------
def _embedding(c: _Ctx) -> str:
    w, ids = c.tensor("weight"), c.tensor("indices")
    if len(w.shape) != 2:
        raise Unsupported("aten.embedding: weight must be 2-D")
    tok = c.index_values(ids, c.coords[:-1] or ["0"], None, "tok")
    # whole table rows: one sparse index per output row, a dense slice of the embedding dim
    tokv = c.tmp(f"ct.reshape(ct.broadcast_to({tok}, (BR, 1)), (BR,))", "tok")
    return (f"ct.load_advanced_indexing({array_param(w)}, ({tokv}, ct.Slice(pid_l * BL, BL)), "
            f"padding_mode=ct.PaddingMode.ZERO)")


def _index_select(c: _Ctx) -> str:
    x, index = c.tensor("self"), c.tensor("index")
    rank = len(x.shape)
    if rank == 0:
        raise Unsupported("aten.index_select on a 0-d tensor")
    d = _dim(int(c.args["dim"]), rank)
    src = list(c.coords)
    src[d] = c.index_values(index, [c.coords[d]], x.shape[d])
    return c.gather(x, src)


def _gather(c: _Ctx) -> str:
    x, index = c.tensor("self"), c.tensor("index")
    rank = len(x.shape)
    if rank == 0 or len(index.shape) != rank:
        raise Unsupported("aten.gather: index and input must have the same rank >= 1")
    d = _dim(int(c.args["dim"]), rank)
    src = list(c.coords)
    src[d] = c.index_values(index, list(c.coords), x.shape[d])
    return c.gather(x, src)


def _index(c: _Ctx) -> str:
    x = c.tensor("self")
    entries = c.args.get("indices") or []
    rank = len(x.shape)
    if len(entries) > rank:
        raise Unsupported("aten.index: more indices than dims")
    entries = list(entries) + [None] * (rank - len(entries))
    idx_t = {}
    for d, e in enumerate(entries):
        if e is None:
            continue
        t = input_for(c.spec, e, c.rec.target)
        if t.dtype == "bool" or t.dtype == "uint8":
            raise Unsupported("aten.index with a boolean mask (data-dependent output shape)")
        idx_t[d] = t
    if not idx_t:
        raise Unsupported("aten.index without index tensors")
    dims = sorted(idx_t)
    bshape: list[int] = []
    for t in idx_t.values():
        bshape = _broadcast_shapes(bshape, t.shape)
    nb = len(bshape)
    adjacent = dims == list(range(dims[0], dims[-1] + 1))
    out = c.coords
    if adjacent:
        first = dims[0]
        bcoords = out[first:first + nb]
        rest = out[:first] + [None] * len(dims) + out[first + nb:]
    else:
        bcoords = out[:nb]
        rest_iter = iter(out[nb:])
        rest = [None if d in idx_t else next(rest_iter) for d in range(rank)]
    src = []
    for d in range(rank):
        if d in idx_t:
            t = idx_t[d]
            src.append(c.index_values(t, broadcast_index(t.shape, bshape, bcoords, t.name), x.shape[d]))
        else:
            src.append(rest[d])
    return c.gather(x, src)


def _broadcast_shapes(a: list[int], b: list[int]) -> list[int]:
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise Unsupported(f"index shapes {a} and {b} do not broadcast")
        out.append(max(x, y))
    return out


def _flat_source(c: _Ctx, x: TensorSpec, flat: str) -> list[str]:
    """Coordinates of the row-major flat index `flat` in x (0-d x: [0])."""
    if not x.shape:
        return ["0"]
    return decode(flat, x.shape, c.lines, I, f"f{len(c.lines)}_", bound_outer=False)


def _take(c: _Ctx) -> str:
    x, index = c.tensor("self"), c.tensor("index")
    n = prod(x.shape)
    flat = c.index_values(index, list(c.coords) if index.shape else ["0"], n)
    return c.gather(x, _flat_source(c, x, flat))


def _flip(c: _Ctx) -> str:
    x = c.tensor("self")
    rank = len(x.shape)
    src = list(c.coords)
    for d in {_dim(int(d), rank) for d in _ints(c.args.get("dims"))}:
        if x.shape[d] > 1:
            src[d] = c.tmp(f"{x.shape[d] - 1} - {c.coords[d]}", "fl")
    return c.gather(x, src)


def _roll(c: _Ctx) -> str:
    x = c.tensor("self")
    shifts, dims = _ints(c.args.get("shifts")), _ints(c.args.get("dims"))
    rank = len(x.shape)
    if not dims:
        if len(shifts) != 1:
            raise Unsupported("aten.roll: several shifts without dims")
        n = prod(x.shape)
        s = shifts[0] % n if n else 0
        flat = flat_index(c.coords, x.shape)
        f = c.tmp(f"{flat} - {s}", "rf")
        f = c.tmp(f"ct.where({f} < 0, {f} + {n}, {f})", "rf")
        return c.gather(x, _flat_source(c, x, f))
    if len(shifts) != len(dims):
        raise Unsupported("aten.roll: shifts and dims differ in length")
    src = list(c.coords)
    for s, d in zip(shifts, dims):
        d = _dim(d, rank)
        n = x.shape[d]
        s = s % n if n else 0
        if s == 0:
            continue
        v = c.tmp(f"{src[d]} - {s}", "rl")
        src[d] = c.tmp(f"ct.where({v} < 0, {v} + {n}, {v})", "rl")
    return c.gather(x, src)


def _repeat_like(c: _Ctx, reps: list[int]) -> str:
    x = c.tensor("self")
    rank = len(x.shape)
    k = len(c.out_shape)
    if rank > k:
        raise Unsupported("repeat: fewer repeats than dims")
    src = []
    for i, n in enumerate(x.shape):
        o = c.coords[k - rank + i]
        if n == 1:
            src.append("0")
        elif c.out_shape[k - rank + i] == n:
            src.append(o)
        else:
            src.append(c.tmp(f"{o} % {n}", "rp"))
    return c.gather(x, src)


def _repeat(c: _Ctx) -> str:
    return _repeat_like(c, _ints(c.args.get("repeats")))


def _tile(c: _Ctx) -> str:
    return _repeat_like(c, _ints(c.args.get("dims")))


_PAD_MODES = {"constant_pad_nd": "constant", "reflection_pad1d": "reflect", "reflection_pad2d": "reflect",
              "reflection_pad3d": "reflect", "replication_pad1d": "replicate", "replication_pad2d": "replicate",
              "replication_pad3d": "replicate"}


def _pad(c: _Ctx) -> str:
    x = c.tensor("self")
    a = c.args
    op = c.rec.op
    if op == "pad":
        mode, pads = a.get("mode") or "constant", _ints(a.get("pad"))
    else:
        mode, pads = _PAD_MODES[op], _ints(a.get("pad", a.get("padding")))
    value = a.get("value")
    value = scalar_value(value) if value is not None else 0.0
    rank = len(x.shape)
    if len(pads) % 2 or len(pads) // 2 > rank:
        raise Unsupported(f"{c.rec.target}: padding {pads} for a rank-{rank} input")
    src = list(c.coords)
    for j in range(len(pads) // 2):
        d = rank - 1 - j
        before, after = pads[2 * j], pads[2 * j + 1]
        n = x.shape[d]
        if before == 0 and after == 0:
            continue
        s = c.tmp(f"{c.coords[d]} - {before}" if before else f"{c.coords[d]} + 0", "pd")
        if mode == "constant":
            src[d] = s
        elif mode == "reflect":
            if before >= n or after >= n:
                raise Unsupported(f"reflect padding {pads} needs pads smaller than the dim ({n})")
            s = c.tmp(f"ct.where({s} < 0, -{s}, {s})", "pd")
            src[d] = c.tmp(f"ct.where({s} >= {n}, {2 * (n - 1)} - {s}, {s})", "pd")
        elif mode == "replicate":
            src[d] = c.tmp(f"ct.minimum(ct.maximum({s}, 0), {n - 1})", "pd")
        elif mode == "circular":
            if before > n or after > n:
                raise Unsupported(f"circular padding {pads} larger than the dim ({n})")
            s = c.tmp(f"ct.where({s} < 0, {s} + {n}, {s})", "pd")
            src[d] = c.tmp(f"ct.where({s} >= {n}, {s} - {n}, {s})", "pd")
        else:
            raise Unsupported(f"pad mode {mode!r}")
    if mode == "constant":
        if x.dtype in ("float32", "float16", "bfloat16", "float64"):
            pv = float(value)
            pad = "math.nan" if pv != pv else ("math.inf" if pv == float("inf") else
                                                ("-math.inf" if pv == float("-inf") else repr(pv)))
        else:
            pad = repr(bool(value)) if x.dtype == "bool" else repr(int(value))
        return c.gather(x, src, pad=pad)
    return c.gather(x, src)


def _one_hot(c: _Ctx) -> str:
    x = c.tensor("self")
    cls = c.tmp(f"{c.gather(x, c.coords[:-1] or ['0'])}.astype(ct.int32)", "cls")
    return f"ct.where({cls} == {c.coords[-1]}, 1, 0).astype(ct.int64)"


def _pixel_shuffle(c: _Ctx) -> str:
    x = c.tensor("self")
    r = int(c.args.get("upscale_factor"))
    if len(x.shape) < 3:
        raise Unsupported("pixel_shuffle needs a (*, C, H, W) input")
    *lead, ch, h, w = c.coords
    ci = c.tmp(f"{ch} * {r * r} + ({h} % {r}) * {r} + {w} % {r}", "ps")
    return c.gather(x, lead + [ci, c.tmp(f"{h} // {r}", "ps"), c.tmp(f"{w} // {r}", "ps")])


def _pixel_unshuffle(c: _Ctx) -> str:
    x = c.tensor("self")
    r = int(c.args.get("downscale_factor"))
    if len(x.shape) < 3:
        raise Unsupported("pixel_unshuffle needs a (*, C, H, W) input")
    *lead, ch, h, w = c.coords
    src_c = c.tmp(f"{ch} // {r * r}", "pu")
    i = c.tmp(f"({ch} // {r}) % {r}", "pu")
    j = c.tmp(f"{ch} % {r}", "pu")
    return c.gather(x, lead + [src_c, c.tmp(f"{h} * {r} + {i}", "pu"), c.tmp(f"{w} * {r} + {j}", "pu")])


def _repeat_interleave(c: _Ctx) -> str:
    a = c.args
    if "self" not in a or not is_ref(a.get("self")) or is_ref(a.get("repeats")):
        raise Unsupported("repeat_interleave with a tensor of repeats (data-dependent output shape)")
    x = c.tensor("self")
    reps = int(a.get("repeats"))
    dim = a.get("dim")
    if dim is None:
        flat = c.tmp(f"{c.coords[0]} // {reps}", "ri")
        return c.gather(x, _flat_source(c, x, flat))
    d = _dim(int(dim), len(x.shape))
    src = list(c.coords)
    src[d] = c.tmp(f"{c.coords[d]} // {reps}", "ri")
    return c.gather(x, src)


def _diagonal(c: _Ctx) -> str:
    x = c.tensor("self")
    rank = len(x.shape)
    off = int(c.args.get("offset", 0) or 0)
    d1, d2 = _dim(int(c.args.get("dim1", 0)), rank), _dim(int(c.args.get("dim2", 1)), rank)
    rest = iter(c.coords[:-1])
    i = c.coords[-1]
    src = []
    for d in range(rank):
        if d == d1:
            src.append(i if off >= 0 else c.tmp(f"{i} + {-off}", "dg"))
        elif d == d2:
            src.append(i if off <= 0 else c.tmp(f"{i} + {off}", "dg"))
        else:
            src.append(next(rest))
    return c.gather(x, src)


def _diag_embed(c: _Ctx) -> str:
    x = c.tensor("self")
    k = len(c.out_shape)
    off = int(c.args.get("offset", 0) or 0)
    d1, d2 = _dim(int(c.args.get("dim1", -2)), k), _dim(int(c.args.get("dim2", -1)), k)
    a, b = c.coords[d1], c.coords[d2]
    rest = [o for d, o in enumerate(c.coords) if d not in (d1, d2)]
    i = a if off >= 0 else b
    on = c.tmp(f"({b} - {a}) == {off}", "de")
    return c.gather(x, rest + [i], pad="0", mask=on)


_OPS = {
    "embedding": _embedding, "index_select": _index_select, "gather": _gather, "index": _index, "take": _take,
    "flip": _flip, "roll": _roll, "repeat": _repeat, "tile": _tile, "pad": _pad, "constant_pad_nd": _pad,
    "reflection_pad1d": _pad, "reflection_pad2d": _pad, "reflection_pad3d": _pad, "replication_pad1d": _pad,
    "replication_pad2d": _pad, "replication_pad3d": _pad, "one_hot": _one_hot, "pixel_shuffle": _pixel_shuffle,
    "pixel_unshuffle": _pixel_unshuffle,
    "repeat_interleave": _repeat_interleave, "diagonal": _diagonal, "diag_embed": _diag_embed,
    **gather_resample.OPS, **gather_rearrange.OPS, **gather_search.OPS,
}


@guarded
def generate(spec: KernelSpec) -> KernelSource:
    idx = [i for i, r in enumerate(spec.ops) if r.category == "gather"]
    if len(idx) != 1:
        raise Unsupported(f"expected one gather op, found {len(idx)}")
    if idx[0] != 0:
        raise Unsupported("a gather kernel with a fused prologue")
    rec, epilogue = spec.ops[0], spec.ops[1:]
    if rec.op in ("pad", "constant_pad_nd"):
        words = gather_words.plan(spec)
        if words:
            return gather_words.generate(spec, words)
    if rec.op == "embedding":
        words = gather_words.embedding_plan(spec)
        if words:
            return gather_words.generate_embedding(spec, words)
    if rec.op in scatter.OPS:
        return scatter.generate(spec, rec, epilogue)
    fn = _OPS.get(rec.op)
    if fn is None:
        raise Unsupported(f"{rec.target}: no gather generator for this op (data-dependent or scatter-style)")
    whole = gather_upscale.factors(spec, rec, epilogue)
    if whole:
        return gather_upscale.generate(spec, rec, *whole)
    if gather_channels.applies(spec, rec, epilogue):
        return gather_channels.generate(spec, rec, _Ctx, fn)
    kernel, launch, note = tiled(spec, rec, epilogue, f"{spec.id}_kernel", fn)
    w: list[str] = []
    device = wrapper_head(spec, w)
    alloc_outputs(spec, device, w)
    w.append(launch([]))
    w.append(ret_outputs(spec))
    return module(spec, [kernel], "\n".join(w), [f"{spec.id}_kernel"], [f"{rec.op}: {note}, source gathered per element"])


def tiled(spec: KernelSpec, rec: OpRecord, epilogue: list[OpRecord], name: str, fn,
          extra_params: tuple[str, ...] = (), store_to: str | None = None) -> tuple[str, Any, str]:
    """A kernel over the output of `rec` viewed as (R, L) in (BR, BL) tiles: `fn(ctx)` gives the value at the
    tile's coordinates, the epilogue is applied and every spec output stored (`store_to`: instead, the value alone
    to that tensor of the output's shape, the kernel's last array). Returns (kernel text, a function of the extra
    arguments giving the wrapper's launch line, a note)."""
    out_shape = list(rec.output) or [1]
    if prod(out_shape) == 0:
        raise Unsupported(f"{rec.target}: empty output")
    k = len(out_shape)
    R, L = prod(out_shape[:-1]), out_shape[-1]
    BL = pow2_at_least(L, 1, 1024)
    BR = pow2_at_least(R, 1, max(1, int(MEMORY_TUNING["gather_tile_elems"]) // BL))
    nlb = -(-L // BL)
    out_params = ["O"] if store_to else [out_param(o) for o in spec.outputs]
    lines = [kernel_decorator(MEMORY_TUNING["gather_occupancy"]),
             f"def {name}({', '.join(input_args(spec) + list(extra_params) + out_params)}, "
             f"BR: ct.Constant[int], BL: ct.Constant[int]):",
             f"{I}bid = ct.bid(0)",
             f"{I}pid_r = bid // {nlb}",
             f"{I}pid_l = bid % {nlb}",
             f"{I}rr = (pid_r * BR + ct.arange(BR, dtype=ct.int32))[:, None]",
             f"{I}cc = (pid_l * BL + ct.arange(BL, dtype=ct.int32))[None, :]"]
    lead = decode("rr", out_shape[:-1], lines, I, "o") if k > 1 else []
    coords = lead + ["cc"]
    if out_shape[-1] == 1:
        coords[-1] = "0"
    ctx = _Ctx(spec, rec, out_shape, coords)
    value = fn(ctx)
    lines += ctx.lines
    tile = "(BR, BL)"
    lines.append(f"{I}val = ct.broadcast_to({value}, {tile})")
    env: dict[str, str] = {rec.node: "val"}
    if epilogue:
        lines.append(f"{I}valf = val.astype(ct.float32)")
        env[rec.node] = "valf"
        row = coords[-2] if k >= 2 else "0"
        for key, cexpr in ((ROW_INDEX, row), (COL_INDEX, coords[-1])):
            env[key] = f"ct.zeros({tile}, dtype=ct.int32)" if cexpr == "0" else f"ct.broadcast_to({cexpr}, {tile})"
        sides = SideLoader(spec, coords, out_shape, tile, lines, I)
        env = elementwise(epilogue, env, sides, lines, I)
    stores = [("O", "val")] if store_to else [(out_param(o), var) for o, var in output_vars(spec, env)]
    for o in ([] if store_to else spec.outputs):
        if prod(o.shape) != R * L:
            raise Unsupported(f"output {o.name} shape {o.shape} differs from the gathered shape {out_shape}")
    for param, var in stores:
        lines.append(f"{I}ct.store({param}, index=(pid_r, pid_l), "
                     f"tile=ct.broadcast_to({var}, {tile}).astype({param}.dtype))")
    kernel = "\n".join(lines)
    outs = [f"{n}.view({R}, {L})" for n in ([store_to] if store_to else [o.name for o in spec.outputs])]
    grid = -(-R // BR) * nlb

    def launch(extra_args: list[str]) -> str:
        return (f"{I}ct.launch(torch.cuda.current_stream(), ({grid}, 1, 1), {name}, "
                f"({', '.join(input_args(spec) + list(extra_args) + outs + [str(BR), str(BL)])}))")
    return kernel, launch, f"output viewed as ({R}, {L}), tile {BR} x {BL}"
