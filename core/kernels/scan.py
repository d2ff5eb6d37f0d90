"""Scans: cumsum, cumprod, logcumsumexp, cummax/cummin (values and indices) along any dim, with fused prologue
and epilogue (an exclusive cumsum arrives as ['cumsum', 'sub'] and reads the input tile from the environment).

Rows up to 4096 elements are scanned in one tile (`ct.cumsum`/`ct.cumprod`, or `ct.scan` with a combine
function for logcumsumexp and the (value, index) pairs of cummax/cummin); longer rows are walked in chunks with a
per-row carry (the last column of the previous chunk) folded into each chunk. Padding lanes sit after the valid
ones in scan order, so they never reach a stored element. A scan over an inner dim keeps the trailing dims
innermost (the `col` layout) and scans along tile axis 1. Too few lines to fill the GPU with a chunk loop each:
float cumsum rows take one pass by decoupled look-back (a block per chunk, _LookBack); other scans (and middle
dims) are cut into segments whose totals a first kernel computes.
"""

from __future__ import annotations

from ..specs import KernelSpec
from .base import KernelSource, Unsupported, pow2_at_least
from .gemm_common import CT_DTYPES
from .indexing import MEMORY_TUNING
from .rowwise import (FLOAT_DTYPES, Kernel, SameShapeGen, cdiv, choose_tiles_full_row, decode, input_ctx,
                      make_layout, norm_dims, pow2_floor, prod, split_spec)
from .split_rows import FLAGGED, RELAXED, flag_word, word_value

_KINDS = ("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin")


def _logaddexp(a: str, b: str) -> str:
    hi, lo = f"ct.maximum({a}, {b})", f"ct.minimum({a}, {b})"
    return f"ct.where({lo} == -math.inf, {hi}, {hi} + ct.log(1.0 + ct.exp({lo} - {hi})))"


def generate(spec: KernelSpec) -> KernelSource:
    parts = split_spec(spec, {"scan"})
    op = parts.anchor
    kind = op.op
    if kind not in _KINDS:
        raise Unsupported(f"scan {op.target}")
    shape = list(op.output)
    dims = norm_dims(decode(op.attrs.get("dim", 0)), len(shape)) if shape else []
    t = parts.inputs.get(parts.main)
    in_dtype = t.dtype if t is not None else next((p.output_dtype for p in parts.prologue
                                                     if p.node == parts.main), "float32")
    acc = "ct.float32"
    if in_dtype not in FLOAT_DTYPES:
        if kind in ("logcumsumexp",):
            raise Unsupported(f"{kind} of {in_dtype}")
        if kind in ("cummax", "cummin") and in_dtype not in ("bool", "int8", "uint8", "int16"):
            raise Unsupported(f"{kind} of {in_dtype} (float32 compute would round)")
        if kind in ("cumsum", "cumprod"):
            if parts.prologue or parts.epilogue:
                if not (in_dtype == "bool" and kind == "cumsum" and prod(shape) < 2 ** 24):
                    raise Unsupported(f"integer {kind} with fused elementwise ops")
            else:
                acc = "ct.int64"
    chunk = int(MEMORY_TUNING["scan_chunk_elems"])
    layout = choose_tiles_full_row(make_layout(shape, dims), max_single=int(MEMORY_TUNING["scan_max_single"]),
                                   chunk=chunk, tile_elems=int(MEMORY_TUNING["scan_tile_elems"]))
    if layout.kind == "col" and layout.nch > 1:
        # a chunked scan over a middle dim: wide contiguous windows of the inner dims (whole 128-byte lines and
        # more per row of the tile), the chunk filled along the scanned dim, one outer row per block
        layout.BI = min(pow2_at_least(layout.I), int(MEMORY_TUNING["scan_col_bi"]))
        layout.BR = max(1, chunk // layout.BI)
        layout.BO = 1
    if layout.nch > 1:
        layout.latency = MEMORY_TUNING["scan_latency"]
        layout.chunk_tma = MEMORY_TUNING["scan_chunk_tma"]
    gen = SameShapeGen(spec, parts, layout)
    if kind == "cumsum" and acc == "ct.float32" and layout.BO == 1 and layout.nch > 1:
        # too few rows to fill the GPU with one chunk loop each (those would be cut into segments): one pass
        few_rows = layout.kind == "row" and layout.blocks() < int(MEMORY_TUNING["scan_min_blocks"])
        if MEMORY_TUNING["scan_lookback"] or (MEMORY_TUNING["scan_lookback_rows"] and few_rows):
            return _LookBack(gen).emit(spec, dims, shape)
    if layout.nch == 1 and MEMORY_TUNING["scan_persistent"]:
        layout.persist(gen.kernel)  # one tile per row block: a persistent grid with the row kernels' hints
    mma = (MEMORY_TUNING["scan_mma"] and kind == "cumsum" and in_dtype in ("float16", "bfloat16")
           and not parts.prologue and layout.kind == "col" and layout.BO == 1 and layout.BR >= 16 and layout.BI >= 16)
    segments = 1
    if kind in _SEGMENTED and not parts.prologue and layout.nch >= 4:
        # too few (row tile, inner window) blocks to fill the GPU with serial chunk loops: cut each row into
        # segments (a first kernel reduces every segment to its total, the scan starts each segment from the
        # combined totals of the earlier ones; 1.5x the traffic of one pass, but every SM streams)
        target = int(MEMORY_TUNING["scan_mma_col_min_blocks" if mma else
                                   "scan_col_min_blocks" if layout.kind == "col" else "scan_min_blocks"])
        cap = min(pow2_floor(layout.nch // 2), int(MEMORY_TUNING["scan_max_segments"]))
        while layout.blocks() * segments < target and segments * 2 <= cap:
            segments *= 2
    fused_cps = int(MEMORY_TUNING["scan_fused_segments"] or 0)
    fused = (fused_cps > 0 and kind == "cumsum" and acc == "ct.float32" and not parts.prologue
             and layout.BO == 1 and layout.nch >= 2 * fused_cps)
    if fused:  # segments of scan_fused_segments chunks, whatever the block count
        segments = cdiv(layout.nch, fused_cps)
    scan = _Scan(gen, kind, acc, segments if segments >= 2 else 1)
    scan.fused = fused
    if mma:
        scan.mma_dtype = CT_DTYPES[in_dtype]
    if (MEMORY_TUNING["scan_mma_rows"] and kind == "cumsum" and acc == "ct.float32" and layout.kind == "row"
            and layout.BO == 1 and layout.BR >= 16 * _MMA_W):
        exact = in_dtype in ("float16", "bfloat16") and not parts.prologue
        scan.mma_dtype = CT_DTYPES[in_dtype] if exact else "ct.tfloat32"
    if scan.mma_dtype:  # tensor-core scans replace the split one
        scan.split = None
    scan.emit()
    doc = (f"{', '.join(spec.operations)}: {kind} along dim {dims} of {shape} as {layout.kind} "
           f"{layout.view_shape}, tile {layout.tile}"
           + ("" if layout.nch == 1 else f", {layout.nch} chunks with a carry")
           + (f", rows cut in {scan.segments} segments of {scan.cps} chunks in one kernel, each starting from the "
              "earlier segments' total by decoupled look-back (segment-major tickets)" if scan.fused else
              f", rows cut in {scan.segments} segments whose totals are scanned first" if scan.segments > 1 else "")
           + ((", each chunk scanned on tensor cores (lower-triangular ones @ chunk)" if layout.kind == "col" else
               f", each {_MMA_W}-wide block scanned on tensor cores (block @ upper-triangular ones"
               + (", tf32 hi + lo" if scan.mma_dtype == "ct.tfloat32" else "") + "), then block prefixes")
              if scan.mma_dtype else "")
           + (split_note(scan.split) if scan.split else ""))
    if scan.fused:
        return gen.finish(doc, grid=scan.grid, extra_lines=scan.ws_lines)
    if scan.segments > 1:
        return gen.finish(doc, grid=layout.grid() + (scan.segments,), before=[scan.totals],
                          extra_lines=scan.ws_lines)
    return gen.finish(doc)


def split_levels(L) -> tuple[int, int] | None:
    """(width, levels) of a split float row cumsum (emit_split_cumsum) for this layout, or None for a plain
    ct.cumsum: one row per tile (BO == 1) of a multiple of MEMORY_TUNING["scan_split_width"] elements (0: off)."""
    width = int(MEMORY_TUNING["scan_split_width"] or 0)
    if width < 2 or L.kind != "row" or L.BO != 1 or L.BR % width or L.BR < 2 * width:
        return None
    return width, max(2, int(MEMORY_TUNING["scan_split_levels"]))


def split_note(split: tuple[int, int]) -> str:
    return f", row tiles scanned in blocks of {split[0]} ({split[1]} levels)"


def emit_split_cumsum(k, tile: str, n: int, width: int, levels: int) -> tuple[str, str]:
    """An inclusive float32 cumsum of a (1, n) row tile in `levels` levels of `width`-element blocks
    (MEMORY_TUNING["scan_split_width"], 4 by default): the tile viewed as (n / width, width) is scanned along its
    short axis, each block offset by the exclusive prefix of the block totals (themselves scanned the same way,
    one level down); the last level is a plain ct.cumsum. Returns (scanned tile, the tile's total). A plain
    ct.cumsum of a long row is lowered as a warp scan per register across lanes with a shared-memory transpose
    around it (sm_90, 4096 floats on 4 warps: 160 shuffles, 48 shared loads, 48 stores); in blocks of 4 each
    thread scans the 4 elements of its own 16-byte load and only the block totals cross lanes (40, 8, 8)."""
    cur, length, stack = f"ct.reshape({tile}, ({n},))", n, []
    for lvl in range(levels - 1):
        if length % width or length < 2 * width:
            break
        k(f"sm{lvl} = ct.reshape({cur}, ({length // width}, {width}))")
        k(f"sc{lvl} = ct.cumsum(sm{lvl}, axis=1)")
        k(f"st{lvl} = ct.sum(sm{lvl}, axis=1)")
        stack.append((lvl, length))
        cur, length = f"st{lvl}", length // width
    k(f"sp = ct.cumsum({cur}, axis=0)")
    total = f"ct.sum({cur})"
    for lvl, length in reversed(stack):
        k(f"sp = ct.reshape(sc{lvl} + (sp - st{lvl})[:, None], ({length},))")
    k(f"y = ct.reshape(sp, (1, {n}))")
    return "y", total


_SEGMENTED = ("cumsum", "cumprod", "logcumsumexp")
_MMA_W = 64  # row scans on tensor cores: width of the blocks scanned by one mma (scan_mma_rows)
_IDENT = {"cumsum": "0", "cumprod": "1", "logcumsumexp": "-math.inf", "cummax": "-math.inf", "cummin": "math.inf"}


class _Scan:
    def __init__(self, gen: SameShapeGen, kind: str, acc: str, segments: int = 1):
        self.gen, self.kind, self.acc = gen, kind, acc
        self.L = gen.L
        self.k = gen.kernel.body
        self.segments = segments
        self.cps = cdiv(self.L.nch, segments)
        self.totals = None
        self.ws_lines: list[str] = []
        self.mma_dtype: str | None = None  # cumsum chunks as tri @ x on tensor cores (MEMORY_TUNING["scan_mma"])
        self.fused = False  # segments in one kernel, prefixes by look-back (MEMORY_TUNING["scan_fused_segments"])
        self.split = split_levels(gen.L) if kind == "cumsum" and acc == "ct.float32" else None
        self.split_total: str | None = None
        self.grid: tuple[int, ...] | None = None

    def arg_combine(self) -> str:
        """The (value, index) combine of cummax/cummin: lexicographic max/min of (value, index) (associative;
        equal values keep the later index, like torch)."""
        name = "scan_argmax" if self.kind == "cummax" else "scan_argmin"
        op = ">" if self.kind == "cummax" else "<"
        return name, op

    def scan_tile(self, t: str) -> list[str]:
        k, ax = self.k, self.L.axis
        if self.kind == "cumsum" and self.mma_dtype and self.L.kind == "row":
            return self.scan_rows_mma(t)
        if self.split:
            y, self.split_total = emit_split_cumsum(k, t, self.L.BR, *self.split)
            return [y]
        if self.kind == "cumsum" and self.mma_dtype:  # (1, BR, BI): tri (BR x BR) @ chunk (BR x BI)
            L = self.L
            k(f"xm = ct.reshape({t}, ({L.BR}, {L.BI})).astype({self.mma_dtype})")
            k(f"y = ct.reshape(ct.mma(tri, xm, ct.full(({L.BR}, {L.BI}), 0.0, dtype=ct.float32)), {L.tile})")
            return ["y"]
        if self.kind == "cumsum":
            k(f"y = ct.cumsum({t}, axis={ax})")
            return ["y"]
        if self.kind == "cumprod":
            k(f"y = ct.cumprod({t}, axis={ax})")
            return ["y"]
        if self.kind == "logcumsumexp":
            k(f"y = ct.scan({t}, axis={ax}, func=lambda a, b: {_logaddexp('a', 'b')}, identity=-math.inf)")
            return ["y"]
        _, op = self.arg_combine()
        k(f"idx = ct.broadcast_to(cols, {self.L.tile})")
        take = f"(bv {op} av) | ((bv == av) & (bi >= ai))"
        k(f"y, yi = ct.scan(({t}, idx), axis={ax}, func=lambda av, ai, bv, bi: "
          f"(ct.where({take}, bv, av), ct.where({take}, bi, ai)), identity=({'-' if op == '>' else ''}math.inf, -1))")
        return ["y", "yi"]

    def scan_rows_mma(self, t: str) -> list[str]:
        """A (1, BR) row tile as (BR/W, W): each W-wide block scanned as block @ triu (tf32 hi + lo for float32),
        then each block offset by the exclusive prefix of the block totals."""
        k, L, w = self.k, self.L, _MMA_W
        nb = L.BR // w
        zero = f"ct.full(({nb}, {w}), 0.0, dtype=ct.float32)"
        k(f"xr = ct.reshape({t}, ({nb}, {w}))")
        if self.mma_dtype == "ct.tfloat32":
            k("xh = xr.astype(ct.tfloat32)")
            k("xl = (xr - xh.astype(ct.float32)).astype(ct.tfloat32)")
            k(f"y1 = ct.mma(xh, triu, ct.mma(xl, triu, {zero}))")
        else:
            k(f"y1 = ct.mma(xr.astype({self.mma_dtype}), triu, {zero})")
        k(f"bt = ct.extract(y1, (0, {w - 1}), shape=({nb}, 1))")  # block totals
        k(f"y = ct.reshape(y1 + (ct.cumsum(bt, axis=0) - bt), {L.tile})")
        if L.nch > 1:  # the chunk's total for the carry (extracting y's last element spills 49 KB on sm_90)
            k("tot = ct.sum(bt, axis=0, keepdims=True)")
        return ["y"]

    def last_of(self, tile: str, dtype: str) -> str:
        """The scanned chunk's last position (along the scan axis) as a carry tile. A segmented scan's chunk loop
        takes it with ct.extract; where each line is one block's chunk loop, the same ct.extract took tileiras /
        ptxas past 150 s for sm_90 (cumsum 2048x8192 fp32, two chunks of 4096; session 13), so there it is a sum
        over a one-hot mask of the last position (exact: every other term is zero), 1.1 s. Fused segments
        (one kernel) take the sum too: with plain loads their ct.extract form also ran past 10 minutes."""
        L = self.L
        if self.segments > 1 and not self.fused:
            last = "(0, %d)" % (L.BR - 1) if L.kind == "row" else "(0, %d, 0)" % (L.BR - 1)
            return f"ct.extract({tile}, {last}, shape={L.red_tile})"
        pos = f"ct.arange({L.BR}, dtype=ct.int32)" + ("[None, :]" if L.kind == "row" else "[None, :, None]")
        zero = "0.0" if dtype.startswith("ct.float") else "0"
        return f"ct.sum(ct.where({pos} == {L.BR - 1}, {tile}, {zero}), axis=1, keepdims=True)"

    def apply_carry(self, vals: list[str]) -> list[str]:
        k = self.k
        if self.kind == "cumsum":
            k(f"y = {vals[0]} + carry")
        elif self.kind == "cumprod":
            k(f"y = {vals[0]} * carry")
        elif self.kind == "logcumsumexp":
            k(f"y = {_logaddexp(vals[0], 'carry')}")
        else:
            _, op = self.arg_combine()
            k(f"take = {vals[0]} {op}= carry")  # the chunk is later than the carry: ties take the chunk
            k(f"y = ct.where(take, {vals[0]}, carry)")
            k(f"yi = ct.where(take, {vals[1]}, carry_i)")
            return ["y", "yi"]
        return ["y"]

    def emit_totals(self) -> None:
        """Kernel one of a segmented scan: each (row block, segment) reduces its chunks to one total."""
        gen, L = self.gen, self.L
        kern = Kernel(f"{gen.spec.id}_totals_kernel")
        k = kern.body
        L.emit_block_coords(k)
        k(f"seg = ct.bid({1 if L.kind == 'row' else 2})")
        self.emit_segment_total(kern)
        S = self.segments
        dt = {"ct.float32": "float32", "ct.int64": "int64"}[self.acc]
        self.ws_lines = [f"seg_totals = torch.empty(({S}, {L.O}, {L.I}), dtype=torch.{dt}, "
                         f"device={gen.device}.device)"]
        ws = kern.tensor("ws", "seg_totals")
        if L.kind == "row":
            k(f"ct.store({ws}, index=(seg, pid, 0), tile=ct.reshape(total, (1, {L.BO}, 1)))")
        else:
            k(f"ct.store({ws}, index=(seg, pid, pid_i), tile=ct.reshape(total, (1, {L.BO}, {L.BI})))")
        self.totals = (kern, L.grid() + (S,), f"{', '.join(gen.spec.operations)}: per-segment totals of "
                       f"{self.kind} (segments of {self.cps} chunks)")

    def emit_fused_offset(self) -> None:
        """A segmented cumsum in one kernel (MEMORY_TUNING["scan_fused_segments"]): blocks take (scan line,
        segment) pairs in segment-major ticket order, reduce their segment to its total, get the combined total
        of the earlier segments by _LookBack's decoupled look-back over per-segment status words, and carry it
        into the segment's scan, whose chunk loads re-read what the totals loop just brought into L2."""
        gen, L, k = self.gen, self.L, self.k
        look = _LookBack(gen)
        if MEMORY_TUNING["scan_lookback_store_tma"] is not None:
            L.store_tma = bool(MEMORY_TUNING["scan_lookback_store_tma"])
        S = self.segments
        counter = gen.kernel.tensor("scan_ticket", "scan_ticket")
        status = gen.kernel.tensor("scan_status", "scan_status")
        look.emit_coords(k, counter, idx="seg", count=S, major=True)
        self.emit_segment_total(gen.kernel)
        k("agg = ct.reshape(total, (" + (f"{L.BI},))" if look.col else "))"))
        prefix = look.emit_look_back(k, status, "seg")
        if look.col:
            k(f"carry = {prefix}")
        else:
            k(f"carry = ct.full((1, 1), 0.0, dtype=ct.float32) + {prefix}")
        dev = f"{gen.device}.device"
        lanes = cdiv(L.I, L.BI) * L.BI if look.col else 1
        words = f"({L.O}, {S}, {lanes})" if look.col else f"({L.O}, {S})"
        self.ws_lines = status_lines(dev, words, L.O * S * lanes)
        self.grid = (L.O * (cdiv(L.I, L.BI) if look.col else 1) * S,)

    def emit_segment_total(self, kern: Kernel) -> None:
        """`total`: the segment's chunks (seg * cps ..) of the block's tile reduced along the scanned axis."""
        gen, L, kind, k = self.gen, self.L, self.kind, kern.body
        k(f"acc = ct.full({L.tile}, {_IDENT[kind]}, dtype={self.acc})")
        with k.block(f"for c in range(seg * {self.cps}, min(seg * {self.cps} + {self.cps}, {L.nch})):"):
            L.emit_chunk_coords(k, "c")
            ctx = input_ctx(kern, L, gen.parts)
            ctx.full_index = L.tile_index("c")
            t = ctx.load(gen.parts.main, k, self.acc)
            if L.needs_mask():
                k(f"t = ct.where(cols < {L.R}, {t}, {_IDENT[kind]})")
                t = "t"
            if kind == "cumsum":
                k(f"acc = acc + {t}")
            elif kind == "cumprod":
                k(f"acc = acc * {t}")
            else:
                k(f"acc = {_logaddexp('acc', t)}")
        ax = L.axis
        if kind == "cumsum":
            k(f"total = ct.sum(acc, axis={ax}, keepdims=True)")
        elif kind == "cumprod":
            k(f"total = ct.prod(acc, axis={ax}, keepdims=True)")
        else:
            k(f"top = ct.max(acc, axis={ax}, keepdims=True)")
            k("top_ref = ct.where(top == -math.inf, 0.0, top)")
            k(f"total = top_ref + ct.log(ct.sum(ct.exp(acc - top_ref), axis={ax}, keepdims=True))")

    def emit_offset(self) -> None:
        """Kernel two of a segmented scan starts from the combined totals of the earlier segments."""
        gen, L, k, kind = self.gen, self.L, self.k, self.kind
        S = self.segments
        k(f"seg = ct.bid({1 if L.kind == 'row' else 2})")
        if L.kind == "row":
            ws = gen.kernel.tensor("ws", f"seg_totals.reshape({S}, {L.O})")
            k(f"prev = ct.load({ws}, index=(0, pid), shape=({S}, {L.BO}))")
            k(f"earlier = ct.arange({S}, dtype=ct.int32)[:, None] < seg")
            shape = f"({L.BO}, 1)"
        else:
            ws = gen.kernel.tensor("ws", "seg_totals")
            k(f"prev = ct.load({ws}, index=(0, pid, pid_i), shape=({S}, {L.BO}, {L.BI}))")
            k(f"earlier = ct.arange({S}, dtype=ct.int32)[:, None, None] < seg")
            shape = f"({L.BO}, 1, {L.BI})"
        k(f"prev = ct.where(earlier, prev, {_IDENT[kind]})")
        if kind == "cumsum":
            k("off = ct.sum(prev, axis=0, keepdims=True)")
        elif kind == "cumprod":
            k("off = ct.prod(prev, axis=0, keepdims=True)")
        else:
            k("top = ct.max(prev, axis=0, keepdims=True)")
            k("top_ref = ct.where(top == -math.inf, 0.0, top)")
            k("off = top_ref + ct.log(ct.sum(ct.exp(prev - top_ref), axis=0, keepdims=True))")
        k(f"carry = ct.reshape(off, {shape})")

    def emit(self) -> None:
        k, L, gen = self.k, self.L, self.gen
        if not self.fused:
            L.emit_block_coords(k)
        chunked = L.nch > 1
        if self.segments > 1 and self.fused:
            self.emit_fused_offset()
            if MEMORY_TUNING["scan_fused_occupancy"]:
                gen.kernel.options["occupancy"] = int(MEMORY_TUNING["scan_fused_occupancy"])
            header = f"for c in range(seg * {self.cps}, min(seg * {self.cps} + {self.cps}, {L.nch})):"
        elif self.segments > 1:
            self.emit_totals()
            self.emit_offset()
            # occupancy hints for both passes (MEMORY_TUNING["scan_totals_occupancy"] / ["scan_segment_occupancy"])
            for kern, key in ((self.totals[0], "scan_totals_occupancy"), (gen.kernel, "scan_segment_occupancy")):
                if MEMORY_TUNING[key]:
                    kern.options["occupancy"] = int(MEMORY_TUNING[key])
            header = f"for c in range(seg * {self.cps}, min(seg * {self.cps} + {self.cps}, {L.nch})):"
        elif chunked:
            k(f"carry = ct.full({L.red_tile}, {_IDENT[self.kind]}, dtype={self.acc})")
            if self.kind in ("cummax", "cummin"):
                k(f"carry_i = ct.full({L.red_tile}, -1, dtype=ct.int32)")
            header = f"for c in range({L.nch}):"
        elif MEMORY_TUNING["scan_single_occupancy"]:  # each scan line in one tile
            gen.kernel.options["occupancy"] = int(MEMORY_TUNING["scan_single_occupancy"])
        if self.mma_dtype:  # triangular ones built once per block: upper (row <= column) for rows, else lower
            name, n, op = ("triu", _MMA_W, "<=") if L.kind == "row" else ("tri", L.BR, ">=")
            idx = f"ct.arange({n}, dtype=ct.int32)"
            k(f"{name} = ct.where({idx}[:, None] {op} {idx}[None, :], 1.0, 0.0).astype({self.mma_dtype})")
        if chunked:
            ctx_block = k.block(header)
            ctx_block.__enter__()
        chunk = "c" if chunked else "0"
        if self.acc == "ct.float32":
            t, env, ctx = gen.load_tile(chunk)
        else:  # integer scans: exact int64 arithmetic, no fused ops
            L.emit_chunk_coords(k, chunk)
            ctx = input_ctx(gen.kernel, L, gen.parts)
            ctx.full_index = L.tile_index(chunk)
            t = ctx.load(gen.parts.main, k, self.acc)
            env = {gen.parts.main: t}
        vals = self.scan_tile(t)
        if chunked:
            vals = self.apply_carry(vals)
            if self.mma_dtype and L.kind == "row":
                k("carry = carry + tot")
            elif self.split_total:
                k(f"carry = carry + {self.split_total}")
            else:
                k(f"carry = {self.last_of(vals[0], self.acc)}")
            if len(vals) > 1:
                k(f"carry_i = {self.last_of(vals[1], 'ct.int32')}")
        gen.finish_chunk(env, ctx, chunk, vals)
        if chunked:
            ctx_block.__exit__(None, None, None)


def status_lines(dev: str, words: str, count: int) -> list[str]:
    """Wrapper lines allocating a look-back kernel's status words (`count`, shape `words`) and its ticket with one
    zero fill: the status words from the start of the buffer, the int32 ticket in the 16 bytes after them (both
    bases 16-byte aligned, as cuTile's JIT and aot.py specialize pointers)."""
    end = count + count % 2
    return [f"scan_words = torch.zeros(({end + 2},), dtype=torch.int64, device={dev})",
            f"scan_status = scan_words[:{count}].view{words}",
            f"scan_ticket = scan_words[{end}:].view(torch.int32)"]


class _LookBack:
    """A long float cumsum in one pass (MEMORY_TUNING["scan_lookback"]; by default rows too few for a chunk loop
    each, ["scan_lookback_rows"]): one chunk per block, taken in the order of an atomic ticket (so every earlier
    chunk's block is already running: no block waits on one that has not started), chunk-major across scan lines
    by default (["scan_lookback_chunk_major"]). Each block scans its chunk, publishes the chunk total with flag 1,
    walks back over the earlier chunks of its scan line adding their totals until one carries flag 2 (a running
    prefix, which ends the walk), publishes its own running prefix with flag 2, then stores its chunk plus the
    prefix. Flag and float32 value travel as one 64-bit word (flag << 32 | bits), so one atomic exchange publishes
    both and one atomic read sees a consistent pair: no ordering between separate stores is needed. A scan
    line's first chunk publishes flag 2 at once. Rows (`row` layout): one scan line per block, scalar words. A
    scan over a middle dim (`col`): the block's BI inner positions are BI scan lines, one word each, each lane
    walking back on its own. With
    MEMORY_TUNING["scan_lookback_all"] a row's block instead reads every earlier chunk's total in one vector of
    atomic reads, repeated until all are published (no running prefixes are published at all)."""

    def __init__(self, gen: SameShapeGen):
        self.gen, self.L = gen, gen.L
        self.col = gen.L.kind == "col"
        # rows: read all earlier totals at once instead of walking back (MEMORY_TUNING["scan_lookback_all"])
        self.read_all = (not self.col and bool(MEMORY_TUNING["scan_lookback_all"])
                         and gen.L.nch <= int(MEMORY_TUNING["scan_lookback_all_max"]))
        self.chunk_major = bool(MEMORY_TUNING["scan_lookback_chunk_major"])
        # status words read per round trip of the walk (1: one at a time)
        self.window = min(pow2_floor(max(1, int(MEMORY_TUNING["scan_lookback_window"]))), pow2_at_least(gen.L.nch))

    def emit_coords(self, k, counter: str, idx: str = "c", count: int | None = None,
                    major: bool | None = None) -> None:
        """Block coordinates from an atomic ticket: the scan line and its piece `idx` (of `count`, the chunks by
        default); `major`: tickets piece-major across scan lines (default MEMORY_TUNING's chunk_major)."""
        L, nch = self.L, self.L.nch if count is None else count
        k(f"tid = ct.atomic_add({counter}, 0, 1, {RELAXED})")
        ni = cdiv(L.I, L.BI) if self.col else 1
        if self.chunk_major if major is None else major:
            # consecutive tickets go to different scan lines: a line's chunk c starts `lines` tickets after its
            # chunk c - 1, so the blocks running at once hold a few chunks of every line, not all of a few lines
            lines = L.O * ni
            k(f"{idx} = tid // {lines}")
            k(f"line = tid % {lines}")
            pid_i, pid = (f"line % {ni}", f"line // {ni}" if ni > 1 else "line") if self.col else ("", "line")
        else:
            k(f"{idx} = tid % {nch}")
            pid_i, pid = f"(tid // {nch}) % {ni}", f"tid // {nch * ni}"
        if self.col:
            k(f"pid_i = {pid_i}" if ni > 1 else "pid_i = 0")
            k(f"pid = {pid}")
            k("rows = pid + ct.arange(1, dtype=ct.int32)[:, None, None]")
            k(f"inner = pid_i * {L.BI} + ct.arange({L.BI}, dtype=ct.int32)[None, None, :]")
            k(f"lane = pid_i * {L.BI} + ct.arange({L.BI}, dtype=ct.int32)")
        else:
            k(f"pid = {pid}")
            k("rows = pid + ct.arange(1, dtype=ct.int32)[:, None]")

    def emit_look_back(self, k, status: str, i: str = "c") -> str:
        """Publish the chunk total, walk back, publish the running prefix; returns the prefix to add to y."""
        L, rel = self.L, RELAXED
        val = word_value("w")
        first = f"ct.where({i} == 0, 2, 1).astype(ct.int64)"
        if self.read_all:
            # every earlier chunk's total at once: lanes j < c of one vector read (lanes past the row re-read its
            # last chunk, masked), repeated until all of them carry a flag
            nch = L.nch
            sp = pow2_at_least(nch)
            k(f"ct.atomic_xchg({status}, (pid, {i}), {flag_word('1', 'agg')}, {rel})")
            k(f"sidx = ct.arange({sp}, dtype=ct.int32)")
            k(f"early = sidx < {i}")
            lanes = "sidx" if sp == nch else f"ct.minimum(sidx, {nch - 1})"
            k(f"w = ct.atomic_add({status}, (pid, {lanes}), 0, {rel})")
            with k.block(f"while ct.min(ct.where(early, w, {FLAGGED})) < {FLAGGED}:"):
                k(f"w = ct.atomic_add({status}, (pid, {lanes}), 0, {rel})")
            k(f"prefix = ct.sum(ct.where(early, {val}, 0.0))")
            return "prefix"
        if self.window > 1:
            return self.emit_window_walk(k, status, first, i)
        lane, vec, shape = self.walk_parts()
        k(f"ct.atomic_xchg({status}, (pid, {i}{lane}), {flag_word(first, 'agg')}, {rel})")
        k(f"prefix = ct.full({shape}, 0.0, dtype=ct.float32)")
        if self.col:  # each lane walks on its own; lanes done (j = -1) re-read chunk 0 harmlessly
            k(f"j = ct.full({shape}, 0, dtype=ct.int32) + ({i} - 1)")
        else:
            k(f"j = {i} - 1")
        with k.block(f"while {vec('ct.max(j)', 'j')} >= 0:"):
            k(f"w = ct.atomic_add({status}, (pid, {vec('ct.maximum(j, 0)', 'j')}{lane}), 0, {rel})")
            k("flag = w >> 32")
            if self.col:
                k("active = j >= 0")
            k(f"ready = {vec('(flag != 0) & active', 'flag != 0')}")
            k(f"prefix = prefix + ct.where(ready, {val}, 0.0)")
            walk = "ct.where(flag == 2, -1, ct.where(ready, j - 1, j))"
            k(f"j = {vec(f'ct.where(active, {walk}, j)', walk)}")
        return self.publish_prefix(k, status, i)

    def walk_parts(self):
        """What differs between a row's walk (one scalar) and a middle-dim scan's (a vector of BI lanes): the
        status index's lane part, a picker of the lane form or the scalar form of an expression, the prefix
        shape."""
        def vec(lanes: str, scalar: str) -> str:
            return lanes if self.col else scalar
        return (", lane", vec, f"({self.L.BI},)") if self.col else ("", vec, "()")

    def publish_prefix(self, k, status: str, i: str) -> str:
        """Publish the running prefix (flag 2) of every chunk past the first; returns the prefix to add to y."""
        lane, _, _ = self.walk_parts()
        with k.block(f"if {i} > 0:"):
            k(f"ct.atomic_xchg({status}, (pid, {i}{lane}), {flag_word('2', 'prefix + agg')}, {RELAXED})")
        return f"ct.reshape(prefix, (1, 1, {self.L.BI}))" if self.col else "prefix"

    def emit_window_walk(self, k, status: str, first: str, i: str = "c") -> str:
        """The walk back `window` status words per round trip: the words j, j-1, .. j-W+1 of the line are read in
        one vector of atomic reads; when every word up to the nearest running prefix (flag 2) in the window is
        published, their values are added and the walk ends at that prefix or moves a whole window back; else the
        same window is read again. A middle-dim scan does this per lane (a (W, BI) window)."""
        rel, W, val = RELAXED, self.window, word_value("w")
        lane, vec, shape = self.walk_parts()
        k(f"ct.atomic_xchg({status}, (pid, {i}{lane}), {flag_word(first, 'agg')}, {rel})")
        k(f"prefix = ct.full({shape}, 0.0, dtype=ct.float32)")
        k(vec(f"j = ct.full({shape}, 0, dtype=ct.int32) + ({i} - 1)", f"j = {i} - 1"))
        k(f"step = ct.arange({W}, dtype=ct.int32){vec('[:, None]', '')}")
        axis = vec(", axis=0", "")
        with k.block(f"while {vec('ct.max(j)', 'j')} >= 0:"):
            k(f"idx = {vec('j[None, :]', 'j')} - step")
            k("live = idx >= 0")
            k(f"w = ct.atomic_add({status}, (pid, ct.maximum(idx, 0){vec(', lane[None, :]', '')}), 0, {rel})")
            k("flag = w >> 32")
            k(f"stop = ct.min(ct.where(live & (flag == 2), step, {W}){axis})")
            k(f"take = live & (step <= {vec('stop[None, :]', 'stop')})")
            done = f"ct.max(ct.where(take & (flag == 0), 1, 0){axis}) == 0"
            k(f"done = {vec(f'({done}) & (j >= 0)', done)}")
            k(f"prefix = prefix + ct.where(done, ct.sum(ct.where(take, {val}, 0.0){axis}), 0.0)")
            k(f"j = ct.where(done, ct.where(stop < {W}, -1, j - {W}), j)")
        return self.publish_prefix(k, status, i)

    def emit(self, spec: KernelSpec, dims, shape) -> KernelSource:
        gen, L = self.gen, self.L
        kern, k = gen.kernel, gen.kernel.body
        nch = L.nch
        if MEMORY_TUNING["scan_lookback_occupancy"]:
            kern.options["occupancy"] = int(MEMORY_TUNING["scan_lookback_occupancy"])
        counter = kern.tensor("scan_ticket", "scan_ticket")
        status = kern.tensor("scan_status", "scan_status")
        self.emit_coords(k, counter)
        if MEMORY_TUNING["scan_lookback_store_tma"] is not None:
            L.store_tma = bool(MEMORY_TUNING["scan_lookback_store_tma"])
        if MEMORY_TUNING["scan_lookback_load_tma"] is not None:
            L.chunk_tma = bool(MEMORY_TUNING["scan_lookback_load_tma"])
        t, env, ctx = gen.load_tile("c")
        early = bool(MEMORY_TUNING["scan_lookback_early_total"])
        split = None if early else split_levels(L)  # (rows only: split_levels is None for a middle dim)
        # chunk totals (the last chunk's padding lanes count here, but no later chunk reads its total)
        if split:  # rows: y and the total from the split scan (scan_split_width)
            _, total = emit_split_cumsum(k, t, L.BR, *split)
            k(f"agg = {total}")
        else:
            if not early:
                k(f"y = ct.cumsum({t}, axis={L.axis})")
            k(f"agg = ct.reshape(ct.sum({t}, axis=1), ({L.BI},))" if self.col else f"agg = ct.sum({t})")
        prefix = self.emit_look_back(k, status)
        if early:  # the total published before the chunk's own scan
            k(f"y = ct.cumsum({t}, axis={L.axis})")
        k(f"y = y + {prefix}")
        gen.finish_chunk(env, ctx, "c", ["y"])
        dev = f"{gen.device}.device"
        lines = L.O * (cdiv(L.I, L.BI) if self.col else 1)
        words = f"({L.O}, {nch}, {cdiv(L.I, L.BI) * L.BI})" if self.col else f"({L.O}, {nch})"
        extra = status_lines(dev, words, L.O * nch * (cdiv(L.I, L.BI) * L.BI if self.col else 1))
        doc = (f"{', '.join(spec.operations)}: cumsum along dim {dims} of {shape} as {L.kind} {L.view_shape}, tile "
               f"{L.tile}, {nch} chunks per scan line in one pass: a block per chunk in ticket order, prefixes by "
               + ("the sum of every earlier chunk's published total" if self.read_all else "decoupled look-back")
               + (f" reading {self.window} words per round trip" if self.window > 1 and not self.read_all else "")
               + (", tickets chunk-major across scan lines" if self.chunk_major else "")
               + (split_note(split) if split else ""))
        return gen.finish(doc, grid=(lines * nch,), extra_lines=extra)
