"""Channel-major tiling for gathers whose source position depends on the output pixel but not its channel:
F.grid_sample of an (N, C, H, W) input. The generic layout (gather.tiled: rows = N*C*Ho, columns = Wo) re-reads
the grid and recomputes the sampling coordinates and bilinear weights once per channel; here a block owns one
(n, oy) output row of BL pixels for BR channels, reads that row of the grid once, computes the coordinates and
weights as (1, BL) tiles and gathers the (BR, BL) source values with them, then stores the (1, BR, 1, BL) tile of
the 4-d output. Used without an epilogue and with a single output (the generic layout handles the rest).
"""

from __future__ import annotations

from ..specs import KernelSpec, OpRecord
from .base import pow2_at_least
from .indexing import MEMORY_TUNING, input_args, one_kernel_module, out_param

I = "    "
OPS = ("grid_sampler", "grid_sampler_2d")


def applies(spec: KernelSpec, rec: OpRecord, epilogue: list[OpRecord]) -> bool:
    return rec.op in OPS and not epilogue and len(spec.outputs) == 1 and len(rec.output) == 4


def generate(spec: KernelSpec, rec: OpRecord, ctx_type, fn):
    n_, c_, h_, w_ = (int(d) for d in rec.output)
    BL = pow2_at_least(w_, 1, 128)
    BR = pow2_at_least(c_, 1, max(1, int(MEMORY_TUNING["gather_tile_elems"]) // BL))
    nwb, ncb = -(-w_ // BL), -(-c_ // BR)
    name = f"{spec.id}_kernel"
    out = out_param(spec.outputs[0])
    lines = ["@ct.kernel",
             f"def {name}({', '.join(input_args(spec) + [out])}, BR: ct.Constant[int], BL: ct.Constant[int]):",
             f"{I}bid = ct.bid(0)",
             f"{I}pid_l = bid % {nwb}",
             f"{I}ph = (bid // {nwb}) % {h_}",
             f"{I}pcb = (bid // {nwb * h_}) % {ncb}",
             f"{I}pn = bid // {nwb * h_ * ncb}",
             f"{I}ch = (pcb * BR + ct.arange(BR, dtype=ct.int32))[:, None]",
             f"{I}cc = (pid_l * BL + ct.arange(BL, dtype=ct.int32))[None, :]"]
    ctx = ctx_type(spec, rec, list(rec.output), ["pn", "ch", "ph", "cc"])
    value = fn(ctx)
    lines += ctx.lines
    lines.append(f"{I}val = ct.broadcast_to({value}, (BR, BL))")
    lines.append(f"{I}ct.store({out}, index=(pn, pcb, ph, pid_l), "
                 f"tile=ct.reshape(val, (1, BR, 1, BL)).astype({out}.dtype))")
    note = (f"{rec.op}: channel-major tiles of {BR} channels x {BL} pixels of one output row; the grid row, "
            "coordinates and weights computed once per block")
    return one_kernel_module(spec, lines, n_ * ncb * h_ * nwb, [BR, BL], note)
