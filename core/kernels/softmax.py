"""softmax / log_softmax (and _softmax, _log_softmax, _safe_softmax) over any dim, with fused prologue (scale,
additive mask, masked_fill) and epilogue.

A row that fits a tile (up to 8192 elements) is loaded once: max, exp, sum and the normalised store happen in
registers. Longer rows take two passes: an online pass keeps a running (max, sum of exp) per row, rescaling the
sum when the max grows, then a second pass recomputes the prologue and writes exp(x - max) / sum. Softmax over
an inner dim (dim=1 of NCHW) keeps the trailing dims innermost (the `col` layout) and reduces along tile axis 1.
"""

from __future__ import annotations

from ..specs import KernelSpec
from .base import KernelSource, Unsupported, pow2_at_least
from .expr_math import fast_exp, fast_recip
from .rowwise import TUNING, SameShapeGen, choose_tiles_full_row, decode, make_layout, norm_dims, split_spec
from .softmax_flat import flat_plan, generate_flat
from .softmax_split import emit_split_row, split_plan
from .softmax_words import generate_words, words_fit

_OPS = {"softmax": (False, False), "_softmax": (False, False), "_safe_softmax": (False, True),
        "log_softmax": (True, False), "_log_softmax": (True, False)}


def generate(spec: KernelSpec) -> KernelSource:
    parts = split_spec(spec, {"softmax"})
    op = parts.anchor
    if op.op not in _OPS:
        raise Unsupported(f"softmax-like op {op.target}")
    log, safe = _OPS[op.op]
    shape = list(op.output)
    dim = decode(op.attrs.get("dim", -1))
    dims = norm_dims(dim, len(shape)) if shape else []
    layout = make_layout(shape, dims)
    wide = (layout.kind == "row"
            and TUNING["max_single"] < pow2_at_least(layout.R) <= (TUNING["softmax_wide_single"] or 0))
    layout = choose_tiles_full_row(layout, max_single=TUNING["softmax_wide_single"] if wide else None)
    gen = SameShapeGen(spec, parts, layout)
    if wide and TUNING["softmax_wide_worker_warps"]:
        gen.kernel.options["num_worker_warps"] = int(TUNING["softmax_wide_worker_warps"])
    if flat := flat_plan(parts, layout):  # rows off 16 bytes (or ragged as split rows): flat aligned tiles
        return generate_flat(gen, *flat, log, safe, _exp)
    split = split_plan(gen)
    what = "log_softmax" if log else "softmax"
    if split:  # rows split over cooperating blocks, read once
        g = _Softmax(gen, log, safe)
        extra, grid = emit_split_row(g, *split, _exp)
        return gen.finish(f"{', '.join(spec.operations)}: {what} over dim {dims} of {shape} as rows "
                          f"{layout.view_shape}, tile {layout.tile}, read once: {split[0]} blocks per row of "
                          f"{split[1]} chunks each, held in registers, max and sum merged through atomics",
                          grid=grid, extra_lines=extra)
    tma_occ = gen.masked_tma_occupancy("stacked_masked_tma_occupancy")
    layout.persist(gen.kernel, passes=2 if layout.nch > 1 else 1, allow=not wide, tma_occupancy=tma_occ)
    if words_fit(parts, layout):
        return generate_words(gen, log, safe, _exp)
    g = _Softmax(gen, log, safe)
    g.emit()
    doc = (f"{', '.join(spec.operations)}: {what} over dim {dims} of {shape} as {layout.kind} {layout.view_shape}, "
           f"tile {layout.tile}" + (", one pass" if layout.nch == 1 else f", two passes over {layout.nch} chunks")
           + (f" ({kept} kept in registers)" if (kept := g.resident_chunks()) else "")
           + (f", persistent grid of {layout.grid()[0]} blocks" if layout.persistent else ""))
    return gen.finish(doc)


def _exp(arg: str) -> str:
    """exp of a softmax argument (x - row max <= 0), as exp2 per TUNING["softmax_exp2"]: results flushed below the
    normal range add nothing to a sum that holds exp(0) = 1."""
    return fast_exp(arg, exp2=bool(TUNING["softmax_exp2"]))


def _recip(row_sum: str) -> str:
    """1 / a row's sum of exps (>= 1: it holds exp(0) for the row's max; 0 only for a safe softmax's row of -inf,
    which is zeroed after), as one MUFU rcp per TUNING["softmax_approx_recip"], else the IEEE division."""
    return fast_recip(row_sum, approx=bool(TUNING["softmax_approx_recip"]))


class _Softmax:
    def __init__(self, gen: SameShapeGen, log: bool, safe: bool):
        self.gen, self.log, self.safe = gen, log, safe
        self.L = gen.L
        self.k = gen.kernel.body

    def masked_input(self, chunk: str):
        t, env, ctx = self.gen.load_tile(chunk)
        k, L = self.k, self.L
        if L.needs_mask():
            k(f"xs = ct.where(cols < {L.R}, {t}, -math.inf)")
            return "xs", env, ctx
        return t, env, ctx

    def finish_tile(self, env, ctx, chunk: str, xs: str, row_max: str, row_sum: str,
                    skip: set[str] = frozenset(), exps: str | None = None) -> None:
        k = self.k
        if self.log:
            k(f"y = {xs} - {row_max} - ct.log({row_sum})")
        else:
            k(f"y = {exps or _exp(f'{xs} - {row_max}')} * {_recip(row_sum)}")
            if self.safe:
                k(f"y = ct.where({row_sum} == 0.0, 0.0, y)")
        outs = {t.graph_value for _, t in self.gen.out_views} - skip
        self.gen.finish_chunk(env, ctx, chunk, ["y"], outs)

    def row_max(self, m: str) -> str:
        # a row of -inf: torch gives NaN for softmax (exp(-inf - -inf)); _safe_softmax gives zeros
        if self.safe:
            self.k(f"m_safe = ct.where({m} == -math.inf, 0.0, {m})")
            return "m_safe"
        return m

    def emit(self) -> None:
        k, L = self.k, self.L
        L.emit_block_coords(k)
        ax = L.axis
        if L.nch == 1:
            xs, env, ctx = self.masked_input("0")
            k(f"m = ct.max({xs}, axis={ax}, keepdims=True)")
            m = self.row_max("m")
            k(f"e = {_exp(f'{xs} - {m}')}")
            k(f"s = ct.sum(e, axis={ax}, keepdims=True)")
            self.finish_tile(env, ctx, "0", xs, m, "s", exps="e")
            return
        pro_outs = {t.graph_value for _, t in self.gen.out_views} & self.gen.parts.prologue_values
        lanes = bool(TUNING["lane_softmax"])
        k(f"m = ct.full({L.red_tile}, -math.inf, dtype=ct.float32)")
        # lane-wise: the sum of exp stays per lane (rescaled by the row's max growth) and is reduced once
        k(f"s{'l' if lanes else ''} = ct.full({L.tile if lanes else L.red_tile}, 0.0, dtype=ct.float32)")
        kept = self.resident_chunks()
        for i in range(kept):  # chunks kept in registers between the two passes: read once
            xs, _, _ = self.masked_input(str(i))
            k(f"res{i} = {xs}")
            self.accumulate(f"res{i}", lanes)
        with k.block(f"for c in range({kept}, {L.nch}):" if kept else f"for c in range({L.nch}):"):
            xs, env, ctx = self.masked_input("c")
            if pro_outs:
                self.gen.store_outputs(env, "c", pro_outs)
            self.accumulate(xs, lanes)
        if lanes:
            k(f"s = ct.sum(sl, axis={ax}, keepdims=True)")
        m = self.row_max("m")
        for i in range(kept):
            ctx = self.gen.tile_ctx(str(i))
            self.finish_tile({self.gen.parts.main: f"res{i}"}, ctx, str(i), f"res{i}", m, "s", skip=pro_outs)
        with k.block(f"for c in range({kept}, {L.nch}):" if kept else f"for c in range({L.nch}):"):
            xs, env, ctx = self.masked_input("c")
            self.finish_tile(env, ctx, "c", xs, m, "s", skip=pro_outs)

    def accumulate(self, xs: str, lanes: bool) -> None:
        """Fold a chunk into the running row max and (rescaled) sum of exponentials."""
        k, ax = self.k, self.L.axis
        k(f"m_new = ct.maximum(m, ct.max({xs}, axis={ax}, keepdims=True))")
        k("m_ref = ct.where(m_new == -math.inf, 0.0, m_new)")
        if lanes:
            k(f"sl = sl * {_exp('m - m_ref')} + {_exp(f'{xs} - m_ref')}")
        else:
            k(f"s = s * {_exp('m - m_ref')} + ct.sum({_exp(f'{xs} - m_ref')}, axis={ax}, keepdims=True)")
        k("m = m_new")

    def resident_chunks(self) -> int:
        """Chunks of a two-pass row kept in registers (TUNING["softmax_resident_elems"] elements, whole chunks,
        fewer than all); the kept tile is the prologue's result (SameShapeGen.resident_ok)."""
        elems = TUNING["softmax_resident_elems"]
        if not elems or not self.gen.resident_ok() or self.L.nch < 2:
            return 0
        L = self.L
        return min(L.nch - 1, int(elems) // (L.BO * L.BR * L.BI))  # BI = 1 for rows
