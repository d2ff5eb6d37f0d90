"""Convolution kernels: conv1d/2d/3d and conv_transpose1d/2d/3d (also aten.convolution), any stride, padding
(including 'same'/'valid'), dilation, groups and output_padding, with the conv bias, an eval batch norm folded
into the weights at construction (R6) and the fused elementwise epilogue.

Every case runs in a 3-D frame (1-D/2-D convolutions get size-1 leading spatial dims) as an implicit GEMM on tensor
cores: a block owns BCO output channels x a (BOH, BOW) box of output positions of one image (and depth plane) and
accumulates out[co, p] += W[co, (tap, ci)] @ X[(tap, ci), p] in float32 with `ct.mma` (float32 operands in split
TF32, gemm_common.mma_lines), looping over the kernel taps and BK-channel slices of the input. For a fixed tap the
input positions a box of outputs reads form a box too, so the X tile is one rectangular load at an arbitrary element
offset (a tiled view with unit traversal steps), never a gather and never an im2col buffer:

- layout: a small copy kernel first rearranges the input into a zero-padded, phase-split, channels-last buffer
  XP[n*G + g, phase, q, ci] = x[n, g*Cig + ci, q*stride + r - pad]  (phase = r per dim; channels padded to 16
  bytes), so that the positions read by one tap are a box whose offsets are in the outer (spatial) dims while the
  contiguous channel dim is tiled by BK: the compiler lowers that to TMA box loads (a channels-first box at an
  unaligned offset of the contiguous dim falls back to per-element loads, ~4x slower end to end). Only a pointwise
  conv (1x1, unit stride, no padding) reads its channels-first input in place, with tile-aligned loads.
- padding: the same buffer carries the zeros (so no masks in the hot loop).
- transposed convolution: outputs are split by phase o = q*stride + r; for phase r only the taps with
  (r + pad - k*dilation) divisible by the stride contribute, each reading the box starting at
  q + (r + pad - k*dilation)/stride of the (left-padded) input. The tile is stored with `ct.scatter` to the
  strided output positions (a plain store when the stride is 1).
- groups: weights are rearranged once (prepare_) to (G, Cog, taps, Cig); blocks of one group read that group's
  channels only (the buffer's channel dim is per group, so slices are zero-padded at the group's end).
- depthwise (groups == C_in == C_out): a direct kernel (no tensor cores; memory-bound), BC channels x a box of
  positions per block, one weight column per tap.

Tile sizes (output channels, output positions, input channels per K step) come from gemm_common.TILES.

Epilogue: conv bias (or the folded batch norm shift) and the fused elementwise ops on the float32 tile; side
inputs are passed as (N, [G,] C, D, H, W) views and loaded per tile (gathered at the output coordinates in the
strided transposed case). Outputs are stored in their own dtype.

This module parses the convolution op (`parse_conv` -> `Conv`), picks the path and is the family's `generate`
entry. The parts: conv_builder.py (what the paths share: plan, block coordinates, taps, assembly), conv_gemm.py
(the implicit GEMM, forward and transposed), conv_depthwise.py (the direct depthwise kernel), conv_input.py (the
padded input buffer with its copy kernel, and the weights' prepare_), conv_epilogue.py (bias, fused ops, side
inputs, stores), conv_index.py (index expression text and the box choice).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..specs import KernelSpec, OpRecord, TensorSpec
from .base import KernelSource, Unsupported
from .conv_depthwise import DepthwiseBuilder
from .conv_gemm import GemmBuilder
from .conv_index import box as _box  # noqa: F401  (tests pick box tiles through this module)
from .conv_index import frame
from .gemm_common import elementwise_ops, parse_batch_norm, prod, tensor_input

ANCHORS = {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution",
           "_convolution"}


def _ints(v, nd: int, default: int | None, what: str) -> list[int]:
    if v is None:
        if default is None:
            raise Unsupported(f"{what}: missing")
        return [default] * nd
    if isinstance(v, bool):
        raise Unsupported(f"{what}: {v!r}")
    if isinstance(v, int):
        return [v] * nd
    if isinstance(v, (list, tuple)) and all(isinstance(i, int) for i in v):
        v = list(v)
        if len(v) == 1:
            return v * nd
        if len(v) == nd:
            return v
    raise Unsupported(f"{what}: {v!r}")


@dataclass
class Conv:
    x: TensorSpec
    w: TensorSpec
    bias: str | None  # graph value
    nd: int
    transposed: bool
    N: int
    C: int
    Co: int
    G: int
    insp: list[int]  # 3-D frame
    outsp: list[int]
    k: list[int]
    s: list[int]
    p: list[int]  # left padding (conv) / padding (transposed)
    d: list[int]

    @property
    def Cig(self) -> int:
        return self.C // self.G

    @property
    def Cog(self) -> int:
        return self.Co // self.G

    @property
    def taps(self) -> int:
        return prod(self.k)

    @property
    def depthwise(self) -> bool:
        return not self.transposed and self.G > 1 and self.Cig == 1 and self.Cog == 1

    @property
    def in_place(self) -> bool:
        """A forward conv reading its input directly (no padding, unit stride)."""
        return not self.transposed and all(v == 0 for v in self.p) and all(v == 1 for v in self.s)


def parse_conv(spec: KernelSpec, rec: OpRecord) -> Conv:
    from .expr import bind_args

    a = bind_args(rec)
    op = rec.op
    what = rec.target
    x = tensor_input(spec, a.get("input"), f"{what} input")
    w = tensor_input(spec, a.get("weight"), f"{what} weight")
    bias = a.get("bias")
    bias = tensor_input(spec, bias, f"{what} bias").graph_value if bias is not None else None
    nd = len(w.shape) - 2
    if nd not in (1, 2, 3) or len(x.shape) != nd + 2:
        raise Unsupported(f"{what}: input of rank {len(x.shape)} (batched 1-D/2-D/3-D inputs only)")
    if op in ("convolution", "_convolution"):
        transposed = bool(a.get("transposed"))
    else:
        transposed = op.startswith("conv_transpose")
    groups = a.get("groups", 1)
    if not isinstance(groups, int) or groups < 1:
        raise Unsupported(f"{what}: groups={groups!r}")
    s = _ints(a.get("stride"), nd, 1, f"{what} stride")
    d = _ints(a.get("dilation"), nd, 1, f"{what} dilation")
    k = list(w.shape[2:])
    pad = a.get("padding")
    if isinstance(pad, str):
        if transposed:
            raise Unsupported(f"{what}: padding={pad!r}")
        if pad == "valid":
            p = [0] * nd
        elif pad == "same":
            p = [(di * (ki - 1)) // 2 for di, ki in zip(d, k)]
        else:
            raise Unsupported(f"{what}: padding={pad!r}")
    else:
        p = _ints(pad, nd, 0, f"{what} padding")
    if any(v < 1 for v in s + d) or any(v < 0 for v in p):
        raise Unsupported(f"{what}: stride/dilation must be positive and padding non-negative")
    N, C = x.shape[0], x.shape[1]
    out = list(rec.output)
    if transposed:
        if w.shape[0] != C:
            raise Unsupported(f"{what}: weight {w.shape} for {C} input channels")
        Co = w.shape[1] * groups
    else:
        if w.shape[1] * groups != C:
            raise Unsupported(f"{what}: weight {w.shape} with groups={groups} for {C} input channels")
        Co = w.shape[0]
    if C % groups or Co % groups:
        raise Unsupported(f"{what}: channels not divisible by groups={groups}")
    if len(out) != nd + 2 or out[0] != N or out[1] != Co:
        raise Unsupported(f"{what}: unexpected output shape {out}")
    return Conv(x, w, bias, nd, transposed, N, C, Co, groups, frame(x.shape[2:], 1), frame(out[2:], 1),
                frame(k, 1), frame(s, 1), frame(p, 0), frame(d, 1))


def generate(spec: KernelSpec) -> KernelSource:
    idx = [i for i, r in enumerate(spec.ops) if r.category == "convolution"]
    if len(idx) != 1:
        raise Unsupported(f"expected one convolution in the kernel, found {len(idx)}")
    anchor = spec.ops[idx[0]]
    if anchor.op not in ANCHORS:
        raise Unsupported(f"{anchor.target}: no convolution generator for this op")
    rest = spec.ops[:idx[0]] + spec.ops[idx[0] + 1:]
    bn = None
    if idx[0] + 1 < len(spec.ops) and spec.ops[idx[0] + 1].category == "normalization":
        bn = parse_batch_norm(spec.ops[idx[0] + 1], anchor.node)
        rest = [r for r in rest if r.node != bn.node]
    epilogue = elementwise_ops(rest, anchor.op)
    conv = parse_conv(spec, anchor)
    builder = DepthwiseBuilder if conv.depthwise else GemmBuilder
    return builder(spec, anchor, conv, bn, epilogue).build()
