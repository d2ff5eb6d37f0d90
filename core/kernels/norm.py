"""Normalizations: layer_norm (any normalized_shape, weight/bias optional), rms_norm, group_norm, instance_norm
(statistics of the input) and eval-mode batch_norm / instance_norm with running statistics, with a fused
elementwise prologue (a residual add, also written out when the sum is used again) and epilogue (activation).

Statistic norms view the input as rows of the normalized elements: layer/rms norm (M, prod(normalized_shape)),
group norm (N*G, C/G, HW) channel rows (one weight/bias value per channel row, folded with the statistics into a
per-row scale and shift; the whole group in one tile up to TUNING["group_max_single"] elements, else chunks of
HW) or, for short channel rows and few long groups, flat (N*G, C/G*HW) rows (side inputs are re-viewed with C
split into (G, C/G)), instance norm (N*C, HW) (weight/bias one value per row, also folded). A row
that fits a tile (up to 8192 elements) is normalized from registers with the two-pass mean/variance; longer
rows take a statistics pass (per-chunk mean and M2 merged with Chan's formula) and a normalizing pass.
Running-statistics norms are per-channel affine maps: a 2D grid of (rows, column chunks) tiles over (N*C, HW),
or over (N, C*HW) when the spatial size is small, with the channel's scale/shift gathered per row or column.
"""

from __future__ import annotations

from ..specs import KernelSpec, TensorSpec
from .base import KernelSource, Unsupported
from dataclasses import dataclass

from .base import pow2_at_least
from .norm_split import emit_split_row, split_plan
from .rowwise import (FLOAT_DTYPES, NUM_SM, TUNING, Code, Kernel, Layout, Parts, SameShapeGen, cdiv, choose_tiles,
                      choose_tiles_full_row, decode, emit_ops, flit, make_layout, pow2_floor, prod, ref_of,
                      split_spec)

_FINFO_EPS = {"float32": 1.1920928955078125e-07, "float16": 0.0009765625, "bfloat16": 0.0078125}


def _arg(op, index: int, name: str, default=None):
    """An argument by schema position or name (args hold tensors as refs; attrs hold literals)."""
    if name in op.kwargs:
        return op.kwargs[name]
    if index < len(op.args):
        return op.args[index]
    return op.attrs.get(name, default)


def _tensor(parts: Parts, op, index: int, name: str) -> TensorSpec | None:
    ref = ref_of(_arg(op, index, name))
    if ref is None:
        return None
    t = parts.inputs.get(ref)
    if t is None:
        raise Unsupported(f"{op.op} {name} computed inside the kernel")
    if t.dtype not in FLOAT_DTYPES:
        raise Unsupported(f"{op.op} {name} of dtype {t.dtype}")
    return t


def generate(spec: KernelSpec) -> KernelSource:
    parts = split_spec(spec, {"normalization"})
    op = parts.anchor
    shape = list(op.output)
    name = op.op
    if parts.getitems and any(idx != 0 for gv, idx in parts.getitems.items()
                              if gv in {t.graph_value for t in spec.outputs}):
        raise Unsupported(f"{name}'s saved statistics as outputs")
    if name in ("layer_norm", "native_layer_norm", "rms_norm"):
        normalized = [int(d) for d in decode(_arg(op, 1, "normalized_shape"))]
        k = len(normalized)
        if shape[len(shape) - k:] != normalized:
            raise Unsupported(f"{name} normalized_shape {normalized} vs input {shape}")
        w = _tensor(parts, op, 2, "weight")
        b = _tensor(parts, op, 3, "bias") if name != "rms_norm" else None
        eps = decode(_arg(op, 4 if name == "layer_norm" or name == "native_layer_norm" else 3, "eps"))
        if name == "rms_norm" and eps is None:
            eps = _FINFO_EPS.get(_main_dtype(parts), _FINFO_EPS["float32"])
        layout = choose_tiles_full_row(make_layout(shape, list(range(len(shape) - k, len(shape)))),
                                       chunk=TUNING["norm_long_chunk"], long_tile=TUNING["norm_long_chunk"])
        return _RowNorm(spec, parts, layout, shape, "rms" if name == "rms_norm" else "layer", float(eps),
                        w, b).build()
    if name in ("group_norm", "native_group_norm"):
        if name == "group_norm":
            groups, w, b, eps = int(decode(_arg(op, 1, "num_groups"))), _tensor(parts, op, 2, "weight"), \
                _tensor(parts, op, 3, "bias"), float(decode(_arg(op, 4, "eps", 1e-5)))
        else:
            w, b = _tensor(parts, op, 1, "weight"), _tensor(parts, op, 2, "bias")
            groups, eps = int(decode(_arg(op, 6, "group"))), float(decode(_arg(op, 7, "eps")))
        if len(shape) < 2 or shape[1] % groups:
            raise Unsupported(f"group_norm with {groups} groups on {shape}")
        virtual = [shape[0], groups, shape[1] // groups] + shape[2:]
        layout = _group_layout(virtual)
        if layout is None:  # flat rows (N*G, C/G*HW)
            layout = choose_tiles_full_row(make_layout(virtual, list(range(2, len(virtual)))))
        return _RowNorm(spec, parts, layout, shape, "group", eps, w, b, groups=groups).build()
    if name == "instance_norm":
        w, b = _tensor(parts, op, 1, "weight"), _tensor(parts, op, 2, "bias")
        use_input_stats = bool(decode(_arg(op, 5, "use_input_stats", True)))
        eps = float(decode(_arg(op, 7, "eps", 1e-5)))
        if use_input_stats:
            if len(shape) < 3:
                raise Unsupported(f"instance_norm on {shape}")
            layout = choose_tiles_full_row(make_layout(shape, list(range(2, len(shape)))))
            return _RowNorm(spec, parts, layout, shape, "instance", eps, w, b).build()
        mean, var = _tensor(parts, op, 3, "running_mean"), _tensor(parts, op, 4, "running_var")
        return _ChannelAffine(spec, parts, shape, w, b, mean, var, eps).build()
    if name in ("batch_norm", "native_batch_norm", "_native_batch_norm_legit_no_training"):
        w, b = _tensor(parts, op, 1, "weight"), _tensor(parts, op, 2, "bias")
        mean, var = _tensor(parts, op, 3, "running_mean"), _tensor(parts, op, 4, "running_var")
        if name == "_native_batch_norm_legit_no_training":
            training, eps = False, float(decode(_arg(op, 6, "eps", 1e-5)))
        else:
            training = bool(decode(_arg(op, 5, "training", False)))
            eps = float(decode(_arg(op, 7, "eps", 1e-5)))
        if training or mean is None or var is None:
            raise Unsupported(f"{name} with batch statistics (training mode)")
        return _ChannelAffine(spec, parts, shape, w, b, mean, var, eps).build()
    raise Unsupported(f"normalization {op.target}")


@dataclass
class _GroupLayout(Layout):
    """Group norm's (N*G, C/G, HW) view of the virtual shape (N, G, C/G, *S): a tile (BO, BC, BR) holds BO groups
    of BC channel rows (C/G padded) and BR spatial positions; statistics reduce over tile axes 1 and 2, and each
    channel row's weight/bias is one value (a (BO, BC, 1) gather)."""

    C: int = 1  # channels per group
    BC: int = 1

    @property
    def view_shape(self) -> tuple[int, ...]:
        return (self.O, self.C, self.R)

    @property
    def tile(self) -> str:
        return f"({self.BO}, {self.BC}, {self.BR})"

    @property
    def axis(self):
        return (1, 2)

    @property
    def red_tile(self) -> str:
        return f"({self.BO}, 1, 1)"

    @property
    def red_view_shape(self) -> tuple[int, ...]:
        return (self.O, 1, 1)

    def tiles_grid(self) -> tuple[int, ...]:
        return (cdiv(self.O, self.BO),)

    def tile_index(self, chunk: str) -> str:
        return f"(pid, 0, {chunk})"

    def red_index(self) -> str:
        return "(pid, 0, 0)"

    def emit_block_coords(self, code: Code) -> None:
        if self.persistent:
            code(f"for pid in range(ct.bid(0), {cdiv(self.O, self.BO)}, ct.num_blocks(0)):")
            code.level += 1
        else:
            code("pid = ct.bid(0)")
        scaled = f"pid * {self.BO}" if self.BO > 1 else "pid"
        code(f"rows = {scaled} + ct.arange({self.BO}, dtype=ct.int32)[:, None, None]")
        code(f"chans = ct.arange({self.BC}, dtype=ct.int32)[None, :, None]")

    def emit_chunk_coords(self, code: Code, chunk: str) -> None:
        start = "" if chunk == "0" else f"{chunk} * {self.BR} + "
        code(f"cols = {start}ct.arange({self.BR}, dtype=ct.int32)[None, None, :]")

    def input_groups(self) -> list[tuple[str, list[int]]]:
        return [("rows", self.dims_o), ("chans", [2]), ("cols", self.dims_r)]

    def output_groups(self) -> list[tuple[str, list[int]]]:
        return [("rows", self.dims_o)]

    def needs_mask(self) -> bool:
        return self.R % self.BR != 0 or self.C != self.BC

    def valid(self) -> str | None:
        conds = ([f"(cols < {self.R})"] if self.R % self.BR else []) + \
            ([f"(chans < {self.C})"] if self.C != self.BC else [])
        return " & ".join(conds) if conds else None

    @property
    def count(self) -> int:
        return self.C * self.R

    @property
    def chunk_elems(self) -> int:
        return self.BC * self.BR


def _group_layout(virtual: list[int]) -> _GroupLayout | None:
    """The channel-row layout of group norm per TUNING, or None where flat rows suit better (short channel
    rows, a group of too many channels for a chunk, or few long groups that want the segmented statistics)."""
    N, G, cpg = virtual[:3]
    hw = prod(virtual[3:])
    if not TUNING["group_channel_rows"] or hw < max(2, TUNING["group_min_hw"]):
        return None
    bc = pow2_at_least(cpg)
    full = pow2_at_least(hw)
    L = _GroupLayout("group", list(virtual), None, N * G, hw, 1, [0, 1], list(range(3, len(virtual))), [],
                     C=cpg, BC=bc)
    if bc * full <= TUNING["group_max_single"]:
        L.BR = full
        L.BO = min(pow2_at_least(L.O), max(1, TUNING["row_tile_elems"] // (bc * full)))
        while L.BO > 1 and L.blocks() < NUM_SM and L.BO * bc * full > 512:
            L.BO //= 2
        return L
    L.BR = min(full, max(1, TUNING["group_chunk"] // bc))
    if L.BR < 32 or L.blocks() < NUM_SM:
        return None
    return L


def _main_dtype(parts: Parts) -> str:
    t = parts.inputs.get(parts.main)
    if t is not None:
        return t.dtype
    for op in parts.prologue:
        if op.node == parts.main:
            return op.output_dtype
    return "float32"


def _group_side_view(shape: list[int], groups: int):
    """Side inputs broadcast against (N, C, *S) re-viewed against (N, G, C/G, *S)."""
    rank = len(shape)

    def view(t: TensorSpec):
        s = [1] * (rank - len(t.shape)) + list(t.shape)
        c = s[1]
        new = [s[0], groups, shape[1] // groups] + s[2:] if c != 1 else [s[0], 1, 1] + s[2:]
        return f"{t.name}.reshape{tuple(new)}", new

    return view


class _RowNorm:
    def __init__(self, spec, parts, layout: Layout, shape, kind: str, eps: float, w, b, groups: int = 1):
        self.spec, self.parts, self.L, self.shape = spec, parts, layout, shape
        self.kind, self.eps, self.w, self.b, self.groups = kind, eps, w, b, groups
        side_view = _group_side_view(shape, groups) if kind == "group" else None
        self.gen = SameShapeGen(spec, parts, layout, out_shape=shape, side_view=side_view)
        self.rms = kind == "rms"
        self.pro_outs = {t.graph_value for _, t in self.gen.out_views} & parts.prologue_values
        # few long rows: cut each row in segments, one block each, for the statistics and for the normalizing
        self.segments = 1
        if layout.nch > 1 and layout.blocks() < NUM_SM:
            self.segments = min(pow2_floor(max(1, (2 * NUM_SM) // layout.blocks())), pow2_floor(layout.nch), 64)
        self.cps = cdiv(layout.nch, self.segments)
        self.split = split_plan(self)
        if self.split:
            self.segments = 1
        elif self.segments == 1:
            tma_occ = self.gen.masked_tma_occupancy("norm_masked_tma_occupancy")
            layout.persist(self.gen.kernel, passes=2 if layout.nch > 1 else 1, tma_occupancy=tma_occ)
            occ = TUNING["chunked_occupancy"]
            if occ and kind == "group" and layout.nch > 1 and not layout.persistent:  # a block per group, two walks
                self.gen.kernel.options["occupancy"] = int(occ)
        else:
            layout.hints, layout.long_loops = True, True

    # per-element affine parameters for the current chunk (None when absent)
    def param_tile(self, kern: Kernel, t: TensorSpec | None, chunk: str) -> str | None:
        if t is None:
            return None
        k, L = kern.body, self.L
        var = f"p_{t.name}"
        if self.kind in ("layer", "rms"):
            name = kern.tensor(f"a_{t.name}", f"{t.name}.reshape(1, {L.R})")
            k(f"{var} = ct.load({name}, index=(0, {chunk}), shape=(1, {L.BR}), "
              f"padding_mode=ct.PaddingMode.ZERO{L.chunk_tma_hint}).astype(ct.float32)")
        elif isinstance(L, _GroupLayout):
            name = kern.tensor(f"a_{t.name}", t.name)
            k(f"{var} = ct.gather({name}, (rows % {self.groups}) * {L.C} + chans).astype(ct.float32)")
        elif self.kind == "group":
            name = kern.tensor(f"a_{t.name}", t.name)
            cpg = self.shape[1] // self.groups
            hw = prod(self.shape[2:])
            col_c = "cols" if hw == 1 else f"(cols // {hw})"
            k(f"{var} = ct.gather({name}, (rows % {self.groups}) * {cpg} + {col_c}).astype(ct.float32)")
        else:  # instance: one channel per row
            name = kern.tensor(f"a_{t.name}", t.name)
            k(f"{var} = ct.gather({name}, rows % {self.shape[1]}).astype(ct.float32)")
        return var

    def normalize_and_store(self, kern: Kernel, chunk: str, skip=frozenset()) -> None:
        """Load the chunk (prologue included), normalize it with `mean`/`rstd`, run the epilogue, store."""
        t, env, ctx = self.gen.load_tile(chunk, kern)
        outs = {o.graph_value for _, o in self.gen.out_views} - set(skip)
        self.finish_tile(kern, env, ctx, chunk, t, outs)

    def masked(self, k: Code, t: str) -> str:
        valid = self.L.valid()
        if valid:
            k(f"xs = ct.where({valid}, {t}, 0.0)")
            return "xs"
        return t

    def accumulate_chunk(self, kern: Kernel, chunk: str, t: str | None = None) -> None:
        """Fold one chunk into the running statistics (sum of squares; or count, mean and M2 merged with
        Chan's formula); prologue outputs (a residual sum) are stored here, in the statistics pass. `t`: the
        chunk's tile when it is already loaded (a resident chunk; SameShapeGen.resident_ok)."""
        k, L, ax = kern.body, self.L, self.L.axis
        if t is None:
            t, env, ctx = self.gen.load_tile(chunk, kern)
            if self.pro_outs:
                self.gen.store_outputs(env, chunk, self.pro_outs, kern)
        xs = self.masked(k, t)
        if self.rms:
            k(f"ss = ss + ct.sum({xs} * {xs}, axis={ax}, keepdims=True)")
            return
        valid = L.valid()
        if valid:
            # the mask may not span every reduced tile axis (group tiles: C/G is reduced too)
            k(f"cn = ct.sum(ct.broadcast_to(ct.where({valid}, 1.0, 0.0), {L.tile}), axis={ax}, keepdims=True)")
        else:
            k(f"cn = ct.full({L.red_tile}, {flit(L.chunk_elems)}, dtype=ct.float32)")
        k(f"cmean = ct.sum({xs}, axis={ax}, keepdims=True) / cn")
        cdev = f"{xs} - cmean"
        k(f"cdev = ct.where({valid}, {cdev}, 0.0)" if valid else f"cdev = {cdev}")
        k(f"cm2 = ct.sum(cdev * cdev, axis={ax}, keepdims=True)")
        k("tot = n + cn")
        k("delta = cmean - mean")
        k("mean = mean + delta * (cn / tot)")
        k("m2 = m2 + cm2 + delta * delta * (n * cn / tot)")
        k("n = tot")

    @property
    def lane_stats(self) -> bool:
        if isinstance(self.L, _GroupLayout):  # padded channel lanes would miscount in merge_lanes
            return bool(TUNING["lane_group"]) and self.L.C == self.L.BC
        return bool(TUNING["lane_norm"])

    def init_lane_stats(self, k: Code) -> None:
        L = self.L
        names = ("ssl",) if self.rms else ("ml", "m2l")
        for v in names:
            k(f"{v} = ct.full({L.tile}, 0.0, dtype=ct.float32)")
        if not self.rms:
            k(f"nl = ct.full({L.red_tile}, 0.0, dtype=ct.float32)")

    def accumulate_lanes(self, kern: Kernel, chunk: str, t: str | None = None) -> None:
        """Fold one chunk into per-lane statistics without reducing: a sum of squares, or Welford's running
        mean and M2 per lane (every lane but the last chunk's padding sees one element per chunk, so the count
        is one per-row value and its reciprocal is taken once per chunk). `t` as in accumulate_chunk."""
        k, L = kern.body, self.L
        if t is None:
            t, env, ctx = self.gen.load_tile(chunk, kern)
            if self.pro_outs:
                self.gen.store_outputs(env, chunk, self.pro_outs, kern)
        if self.rms:
            xs = self.masked(k, t)
            k(f"ssl = ssl + {xs} * {xs}")
            return
        k("nl = nl + 1.0")
        k("rn = 1.0 / nl")
        k(f"delta = {t} - ml")
        k("ml_new = ml + delta * rn")
        k(f"m2l_new = m2l + delta * ({t} - ml_new)")
        valid = L.valid()
        if valid:  # padding lanes of the last chunk keep their statistics (and count one chunk less)
            k(f"ml = ct.where({valid}, ml_new, ml)")
            k(f"m2l = ct.where({valid}, m2l_new, m2l)")
        else:
            k("ml = ml_new")
            k("m2l = m2l_new")

    def merge_lanes(self, k: Code) -> None:
        """Per-row statistics from the per-lane ones (Chan's merge over lanes)."""
        L, ax = self.L, self.L.axis
        if self.rms:
            k(f"ss = ct.sum(ssl, axis={ax}, keepdims=True)")
            return
        nch = L.nch
        if L.needs_mask():  # lanes past the row's end in the last chunk saw one chunk less
            L.emit_chunk_coords(k, str(nch - 1))
            k(f"cntl = ct.where({L.valid()}, {flit(nch)}, {flit(nch - 1)})")
        else:
            k(f"cntl = ct.full({L.tile}, {flit(nch)}, dtype=ct.float32)")
        k(f"mean = ct.sum(cntl * ml, axis={ax}, keepdims=True) * {flit(1.0 / L.count)}")
        k("dml = ml - mean")
        k(f"m2 = ct.sum(m2l + cntl * dml * dml, axis={ax}, keepdims=True)")

    def resident_chunks(self) -> int:
        """Chunks of a two-pass row held in registers from the statistics pass to the normalizing one
        (TUNING["norm_resident_elems"] elements, whole chunks, fewer than all of them): those are read from
        memory once; the kept tile is the prologue's result (SameShapeGen.resident_ok)."""
        elems = TUNING["norm_resident_elems"]
        if not elems or not self.gen.resident_ok() or self.L.nch < 2:
            return 0
        return min(self.L.nch - 1, int(elems) // self.L.chunk_elems)

    def init_stats(self, k: Code) -> None:
        for v in (("ss",) if self.rms else ("n", "mean", "m2")):
            k(f"{v} = ct.full({self.L.red_tile}, 0.0, dtype=ct.float32)")

    def emit_rstd(self, k: Code) -> None:
        var = "ss" if self.rms else "m2"
        k(f"rstd = ct.rsqrt({var} * {flit(1.0 / self.L.count)} + {flit(self.eps)})")

    def build(self) -> KernelSource:
        L = self.L
        kern = self.gen.kernel
        k = kern.body
        if not self.split:  # (the split rows take their coordinates from a ticket)
            L.emit_block_coords(k)
        ax, inv_r = L.axis, flit(1.0 / L.count)
        before, extra, grid = [], [], None
        if L.nch == 1:
            t, env, ctx = self.gen.load_tile("0")
            xs = self.masked(k, t)
            if self.rms:
                k(f"ms = ct.sum({xs} * {xs}, axis={ax}, keepdims=True) * {inv_r}")
                k(f"rstd = ct.rsqrt(ms + {flit(self.eps)})")
            else:
                k(f"mean = ct.sum({xs}, axis={ax}, keepdims=True) * {inv_r}")
                dev = f"{xs} - mean"
                k(f"dev = ct.where({L.valid()}, {dev}, 0.0)" if L.valid() else f"dev = {dev}")
                k(f"var = ct.sum(dev * dev, axis={ax}, keepdims=True) * {inv_r}")
                k(f"rstd = ct.rsqrt(var + {flit(self.eps)})")
            # the chunk is still in registers: normalize it without reloading
            self.finish_tile(kern, env, ctx, "0", t)
        elif self.split:
            extra, grid = emit_split_row(self, kern)
        elif self.segments == 1:
            lanes = self.lane_stats
            accumulate = self.accumulate_lanes if lanes else self.accumulate_chunk
            (self.init_lane_stats if lanes else self.init_stats)(k)
            kept = self.resident_chunks()
            for i in range(kept):  # chunks kept in registers between the two passes: read once
                t, _, _ = self.gen.load_tile(str(i), kern)
                k(f"res{i} = {t}")
                accumulate(kern, str(i), f"res{i}")
            with k.block(f"for c in range({kept}, {L.nch}):" if kept else f"for c in range({L.nch}):"):
                accumulate(kern, "c")
            if lanes:
                self.merge_lanes(k)
            self.emit_rstd(k)
            for i in range(kept):
                ctx = self.gen.tile_ctx(str(i), kern)
                self.finish_tile(kern, {self.parts.main: f"res{i}"}, ctx, str(i), f"res{i}")
            with k.block(f"for c in range({kept}, {L.nch}):" if kept else f"for c in range({L.nch}):"):
                self.normalize_and_store(kern, "c", skip=self.pro_outs)
        else:
            before, extra = self.emit_segment_stats()
            self.emit_merge_stats(k)
            seg_range = f"range(seg * {self.cps}, min(seg * {self.cps} + {self.cps}, {L.nch}))"
            with k.block(f"for c in {seg_range}:"):
                self.normalize_and_store(kern, "c", skip=self.pro_outs)
            grid = L.grid() + (self.segments,)
        what = {"layer": "layer_norm", "rms": "rms_norm", "group": f"group_norm ({self.groups} groups)",
                "instance": "instance_norm"}[self.kind]
        doc = (f"{', '.join(self.spec.operations)}: {what} of {self.shape} as rows {L.view_shape}, tile {L.tile}"
               + (", one pass" if L.nch == 1 else f", statistics then normalize over {L.nch} chunks")
               + (f" ({kept} kept in registers)" if self.segments == 1 and (kept := self.resident_chunks()) else "")
               + (f" in {self.segments} segments per row" if self.segments > 1 else "")
               + (f", read once: {self.split[0]} blocks per row of {self.split[1]} chunks each, held in registers, "
                  "statistics merged through atomics" if self.split else "")
               + (f", persistent grid of {L.grid()[0]} blocks" if L.persistent else ""))
        return self.gen.finish(doc, grid=grid, before=before, extra_lines=extra)

    def emit_normalized(self, kern: Kernel, t: str, chunk: str) -> None:
        """y = normalized and affine-mapped tile `t` (mean/rstd are in scope). Where weight and bias are one value
        per row or channel row (group norm's channel rows, instance norm), they fold with the statistics into a
        per-row scale and shift first: one multiply-add per element."""
        k = kern.body
        per_row = isinstance(self.L, _GroupLayout) or self.kind == "instance"
        w = self.param_tile(kern, self.w, chunk)
        b = self.param_tile(kern, self.b, chunk)
        if per_row and not self.rms:
            k(f"scale = rstd * {w}" if w else "scale = rstd")
            k(f"shift = {b} - mean * scale" if b else "shift = 0.0 - mean * scale")
            k(f"y = {t} * scale + shift")
            return
        k(f"y = {t} * rstd" if self.rms else f"y = ({t} - mean) * rstd")
        if w:
            k(f"y = y * {w}")
        if b:
            k(f"y = y + {b}")

    def finish_tile(self, kern: Kernel, env, ctx, chunk: str, t: str, outs=None) -> None:
        """Normalize the loaded tile `t` with `mean`/`rstd`, run the epilogue, store `outs` (None: every output)."""
        self.emit_normalized(kern, t, chunk)
        self.gen.finish_chunk(env, ctx, chunk, ["y"], outs, kern)

    # -- few long rows: per-segment statistics (kernel one), merged by every segment's block (kernel two)
    def stat_names(self) -> list[str]:
        return ["ss"] if self.rms else ["n", "mean", "m2"]

    def emit_segment_stats(self):
        L, S = self.L, self.segments
        kern = Kernel(f"{self.spec.id}_stats_kernel")
        k = kern.body
        L.emit_block_coords(k)
        k(f"seg = ct.bid({1 if L.kind == 'row' else 2})")
        self.init_stats(k)
        with k.block(f"for c in range(seg * {self.cps}, min(seg * {self.cps} + {self.cps}, {L.nch})):"):
            self.accumulate_chunk(kern, "c")
        extra = []
        for v in self.stat_names():
            extra.append(f"seg_{v} = torch.empty(({S}, {L.O}, 1), dtype=torch.float32, "
                         f"device={self.gen.device}.device)")
            ws = kern.tensor(f"ws_{v}", f"seg_{v}")
            k(f"ct.store({ws}, index=(seg, pid, 0), tile=ct.reshape({v}, (1, {L.BO}, 1)))")
        doc = f"{', '.join(self.spec.operations)}: statistics of each row segment ({self.cps} chunks)"
        return [(kern, L.grid() + (S,), doc)], extra

    def emit_merge_stats(self, k: Code) -> None:
        L, S = self.L, self.segments
        kern = self.gen.kernel
        k(f"seg = ct.bid({1 if L.kind == 'row' else 2})")
        for v in self.stat_names():
            ws = kern.tensor(f"ws_{v}", f"seg_{v}.reshape({S}, {L.O})")
            k(f"st_{v} = ct.load({ws}, index=(0, pid), shape=({S}, {L.BO}))")
        shape = f"({L.BO}, 1)"
        if self.rms:
            k(f"ss = ct.reshape(ct.sum(st_ss, axis=0, keepdims=True), {shape})")
        else:  # Chan's merge of the segments' (count, mean, M2), the same in every block of the row
            k("n_all = ct.sum(st_n, axis=0, keepdims=True)")
            k("mean_all = ct.sum(st_n * st_mean, axis=0, keepdims=True) / n_all")
            k("m2_all = ct.sum(st_m2 + st_n * (st_mean - mean_all) * (st_mean - mean_all), axis=0, keepdims=True)")
            k(f"mean = ct.reshape(mean_all, {shape})")
            k(f"m2 = ct.reshape(m2_all, {shape})")
        self.emit_rstd(k)


def _column_block(n: int, lo: int = 64, hi: int = 1024) -> int:
    """The largest power-of-two column block in [lo, hi] that wastes at most 1/16 of its lanes on the ragged last
    block of each row (else the least wasteful one): rows of 3136 take 256-wide blocks, not 1024."""
    best, best_waste = lo, 1.0
    b = hi
    while b >= lo:
        padded = -(-n // b) * b
        waste = (padded - n) / padded
        if waste <= 1 / 16 or b >= n:
            return b if b < n else max(lo, min(hi, _pow2(n)))
        if waste < best_waste:
            best, best_waste = b, waste
        b //= 2
    return best


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _channel_split(shape: list[int], parts, per_row: bool, params: set[str]) -> int:
    """How many rows each channel row of (N, C, *S) becomes (TUNING["bn_split_rows"]): HW over its largest
    power-of-two divisor when that divisor is 16..HW/2 and every tensor input but the norm's `params` is either
    the full shape or constant over the spatial dims (both re-view onto the split shape); else 1."""
    hw = prod(shape[2:])
    p2 = hw & -hw
    if not (TUNING["bn_split_rows"] and per_row and 16 <= p2 < hw):
        return 1
    for t in parts.inputs.values():
        if t.role == "scalar" or t.graph_value == parts.main or t.name in params:
            continue
        s = [1] * (len(shape) - len(t.shape)) + list(t.shape)
        if len(s) != len(shape) or (s[2:] != list(shape[2:]) and any(v != 1 for v in s[2:])):
            return 1
    return hw // p2


def _split_side_view(shape: list[int], view: list[int]):
    """Side inputs broadcast against (N, C, *S) re-viewed against (N, C, split, HW / split)."""
    rank = len(shape)

    def side(t: TensorSpec):
        s = [1] * (rank - len(t.shape)) + list(t.shape)
        new = s[:2] + (view[2:] if s[2:] == list(shape[2:]) else [1, 1])
        return f"{t.name}.reshape{tuple(new)}", new

    return side


class _ChannelAffine:
    """y = (x - running_mean[c]) * rsqrt(running_var[c] + eps) * weight[c] + bias[c] over (N, C, *S)."""

    def __init__(self, spec, parts, shape, w, b, mean, var, eps):
        self.spec, self.parts, self.shape = spec, parts, shape
        self.w, self.b, self.mean, self.var, self.eps = w, b, mean, var, eps
        if len(shape) < 2:
            raise Unsupported(f"batch_norm on {shape}")
        self.C, self.HW = shape[1], prod(shape[2:])
        # one channel per row when rows are long enough, else channels along the columns
        self.per_row = self.HW >= 32
        reduced = list(range(2, len(shape))) if self.per_row else list(range(1, len(shape)))
        # a channel row whose length is not a power of two is cut into `split` rows of its largest power-of-two
        # divisor (3136 = 49 x 64): tiles of whole sub-rows are contiguous runs with no padded lanes
        params = {t.name for t in (w, b, mean, var) if t is not None}
        self.split, side_view, view = _channel_split(shape, parts, self.per_row, params), None, shape
        if self.split > 1:
            view = list(shape[:2]) + [self.split, self.HW // self.split]
            reduced, side_view = [3], _split_side_view(shape, view)
        L = make_layout(view, reduced)  # trailing dims: always the row layout
        choose_tiles(L, 4096, max_br=_column_block(L.R), min_tile=256)
        # no load latency / store hints (TUNING["bn_hints"]): H200, batch_norm eval 64x256x56x56 fp16, same run:
        # with hints 0.104 ms, without 0.085 (copy of the same bytes 0.060)
        L.hints = bool(TUNING["bn_hints"])
        L.unchecked = bool(TUNING["bn_unchecked"])
        self.L = L
        self.gen = SameShapeGen(spec, parts, L, out_shape=shape, side_view=side_view)
        self.k = self.gen.kernel.body

    def channel_param(self, t: TensorSpec | None, default: str) -> str:
        if t is None:
            return default
        kern, k = self.gen.kernel, self.k
        name = kern.tensor(f"a_{t.name}", t.name)
        if self.per_row:
            idx = f"rows % {self.C}" if self.split == 1 else f"(rows // {self.split}) % {self.C}"
        else:
            idx = "cols" if self.HW == 1 else f"(cols // {self.HW})"
        var = f"p_{t.name}"
        k(f"{var} = ct.gather({name}, {idx}).astype(ct.float32)")
        return var

    def build(self) -> KernelSource:
        k, L = self.k, self.L
        k("pid = ct.bid(0)")
        k("pid_c = ct.bid(1)")
        k(f"rows = pid * {L.BO} + ct.arange({L.BO}, dtype=ct.int32)[:, None]")
        t, env, ctx = self.gen.load_tile("pid_c")
        mean = self.channel_param(self.mean, "0.0")
        var = self.channel_param(self.var, "1.0")
        w = self.channel_param(self.w, "1.0")
        b = self.channel_param(self.b, "0.0")
        k(f"scale = ct.rsqrt({var} + {flit(self.eps)}) * {w}")
        k(f"y = ({t} - {mean}) * scale + {b}")
        env = dict(env)
        env[self.parts.anchor.node] = "y"
        for gv, idx in self.parts.getitems.items():
            if idx == 0:
                env[gv] = "y"
        env = emit_ops(self.parts.epilogue, env, lambda v: ctx.load(v, k), k)
        self.gen.store_outputs(env, "pid_c")
        grid = (cdiv(L.O, L.BO), cdiv(L.R, L.BR))
        doc = (f"{', '.join(self.spec.operations)}: per-channel affine with running statistics over {self.shape} "
               f"as {L.view_shape} ({'channel per row' if self.per_row else 'channels along columns'}), "
               f"tile {L.tile}")
        return self.gen.finish(doc, grid=grid)
