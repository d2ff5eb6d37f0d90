"""Folding a convolution's width taps into its input channels (TILES["conv_fold_w"]).

A forward conv with few input channels per group wastes most of each K step: the channel slice is padded to 16
(the mma's K for 16-bit operands), so ResNet's 7x7/2 stem with 3 input channels runs 49 K steps of which 3/16 is
data. Folding rewrites it as the equivalent conv with kernel (KD, KH, 1) over KW * Cig channels:

    xf[n, j*Cig + ci, d, h, wo] = x[n, ci, d, h, wo*SW + j*DW - PW]    (0 outside)
    wf[co, j*Cig + ci, kd, kh, 0] = w[co, ci, kd, kh, j]

with unit stride, no padding and no dilation along the width. The folded input is never materialised as such:
the copy kernel that fills the padded channels-last buffer (conv_input.PaddedInput) reads x at the unfolded
positions, so the buffer holds xf directly (channels past KW * Cig masked to zero). The stem then runs 7 K steps
of 32 channels (21 of them data) instead of 49 of 16. The folded weights are
zero-padded to 16-byte rows (24 channels) so that their tiles load by TMA too."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .gemm_common import TILES, cdiv

if TYPE_CHECKING:
    from .conv import Conv


@dataclass(frozen=True)
class Fold:
    kw: int  # width taps folded into the channel dim
    cig: int  # real input channels per group
    sw: int
    pw: int
    dw: int


def fold_plan(cv: Conv) -> tuple[Conv, Fold] | None:
    """The folded conv and how to unfold its input, or None when folding does not apply or would not save K steps."""
    KW, cig = cv.k[2], cv.Cig
    if not TILES["conv_fold_w"] or cv.transposed or cv.depthwise or KW == 1 or cig >= 16:
        return None
    if cdiv(KW * cig, 16) >= KW:  # no fewer K steps per (kd, kh) tap
        return None
    folded = replace(cv, C=cv.G * KW * cig, insp=[cv.insp[0], cv.insp[1], cv.outsp[2]], k=[cv.k[0], cv.k[1], 1],
                     s=[cv.s[0], cv.s[1], 1], p=[cv.p[0], cv.p[1], 0], d=[cv.d[0], cv.d[1], 1])
    return folded, Fold(KW, cig, cv.s[2], cv.p[2], cv.d[2])


def folded_weight_lines(cv: Conv, fold: Fold, w: str, out: str, align: int) -> list[str]:
    """(G*Cog, Cig, [KD, KH,] KW) -> (G, Cog, KD*KH, KW*Cig), channel j*Cig + ci, zero-padded to a multiple of
    `align` channels: 16-byte rows, so the weight tiles load by TMA (21 fp16 channels would be per-element loads)."""
    taps, k = cv.k[0] * cv.k[1], fold.kw * fold.cig
    lines = [f"    {out} = {w}.reshape({cv.G}, {cv.Cog}, {fold.cig}, {taps}, {fold.kw}).permute(0, 1, 3, 4, 2)"
             f".reshape({cv.G}, {cv.Cog}, {taps}, {k})"]
    if k % align:
        lines.append(f"    {out} = torch.nn.functional.pad({out}, (0, {cdiv(k, align) * align - k}))")
    return lines
