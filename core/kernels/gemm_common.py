"""Helpers shared by the tensor-core generators (matmul.py, conv.py): the launch/prepare signature, side-input
views and tile loads for fused epilogues, eval batch-norm folding, tile-size rules.

A kernel tiles a *view* of its output: a tuple of view dims, each the flattened product of a group of output dims
(a matmul's (batch..., M, N), a convolution's (N, C_out, D, H, W)). Side inputs of the epilogue (bias, residual,
per-channel scale, mask) are passed to the kernel reshaped to the same view, with size-1 dims where they
broadcast, and loaded for the current output tile with `ct.load` (tile size 1 / index 0 on broadcast dims), then
broadcast to the tile shape. A side input whose broadcast pattern cannot be expressed in the view (a group of
output dims where the input is partly 1, partly full) is expanded first, which costs one copy on the host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..specs import KernelSpec, OpRecord, TensorSpec
from .base import Unsupported

ZERO = "ct.PaddingMode.ZERO"
LOW_PRECISION = ("float16", "bfloat16")
CT_DTYPES = {"float32": "ct.float32", "float16": "ct.float16", "bfloat16": "ct.bfloat16"}


# ---------------------------------------------------------------------------------------------------------------
# tile configuration: the one table the matmul/conv generators read their tile choices from. bench/variants_gemm.py
# times alternatives by updating entries of TILES before generating; change the defaults here after measuring.

TILES: dict[str, Any] = {
    # matmul, fp16/bf16 operands: (BM, BN, BK) for large problems; float32 operands (full-precision mma: bigger
    # tiles spill and take minutes to compile)
    "mm_low": (128, 128, 64),
    # fp16/bf16 GEMMs with more than one K step and at least "mm_large_min_elems" outputs per matrix: 128x256x64
    # tiles (cuBLAS's Hopper shape) on 8 worker warps at one block per SM (at the compiler's warp count this tile
    # spills 1808 bytes per thread). H200, session 9, same run, device time (bench/gpu_session.sh prepared; cuBLAS
    # 1.370 / 1.436 / 0.184 ms): mm 8192^3 bf16 1.440 -> 1.426 ms, linear+gelu 8192^3 bf16 1.581 -> 1.440 (0.91 ->
    # 1.00 of cuBLAS); mm 4096^3 fp16 0.193 -> 0.196 (so 4096^2 = 2^24 outputs keep 128x128); 256x128x64 lost
    # everywhere (linear+gelu 2.374)
    "mm_large": (128, 256, 64),
    "mm_large_min_elems": 1 << 25,
    # float32 operands (split TF32 below). H200, session 22, bench/variants_gemm.py --only fp32, one run, device
    # time (cuBLAS SGEMM without TF32 in brackets): mm 4096^3 64x64x32 2.985 ms, 128x64x32 2.422, 64x128x32 2.635,
    # 128x128x32 3.956, 64x64x64 4.884 (2.677); linear+gelu 2048x1024->4096 64x64x32 0.279, 128x64x32 0.271,
    # 128x128x32 0.296 (eager 0.369). The FFMA mma before: 35.966 and 4.292 ms
    "mm_f32": (128, 64, 32),
    # float32 operands (matmul, convolution): an f32 x f32 ct.mma is not a tensor-core op on sm_90 (tileiras lowers
    # it to scalar FFMA), so they multiply in split TF32 ("3xTF32", mma_lines below): x = x_hi + x_lo, x_hi =
    # tf32(x), x_lo = tf32(x - x_hi), a @ b ~ a_hi @ b_lo + a_lo @ b_hi + a_hi @ b_hi, float32 accumulation. The
    # dropped a_lo @ b_lo is below 2^-22 relative: float32-level results (PyTorch's default float32 matmul does not
    # use TF32 either). False: plain float32 mma (FFMA)
    "f32_split_tf32": True,
    # ... and each K step's three mmas summed into a fresh accumulator that is then added to the running one (an
    # IEEE float32 add per step), for K loops whose accumulator shape the generator passes: the split's error grows
    # with K (H200, session 22: relative 2.6e-6 at K = 384, 2.9e-5 at 4096, plain float32 ~2e-7), as if the
    # tensor cores' in-mma accumulation were truncating. H200, session 23, `bench/variants_gemm.py --only fp32
    # --match promote --reps 5`, same run, ms and relative error vs float64, without -> with: mm 4096^3 2.424 (2.9e-5)
    # -> 1.969 (2.4e-7; cuBLAS SGEMM 2.687), linear+gelu 2048x1024->4096 0.269 (7.1e-6) -> 0.223 (1.7e-7), conv2d
    # 3x3 32x64x56x56 0.202 (3.9e-6) -> 0.236 (1.5e-7; cuDNN 0.260): float32-level accuracy, on by default
    "f32_split_promote": True,
    "mm_group_m": 8,  # tile rows per group of the swizzled (L2-friendly) block order
    # K no larger than this runs in one K step (BK = K rounded up to a power of two): batched small-K GEMMs
    # (attention-like bmm, K = 64/128) are bound by writing the output, not by the loop
    "mm_one_step_k": 128,
    # ct.kernel occupancy hint (CTAs per SM; None = compiler's choice) for the large-K and the one-step case: two
    # resident CTAs let one block's output stores overlap the next block's loads
    "mm_occupancy": 2,  # H200: mm 4096^3 fp16 0.232 -> 0.213 ms, linear+gelu 8192^3 bf16 1.781 -> 1.749 ms
    "mm_occupancy_one_step": 2,
    # ... and for fp16/bf16 GEMMs with a K loop whose grid is at most one block per SM (None: "mm_occupancy"). H200,
    # session 21, linear 4096x2048->512 bf16 (a Llama k_proj: 128 blocks of 128x128x64), same run, device time
    # (cuBLAS 0.016 ms): occupancy 2 0.020 ms, 1 0.016; 64x128 tiles at 2 (256 blocks) 0.018
    "mm_occupancy_one_wave": 1,
    # N tiles per block of a one-K-step GEMM (matmul.n_tiles_per_block): A's tile loaded once, then per N tile
    # B's tile, the mma, the epilogue and the store. H200, bmm 64x1024x128x1024 bf16, same run, device time
    # (session 7; cuBLAS 0.052 ms): 1 tile 0.079 ms (0.66x), 2 0.059, 4 0.055 (0.94x), 8 0.057; 4 at occupancy
    # 1 / 3 0.077 / 0.078
    "mm_one_step_n_tiles": 4,
    "mm_num_ctas": None,  # CGA size hint (None = compiler's choice)
    # @ct.kernel(num_worker_warps=...) of the GEMMs (None: the compiler's; tileiras 13.4 takes 4 or 8): warps of
    # the warp-specialized kernel's compute warp groups, i.e. how many threads share the accumulator tile
    "mm_worker_warps": 8,
    "mm_occupancy_worker_warps": 1,  # the occupancy hint of GEMMs on mm_worker_warps (a 128x256 block fills an SM)
    "mm_worker_warps_min_elems": 128 * 256,  # ... for fp16/bf16 tiles with at least this many (BM x BN) elements
    # allow_tma on the output store (None = compiler's choice: staged through shared memory, TMA store)
    "mm_store_tma": None,
    # a bias broadcast along M or N starts the accumulator (True) instead of being added after the K loop (False;
    # its broadcast then costs 8.4 KB of shared memory per 128x128 block). H200, linear+gelu 8192^3 bf16,
    # bench/variants_gemm.py --only linear, same-run pairs (after the loop -> in the accumulator): session 4, two
    # runs, before the folded gelu: 1.625 -> 1.705, 1.680 -> 1.770 ms; sessions 5 and 6, current epilogue:
    # 1.685 -> 1.637, 1.680 -> 1.620 ms (device time). The two latest runs decide.
    "mm_bias_in_acc": True,
    # persistent GEMM: None, or blocks per SM of a grid that loops over the output tiles (unbatched GEMMs with more
    # tiles than that grid), meant to let a block's epilogue overlap its next tile's loads. Off: a plain
    # `for pid in range(ct.bid(0), tiles, ct.num_blocks(0))` loop is far slower on the H200 (same run, mm 8192^3
    # bf16: 1.613 ms default, 4.237 ms at 1 block/SM, 5.428 ms at 2; linear+gelu 1.680 / 3.964 / 5.451 ms)
    "mm_persistent": None,
    # ... and for GEMMs on the "mm_large" tiles (128x256 on 8 worker warps, one block per SM): H200, session 10,
    # same run, device time: linear+gelu 8192^3 bf16 1.468 -> 1.432 ms (eager 1.457), mm 8192^3 bf16 1.459 ->
    # 1.427 (cuBLAS 1.395); clusters of 2 instead lost (mm 1.456 -> 1.620)
    "mm_large_persistent": 1,
    # convolution as an implicit GEMM (fp16/bf16; float32 halves every entry): output positions per block, output
    # channels per block, input channels per K step
    "conv_positions": 128,
    "conv_bco": 128,
    "conv_bk": 64,
    # forward convs with few input channels per group (< 16, so a BK=16 slice is mostly zero padding) and a kernel
    # wider than 1 fold the kernel's width taps into the channel dim (conv_fold.py): K = KW * Cig per (kd, kh) tap;
    # output positions per block of a folded conv. H200, ResNet stem (conv2d 7x7/2 3->64 + bn + relu,
    # 64x3x224x224 fp16; cuDNN 0.521 ms), same run: unfolded 1.491 ms, folded 0.364, folded with 256 positions
    # 0.314, folded with occupancy 2 0.385
    "conv_fold_w": True,
    "conv_fold_positions": 256,
    "conv_occupancy": None,  # H200: occupancy 2 was -6% on 3x3 and +3% on 1x1; the compiler's choice stays
    # flash attention (fp16/bf16): (BM queries, BN keys) per padded head dim bound, and the occupancy hint
    # H200, causal sdpa 8x16x2048x2048x64 fp16: 0.311 -> 0.227 ms for 128 queries x 64 keys (session 3); same
    # run, device time (session 7; flash 0.190 ms): 128x64 0.213 ms, 64x128 0.199 (0.95x), 128x128 0.278, 64x64
    # 0.219
    # session 19, same run, device time (bench/variants_gemm.py; flash 0.192 ms): 64x128 at occupancy 2 0.200 ms,
    # 64x64 at 2 0.220, 64x64 at 3 0.188; sdpa 32x12x384x384x64 fp16 (flash 0.045): 64x128 0.049, 64x64 at 3
    # 0.045, at 4 0.053; BERT-base 32x12x512x512x64 bf16 (flash 0.071): 0.079, 0.073, 0.084
    "attn_d64": (64, 64),
    "attn_d64_occupancy": 3,
    # ... except unmasked sequences over attn_long_keys keys (session 19, flash SDPA in brackets; one run per line):
    # sdpa 8x16x2048x2048x64 fp16 (0.308 ms) 64x128 at occupancy 2 0.314 ms, 64x64 at 3 0.325, at 4 0.319; 2x16x
    # 4096x4096x64 bf16 (0.299) 0.303, 0.327, 0.318; 16x16x1024x1024x64 fp16 (0.168) 0.179, 0.178, 0.172. Masked
    # ones keep 64x64: attention by hand GPT-2 8x12x1024x1024x64 bf16 with its tril buffer 0.126 ms, 64x128 0.173
    "attn_long_keys": 1024,
    "attn_d64_long": (64, 128, 2),
    # H200, sdpa 8x16x2048x2048x128 bf16, same run, device time (session 7; flash 0.422 ms): 128x64 0.537 ms
    # (spills 9 registers per thread), 128x64 at occupancy 1 0.688, 64x64 0.511, 64x128 0.463 (0.91x), 64x64
    # at occupancy 3 0.512
    # session 9, same run, device time (bench/gpu_session.sh prepared; flash 0.423 ms): 128x128 on 8 worker warps
    # at occupancy 1 (spill-free) 0.447 ms (0.95x), 64x128 0.458, 128x64 on 8 warps 0.523. Causal d64 fp16 (flash
    # 0.189): 128x128 on 8 warps 0.208, 64x128 0.198 (attn_d64 stayed 64x128 until session 19)
    "attn_d128": (64, 128),
    # ... 64x128 at attn_occupancy 2 (session 21) except unmasked sequences over attn_long_keys keys, which keep
    # session 9's 128x128 on 8 worker warps at occupancy 1. H200, session 21, one run, device time (bench/
    # variants_gemm.py --only D128; flash SDPA in brackets), 128x128 on 8 warps -> 64x128: sdpa 16x16x512x512x128
    # bf16 (0.067 ms) 0.088 -> 0.074, 4x16x1024 (0.061) 0.074 -> 0.067, 8x16x2048 (0.421) 0.444 -> 0.457 (so the
    # long unmasked rule); causal 16x16x512 (0.055) 0.073 -> 0.062, 4x16x1024 (0.050) 0.058 -> 0.051, 8x16x2048
    # (0.269) 0.302 -> 0.281; attention by hand with Hugging Face's additive causal buffer 4x16x1024 0.094 -> 0.087,
    # 2x32x2048 0.314 -> 0.297, unmasked by hand 4x16x1024 0.086 -> 0.080
    "attn_d128_long": (128, 128, 1),
    "attn_d256": (64, 32),
    "attn_occupancy": 2,  # head dims 65..128 and float32; larger head dims, and tiles on attn_worker_warps, use 1
    # fp16/bf16 attention over at most attn_short_keys keys: (BM, BN, occupancy) by padded head dim (<= 64, <= 128).
    # H200, session 19, device time (bench/variants_gemm.py, one run per case; PyTorch's flash SDPA in brackets):
    # sdpa ViT-B/16 64x12x197x197x64 fp16 (0.047 ms): 64x128 at occupancy 2 0.049 ms, 64x64 at 2 / 3 / 4 0.051 /
    # 0.043 / 0.039, 128x64 at 2 0.045; CLIP text 128x8x77x77x64 (0.023): 0.026, 64x64 at 4 0.020; causal
    # 64x12x256x256x64 (0.040): 0.054, 64x64 at 4 0.038; attention by hand at ViT size (k^T a view of k; eager
    # 0.287) 0.064 -> 0.050. Head dim 128, sdpa 32x16x256x256x128 bf16 (0.042): 128x128 on 8 warps 0.059, 64x64
    # 0.052, 64x128 at 2 0.051, 128x64 0.060; 32x16x197x197x128 fp16 (0.045): 0.055, 0.049, 0.046, 0.060
    "attn_short_keys": 256,
    "attn_short_d64": (64, 64, 4),
    "attn_short_d128": (64, 128, 2),
    # attention by hand (R8): a score side input (a mask buffer, an additive mask) whose last dim is the keys, with
    # 16-byte rows, and every dim either broadcast or full, loads as a (1 | BM, BN) tile per key step instead of a
    # gather of the (BM, BN) lanes (core/kernels/attention_manual.py)
    "attn_side_tile_loads": True,
    # num_worker_warps of fp16/bf16 attention tiles of at least attn_worker_warps_min_elems (BM x BN) scores
    "attn_worker_warps": 8,
    "attn_worker_warps_min_elems": 128 * 128,
    # num_worker_warps of the fp16/bf16 implicit-GEMM convolutions (not the folded ones) whose tile has at least
    # conv_worker_warps_min_elems (positions x output channels), with conv_bco_worker_warps output channels per
    # block. H200, session 9, device time (bench/variants_gemm.py, two runs): conv2d 3x3 32x256x56x56->256 bf16
    # (cuDNN 0.334 ms) 128 channels on the compiler's warps 0.241 / 0.246 ms, on 8 warps 0.250 / 0.254, 256
    # channels on 8 warps 0.232 / 0.236; conv2d 1x1+bn+relu 64x512x28x28 fp16 (cuDNN 0.235) 0.085 / 0.085, on 8
    # warps 0.076 / 0.077, 256 channels on 8 warps 0.068 (3.48x cuDNN)
    "conv_worker_warps": 8,
    "conv_worker_warps_min_elems": 128 * 128,
    "conv_bco_worker_warps": 256,
}


def kernel_decorator(occupancy: int | None, num_ctas: int | None = None, worker_warps: int | None = None) -> str:
    opts = [f"{k}={v}" for k, v in (("occupancy", occupancy), ("num_ctas", num_ctas),
                                    ("num_worker_warps", worker_warps)) if v]
    return f"@ct.kernel({', '.join(opts)})" if opts else "@ct.kernel"


def tf32_split(ind: str, x: str, src: str = "") -> list[str]:
    """{src} (default x, a float32 tile) = {x}_hi + {x}_lo in TF32."""
    src = src or x
    return [f"{ind}{x}_hi = {src}.astype(ct.tfloat32)",
            f"{ind}{x}_lo = ({src} - {x}_hi.astype(ct.float32)).astype(ct.tfloat32)"]


def split_mmas(ind: str, a: tuple[str, str], b: tuple[str, str], acc: str, init: str = "") -> list[str]:
    """acc (starting from `init`, default acc) += (a_hi + a_lo) @ (b_hi + b_lo) without the lo @ lo term: three
    TF32 mmas, the small terms first so they are not lost against the large one. a, b: (hi, lo) tile names."""
    (a_hi, a_lo), (b_hi, b_lo) = a, b
    return [f"{ind}{acc} = ct.mma({a_hi}, {b_lo}, {init or acc})", f"{ind}{acc} = ct.mma({a_lo}, {b_hi}, {acc})",
            f"{ind}{acc} = ct.mma({a_hi}, {b_hi}, {acc})"]


def mma_lines(ind: str, a: str, b: str, acc: str, cast: str = "", f32: bool = False, shape: str = "") -> list[str]:
    """`acc = a @ b + acc` (a, b tile variables, `cast` applied to both): one ct.mma, or, for float32 operands
    (`f32`) with TILES["f32_split_tf32"], the split-TF32 mmas over each one's hi/lo parts (split_mmas); with
    TILES["f32_split_promote"] and the accumulator's `shape` (a tuple expression), those three go to a fresh
    accumulator added to `acc` afterwards."""
    if not (f32 and TILES["f32_split_tf32"]):
        return [f"{ind}{acc} = ct.mma({a}{cast}, {b}{cast}, {acc})"]
    lines = []
    for x in (a, b):
        if cast:  # a mixed-dtype product: the operand as float32 first
            lines.append(f"{ind}{x}_f = {x}{cast}")
        lines += tf32_split(ind, x, f"{x}_f" if cast else x)
    halves = (f"{a}_hi", f"{a}_lo"), (f"{b}_hi", f"{b}_lo")
    if TILES["f32_split_promote"] and shape:
        return (lines + split_mmas(ind, *halves, "part", init=f"ct.zeros({shape}, dtype=ct.float32)")
                + [f"{ind}{acc} = {acc} + part"])
    return lines + split_mmas(ind, *halves, acc)


def score_lines(ind: str, f32: bool, suffix: str = "") -> list[str]:
    """The attention generators' `s = q @ kt` (then `suffix`, e.g. a scale), in split TF32 for float32 q/k."""
    if not (f32 and TILES["f32_split_tf32"]):
        return [f"{ind}s = ct.mma(q, kt, ct.zeros((BM, BN), dtype=ct.float32)){suffix}"]
    return ([f"{ind}s = ct.zeros((BM, BN), dtype=ct.float32)"] + mma_lines(ind, "q", "kt", "s", f32=True)
            + ([f"{ind}s = s{suffix}"] if suffix else []))


def pv_lines(ind: str, f32: bool) -> list[str]:
    """The attention generators' `acc = acc * alpha + p @ vt`, in split TF32 for a float32 v."""
    if not (f32 and TILES["f32_split_tf32"]):
        return [f"{ind}acc = ct.mma(p.astype(vt.dtype), vt, acc * alpha)"]
    return [f"{ind}acc = acc * alpha"] + mma_lines(ind, "p", "vt", "acc", f32=True, shape="(BM, DVP)")


def tup(items: Sequence[Any]) -> str:
    items = [str(i) for i in items]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def prod(xs: Sequence[int]) -> int:
    return int(math.prod(xs)) if xs else 1


def pow2_clamp(n: int, lo: int, hi: int) -> int:
    p = lo
    while p < n and p < hi:
        p *= 2
    return p


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def is_ref(v: Any) -> bool:
    return isinstance(v, dict) and "ref" in v


def check_float(spec: KernelSpec, tensors: Sequence[TensorSpec], what: str) -> None:
    for t in tensors:
        if t.dtype not in CT_DTYPES:
            raise Unsupported(f"{what}: {t.name} has dtype {t.dtype} (float32/float16/bfloat16 only)")


# ---------------------------------------------------------------------------------------------------------------
# signature: launch(activations..., scalars..., [prepared...] | parameters...)


@dataclass
class Signature:
    """Parameter names of launch_/prepare_ and how each spec input is reached from the launch wrapper."""

    spec: KernelSpec
    prepare: bool
    prepared: list[str] = field(default_factory=list)  # names prepare_ returns (launch's trailing params)
    host: dict[str, str] = field(default_factory=dict)  # graph value → launch-scope expression

    def __post_init__(self):
        for t in self.spec.inputs:
            self.host[t.graph_value] = t.name

    def launch_params(self) -> list[str]:
        if not self.prepare:
            return [t.name for t in self.spec.inputs]
        return [t.name for t in self.spec.inputs if t.role in ("activation", "scalar")] + self.prepared

    def prepare_params(self) -> list[str]:
        return [t.name for t in self.spec.inputs if t.role in ("parameter", "buffer")]

    def passthrough(self) -> list[str]:
        """Parameters prepare_ returns unchanged (so launch_ still receives them)."""
        params = set(self.prepare_params())
        return [n for n in self.prepared if n in params]

    def device(self) -> str:
        for t in self.spec.inputs:
            if t.role == "activation":
                return f"{t.name}.device"
        for t in self.spec.inputs:
            if t.role != "scalar":
                return f"{t.name}.device"
        raise Unsupported("a kernel with no tensor input")


def input_by_value(spec: KernelSpec) -> dict[str, TensorSpec]:
    return {t.graph_value: t for t in spec.inputs}


def tensor_input(spec: KernelSpec, v: Any, what: str) -> TensorSpec:
    if not is_ref(v):
        raise Unsupported(f"{what}: expected a tensor, got {v!r}")
    t = input_by_value(spec).get(v["ref"])
    if t is None or t.role == "scalar":
        raise Unsupported(f"{what}: operand {v['ref']} is not a tensor input of the kernel")
    return t


# ---------------------------------------------------------------------------------------------------------------
# side inputs


def side_view(shape: Sequence[int], out_shape: Sequence[int], perm: Sequence[int], groups: Sequence[Sequence[int]],
              what: str) -> tuple[str, list[int]]:
    """Host code suffix turning a side input of `shape` (broadcastable to `out_shape`) into the kernel's view.

    `perm` orders the output dims as the view reads them; `groups[i]` lists the (original) output dims flattened
    into view dim i. Returns (suffix such as ".reshape(1, 70)", the view shape).
    """
    rank = len(out_shape)
    shape = list(shape)
    if len(shape) > rank:
        raise Unsupported(f"{what}: shape {shape} has more dims than the output {list(out_shape)}")
    padded = [1] * (rank - len(shape)) + shape
    for s, o in zip(padded, out_shape):
        if s not in (1, o):
            raise Unsupported(f"{what}: shape {shape} does not broadcast to {list(out_shape)}")
    suffix = ""
    if padded != shape:
        suffix += f".reshape{tup(padded)}"
    if list(perm) != list(range(rank)):
        suffix += f".permute{tup(perm)}"
    # dims in view order; expand groups whose pattern is mixed
    expanded = list(padded)
    need_expand = False
    view = []
    for g in groups:
        sizes = [padded[d] for d in g]
        full = [out_shape[d] for d in g]
        if all(s == 1 for s in sizes):
            view.append(1)
        elif sizes == full:
            view.append(prod(full))
        else:
            need_expand = True
            for d in g:
                expanded[d] = out_shape[d]
            view.append(prod(full))
    if need_expand:
        suffix += f".expand{tup([expanded[d] for d in perm])}"
    permuted = [expanded[d] for d in perm]
    if permuted != view:
        if suffix == f".reshape{tup(padded)}":  # one reshape does both
            suffix = ""
        suffix += f".reshape{tup(view)}"
    return suffix, view


def load_side_lines(var: str, array: str, view_shape: Sequence[int], dims: Sequence[tuple[str, Any]],
                    full_tile: Sequence[Any], lines: list[str], indent: str, dtype: str = "ct.float32") -> str:
    """`var` = the side array's tile for the current output tile, broadcast to `full_tile` and cast to `dtype`.

    `dims` gives, per view dim, (block index expression, tile size) for dims the kernel tiles, or
    (coordinate expression, None) for dims a block owns one element of (batch, image, group). The loaded tile keeps
    the tiled dims only (in order) and must then match `full_tile` up to broadcasting of size-1 dims.
    """
    index, shape, kept = [], [], []
    for n, (idx, size) in zip(view_shape, dims):
        bcast = n == 1
        index.append("0" if bcast else idx)
        if size is None:
            shape.append(1)
        else:
            t = 1 if bcast else size
            shape.append(t)
            kept.append(str(t))
    expr = f"ct.load({array}, index={tup(index)}, shape={tup(shape)}, padding_mode={ZERO})"
    if dtype:
        expr += f".astype({dtype})"
    if len(kept) != len(shape):
        expr = f"ct.reshape({expr}, {tup(kept)})"
    full = [str(t) for t in full_tile]
    if kept != full:
        expr = f"ct.broadcast_to({expr}, {tup(full)})"
    lines.append(f"{indent}{var} = {expr}")
    return var


# ---------------------------------------------------------------------------------------------------------------
# eval batch norm folding (R6)


@dataclass
class BatchNorm:
    node: str
    weight: str | None  # graph values (None when affine=False)
    bias: str | None
    mean: str
    var: str
    eps: float


def parse_batch_norm(rec: OpRecord, anchor_node: str) -> BatchNorm:
    from .expr import bind_args

    if rec.op not in ("batch_norm", "_native_batch_norm_legit_no_training"):
        raise Unsupported(f"{rec.target} after the anchor: only an eval-mode batch_norm folds into it")
    a = bind_args(rec)
    if a.get("training") is True:
        raise Unsupported(f"{rec.target}: training-mode batch norm")
    x = a.get("input")
    if not is_ref(x) or x["ref"] != anchor_node:
        raise Unsupported(f"{rec.target}: does not read the anchor's result")

    def ref(name):
        v = a.get(name)
        if v is None or not is_ref(v):
            return None
        return v["ref"]

    mean, var = ref("running_mean"), ref("running_var")
    if mean is None or var is None:
        raise Unsupported(f"{rec.target}: eval batch norm without running statistics")
    eps = a.get("eps", 1e-5)
    return BatchNorm(rec.node, ref("weight"), ref("bias"), mean, var, float(eps if eps is not None else 1e-5))


def fresh_name(base: str, taken: set[str]) -> str:
    name, i = base, 1
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    return name


def bn_fold_lines(bn: BatchNorm, names: dict[str, str], weight: str, bias: str | None, channel_dim: int,
                  weight_rank: int, lines: list[str], indent: str = "    ",
                  out_names: tuple[str, str] = ("folded_w", "folded_b")) -> tuple[str, str]:
    """Host lines folding `bn` into (weight, bias): w' = w * s along `channel_dim`, b' = (b - mean) * s + beta with
    s = gamma / sqrt(var + eps). Runs once, in prepare_; the folded bias is float32. Returns (w', b') names."""
    mean, var = names[bn.mean], names[bn.var]
    sc = fresh_name("bn_scale", set(names.values()) | set(out_names) | {weight})
    lines.append(f"{indent}{sc} = torch.rsqrt({var}.float() + {bn.eps!r})")
    if bn.weight is not None:
        lines.append(f"{indent}{sc} = {sc} * {names[bn.weight]}.float()")
    shape = ["1"] * weight_rank
    shape[channel_dim] = "-1"
    fw, fb = out_names
    lines.append(f"{indent}{fw} = ({weight}.float() * {sc}.reshape({', '.join(shape)}))"
                 f".to({weight}.dtype)")
    base = f"{bias}.float()" if bias is not None else f"torch.zeros_like({sc})"
    shift = f" + {names[bn.bias]}.float()" if bn.bias is not None else ""
    lines.append(f"{indent}{fb} = ({base} - {mean}.float()) * {sc}{shift}")
    return fw, fb


def elementwise_ops(ops: Sequence[OpRecord], what: str) -> list[OpRecord]:
    for rec in ops:
        if not rec.category.startswith("elementwise"):
            raise Unsupported(f"{rec.target} fused after the {what} is not elementwise")
    return list(ops)


def value_shapes(spec: KernelSpec) -> dict[str, list[int]]:
    shapes = {t.graph_value: list(t.shape) for t in spec.inputs if t.graph_value}
    for r in spec.ops:
        shapes[r.node] = list(r.output)
    return shapes


class SideOperands:
    """`load_side` for epilogue builders (matmul, conv): a fused operand is a value computed earlier in the kernel,
    a scalar argument (passed as a float), or a side tensor, which the builder's `_side(host, shape, key)` views
    and loads. Builders provide `side_vars`, `inputs`, `scalars` and `sig`."""

    def load_side(self, value: str) -> str:
        if value in self.side_vars:
            return self.side_vars[value]
        t = self.inputs.get(value)
        if t is None:
            raise Unsupported(f"fused operand {value} is neither a kernel input nor computed in the kernel")
        if t.role == "scalar":
            name = f"sc{len(self.scalars)}"
            self.scalars.append((name, f"float({self.sig.host[value]})"))
            self.side_vars[value] = name
            return name
        return self._side(self.sig.host[value], list(t.shape), value)
