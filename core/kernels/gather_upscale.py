"""Whole-number upscaling of (N, C, H, W) images computed at the input's resolution: F.interpolate / nn.Upsample
in nearest mode by power-of-two factors (fh, fw), and bilinear by exactly 2 with align_corners=False (a U-Net or
FPN decoder's x2). The generic gather layout (gather.tiled) maps every output pixel to its source coordinates in
float32 and gathers 1 (nearest) or 4 (bilinear) source values per output pixel; here a block owns BH x BW input
pixels of one (n, c) plane and writes their (fh*BH, fw*BW) output tile with one dense store:

- nearest: out[fh*i + a, fw*j + b] = x[i, j]: one dense load, the tile broadcast to (BH, fh, BW, fw) and reshaped;
- bilinear x2: with the source index (o + 0.5) / 2 - 0.5 clamped at 0, out[2j] = 0.25 x[j-1] + 0.75 x[j] and
  out[2j+1] = 0.75 x[j] + 0.25 x[j+1] per dim (neighbours clamped into the input; at the edges PyTorch's weights
  put 1 on the edge pixel, here split 0.25 + 0.75 over the same pixel). Horizontal blends of the rows above, at and
  below, then vertical blends, in PyTorch's order (h0 * (w0 * x00 + w1 * x01) + h1 * (...)), float32; 9 gathers of
  BH x BW source tiles per 4 BH BW outputs instead of 16, no per-pixel coordinate arithmetic.

Used for a single output and no epilogue (the generic layout handles the rest), when MEMORY_TUNING's
"upscale_whole" is on; "upscale_tile_elems" output elements per block.
"""

from __future__ import annotations

from ..specs import KernelSpec, OpRecord
from .base import pow2_at_least
from .expr import bind_args
from .indexing import MEMORY_TUNING, array_param, input_args, input_for, one_kernel_module, out_param

I = "    "
OPS = ("upsample_nearest2d", "upsample_bilinear2d")


def _source(spec: KernelSpec, rec: OpRecord, args: dict):
    return input_for(spec, args.get("input" if "input" in args else "self"), rec.target)


def factors(spec: KernelSpec, rec: OpRecord, epilogue: list[OpRecord]) -> tuple[int, int] | None:
    """(fh, fw) when `rec` is upscaled here, else None."""
    if rec.op not in OPS or epilogue or len(spec.outputs) != 1 or len(rec.output) != 4:
        return None
    if not MEMORY_TUNING["upscale_whole"]:
        return None
    args = bind_args(rec)
    x = _source(spec, rec, args)
    if len(x.shape) != 4 or list(x.shape[:2]) != list(rec.output[:2]) \
            or list(spec.outputs[0].shape) != list(rec.output):
        return None
    scales = args.get("scale_factors") or [args.get("scales_h"), args.get("scales_w")]
    out = []
    for i in range(2):
        n_in, n_out = int(x.shape[2 + i]), int(rec.output[2 + i])
        if n_in < 1 or n_out % n_in:
            return None
        f = n_out // n_in
        sc = scales[i] if scales and len(scales) == 2 else None
        if sc is not None and float(sc) != float(f):  # 1 / scale is what PyTorch maps with: exact for 2^k only
            return None
        out.append(f)
    if rec.op == "upsample_nearest2d":
        return tuple(out) if all(f in (1, 2, 4, 8) for f in out) and out != [1, 1] else None
    if args.get("align_corners") or out != [2, 2]:
        return None
    return 2, 2


def generate(spec: KernelSpec, rec: OpRecord, fh: int, fw: int):
    x = _source(spec, rec, bind_args(rec))
    n_, c_, h_, w_ = (int(d) for d in x.shape)
    per_block = max(fh * fw, int(MEMORY_TUNING["upscale_tile_elems"]))
    BW = pow2_at_least(w_, 1, max(1, min(128 // fw, per_block // (fh * fw))))
    BH = pow2_at_least(h_, 1, max(1, per_block // (fh * fw * BW)))
    nwb, nhb = -(-w_ // BW), -(-h_ // BH)
    name = f"{spec.id}_kernel"
    src, out = array_param(x), out_param(spec.outputs[0])
    lines = ["@ct.kernel",
             f"def {name}({', '.join(input_args(spec) + [out])}, BH: ct.Constant[int], BW: ct.Constant[int]):",
             f"{I}bid = ct.bid(0)",
             f"{I}pj = bid % {nwb}",
             f"{I}pi = (bid // {nwb}) % {nhb}",
             f"{I}pc = (bid // {nwb * nhb}) % {c_}",
             f"{I}pn = bid // {nwb * nhb * c_}"]
    if rec.op == "upsample_nearest2d":
        lines += [f"{I}v = ct.load({src}, index=(pn, pc, pi, pj), shape=(1, 1, BH, BW), "
                  "padding_mode=ct.PaddingMode.ZERO)",
                  f"{I}v = ct.broadcast_to(ct.reshape(v, (BH, 1, BW, 1)), (BH, {fh}, BW, {fw}))",
                  f"{I}ct.store({out}, index=(pn, pc, pi, pj), "
                  f"tile=ct.reshape(v, (1, 1, {fh} * BH, {fw} * BW)).astype({out}.dtype))"]
        note = f"upsample_nearest2d x({fh}, {fw}): {BH} x {BW} input pixels per block, one dense load and store"
    else:
        lines += [f"{I}r = ct.minimum(pi * BH + ct.arange(BH, dtype=ct.int32), {h_ - 1})[:, None]",
                  f"{I}q = ct.minimum(pj * BW + ct.arange(BW, dtype=ct.int32), {w_ - 1})[None, :]",
                  f"{I}ql = ct.maximum(q - 1, 0)",
                  f"{I}qr = ct.minimum(q + 1, {w_ - 1})"]
        rows = {"u": "ct.maximum(r - 1, 0)", "c": "r", "d": f"ct.minimum(r + 1, {h_ - 1})"}
        for key, rexpr in rows.items():
            lines.append(f"{I}r{key} = {rexpr}")
            for side, col in (("l", "ql"), ("c", "q"), ("r", "qr")):
                lines.append(f"{I}x{key}{side} = ct.gather({src}, (pn, pc, r{key}, {col})).astype(ct.float32)")
            lines += [f"{I}e{key} = 0.25 * x{key}l + 0.75 * x{key}c",
                      f"{I}o{key} = 0.75 * x{key}c + 0.25 * x{key}r",
                      f"{I}h{key} = ct.reshape(ct.cat((ct.expand_dims(e{key}, 2), ct.expand_dims(o{key}, 2)), 2), "
                      "(BH, 2 * BW))"]
        lines += [f"{I}ev = 0.25 * hu + 0.75 * hc",
                  f"{I}od = 0.75 * hc + 0.25 * hd",
                  f"{I}v = ct.cat((ct.expand_dims(ev, 1), ct.expand_dims(od, 1)), 1)",
                  f"{I}ct.store({out}, index=(pn, pc, pi, pj), "
                  f"tile=ct.reshape(v, (1, 1, 2 * BH, 2 * BW)).astype({out}.dtype))"]
        note = (f"upsample_bilinear2d x2: {BH} x {BW} input pixels per block, 9 gathered source tiles blended "
                "at input resolution, one dense store")
    return one_kernel_module(spec, lines, n_ * c_ * nhb * nwb, [BH, BW], note)
