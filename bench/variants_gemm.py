"""Tile-configuration variants of the tensor-core generators (matmul, conv, attention) on large problems (GPU).

    python bench/variants_gemm.py [--only SUBSTRING] [--match VARIANT_TEXT] [--reps 20] [--quick | --all] [--aot]

The generators read every tile choice from one table, `tilestudio.core.kernels.gemm_common.TILES`. For each case
this script regenerates the kernel under a few overrides of that table (the first row of a case is the current
default), checks each against the float64 reference on the same inputs (relative Frobenius error, NaN = wrong),
and times it with CUDA events (warm-up, median of --reps, three input sets rotated between calls, never zeros)
next to PyTorch (cuBLAS / cuDNN / flash SDPA, or eager for fused epilogues). The table comes last: "vs torch" =
torch ms / ours (>= 0.8 is the goal on fp16/bf16), "best" marks the fastest correct variant of a case. To adopt a
variant, copy its overrides into TILES. The default set runs in under about two minutes on an H200 (JIT compiles
included; cuTile caches them, so a rerun is faster); --all adds the variants marked X (about twice as long).
--aot needs no GPU: it compiles the selected variants for sm_90 and prints their registers, shared memory and
stack frame (a non-zero frame is a register spill), to drop the variants that cannot win before a GPU call.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import median_ms, print_table  # noqa: E402
from kernels_matmul_conv import BF, HF, _mod, spec_for  # noqa: E402

SDPA = "F.scaled_dot_product_attention"

# label, model, inputs, FLOPs, variants (name, TILES overrides[, True = only with --all: slow to compile or less
# likely]); the first variant is the default table
X = True
OLD8 = {"mm_large_min_elems": 1 << 62}  # no problem takes the large tile: 128x128x64 at occupancy 2
# head dim 128 past 256 keys (attention.tiling's last rule)
def _d128(**overrides) -> dict:
    """TILES overrides whose attn_d128 tile every head-dim-128 case takes (long unmasked ones included)."""
    return {"attn_long_keys": 1 << 30, **overrides}


D128_LONG = [("default", {}),
    # 8 worker warps at one block per SM: 128x128 and 128x64 tiles compile spill-free (R168; session 8)
    # sessions 9-20 default: 128x128 on 8 worker warps at occupancy 1 (session 8's default: 64x128 occ=2);
    # session 21: 64x128 occ=2, except unmasked past attn_long_keys keys (attn_d128_long: 128x128 on 8 warps)
    ("128x128 8 warps occ=1 (session 20)", _d128(attn_d128=(128, 128))),
    ("128x64 8 warps occ=1", _d128(attn_d128=(128, 64), attn_worker_warps_min_elems=128 * 64)),
    ("128x64 occ=1", _d128(attn_d128=(128, 64), attn_occupancy=1)),
    ("64x64 occ=2", _d128(attn_d128=(64, 64))),
    ("64x128 occ=2", _d128(attn_d128=(64, 128))),
    ("64x64 occ=3", _d128(attn_d128=(64, 64), attn_occupancy=3)),
    ("128x128 occ=2", _d128(attn_d128=(128, 128), attn_worker_warps=None), X),
    ("128x128 occ=1", _d128(attn_d128=(128, 128), attn_worker_warps=None, attn_occupancy=1), X)]

CASES = [
    ("mm 8192^3 bf16", _mod("", "a @ b", "a, b"),
     f"[torch.randn(8192, 8192, dtype={BF}), torch.randn(8192, 8192, dtype={BF})]", 2 * 8192 ** 3,
     [("default", {}),
      # num_worker_warps=8 (session 8): two warp groups share the accumulator; sm_90 cubins spill-free (zero
      # stack frame) for 128x256x64 and 256x128x64 at one block per SM (214 KB of shared memory), where the
      # compiler's warp count spills 130-520 registers per thread. Session 9 made 128x256x64 on 8 warps the default
      # of large problems (TILES["mm_large"]); OLD8 is the session-8 default (128x128x64, occupancy 2)
      ("128x128x64 (session 8)", OLD8),
      ("256x128x64 8 warps", {"mm_large": (256, 128, 64)}),
      ("128x128x64 8 warps occ=1", {**OLD8, "mm_worker_warps_min_elems": 128 * 128}),
      ("persistent 128x256x64 8 warps", {"mm_persistent": 1}),
      ("128x256x64 compiler's warps", {"mm_worker_warps": None}, X),  # 23.8 ms (session 8): the spill
      ("ctas=2", {"mm_num_ctas": 2}),
      ("persistent, 2 blocks/SM", {"mm_persistent": 2}, X),
      ("store without TMA", {"mm_store_tma": False}),
      ("128x128x64 occ=1", {**OLD8, "mm_occupancy": 1}),
      ("128x128x128 occ=1", {**OLD8, "mm_low": (128, 128, 128), "mm_occupancy": 1}),
      ("256x128x64 compiler's warps", {"mm_large": (256, 128, 64), "mm_worker_warps": None}, X),
      ("group_m=16", {"mm_group_m": 16}, X)]),
    ("mm 4096^3 fp16", _mod("", "a @ b", "a, b"),
     f"[torch.randn(4096, 4096, dtype={HF}), torch.randn(4096, 4096, dtype={HF})]", 2 * 4096 ** 3,
     [("default", {}),
      ("128x256x64 8 warps", {"mm_large_min_elems": 1 << 24}),
      ("256x128x64 8 warps", {"mm_large_min_elems": 1 << 24, "mm_large": (256, 128, 64)}),
      ("128x256x64 compiler's warps", {"mm_low": (128, 256, 64), "mm_worker_warps": None}, X),
      ("occ=1", {"mm_occupancy": 1}),
      ("256x128x64", {"mm_low": (256, 128, 64), "mm_worker_warps": None}, X)]),
    # the projections of a Llama-style attention block (bench/models/llama_attention_rope_bf16.py): 4096 tokens of
    # 2048 features to 512 (k_proj / v_proj, 4 key/value heads of 128) and to 2048 (q_proj / o_proj)
    ("linear 4096x2048->512 bf16 (Llama k_proj)", _mod(f"self.l = nn.Linear(2048, 512, bias=False).to({BF})",
                                                       "self.l(x)"),
     f"[torch.randn(4096, 2048, dtype={BF})]", 2 * 4096 * 2048 * 512,
     [("default", {}),
      ("64x128x64", {"mm_low": (64, 128, 64)}),
      ("128x64x64", {"mm_low": (128, 64, 64)}),
      ("64x64x64 occ=3", {"mm_low": (64, 64, 64), "mm_occupancy": 3}),
      ("128x128x64 occ=2 (session 20)", {"mm_occupancy_one_wave": None}),
      ("128x128x128 occ=1", {"mm_low": (128, 128, 128), "mm_occupancy": 1})]),
    ("linear 4096x2048->2048 bf16 (Llama q_proj)", _mod(f"self.l = nn.Linear(2048, 2048, bias=False).to({BF})",
                                                        "self.l(x)"),
     f"[torch.randn(4096, 2048, dtype={BF})]", 2 * 4096 * 2048 * 2048,
     [("default", {}),
      ("128x256x64 8 warps", {"mm_large_min_elems": 1 << 23}),
      ("64x128x64", {"mm_low": (64, 128, 64)}),
      ("128x128x64 occ=1", {"mm_occupancy": 1})]),
    ("linear+gelu 8192^3 bf16", _mod(f"self.l = nn.Linear(8192, 8192).to({BF})", "F.gelu(self.l(x))"),
     f"[torch.randn(8192, 8192, dtype={BF})]", 2 * 8192 ** 3,
     [("default", {}),
      ("128x128x64 (session 8)", OLD8),
      ("256x128x64 8 warps", {"mm_large": (256, 128, 64)}),
      ("gelu erfc constants unfolded (old)", {"erfc_folded": False}),
      ("bias in the accumulator", {"mm_bias_in_acc": True}),
      ("store without TMA", {"mm_store_tma": False}),
      ("persistent 128x256x64 8 warps", {"mm_persistent": 1}),
      # a cluster of 2 (TMA multicast of the shared operand); sm_90 R168, zero frame with 128x256 on 8 warps
      ("ctas=2", {"mm_num_ctas": 2}),
      ("persistent, 2 blocks/SM", {"mm_persistent": 2}, X),
      ("128x256x64 compiler's warps", {"mm_worker_warps": None}, X)]),
    # float32 operands (PyTorch's default dtype; torch runs them without TF32 here, as by default): split TF32 on
    # tensor cores (TILES["f32_split_tf32"], session 22) against the plain float32 mma that tileiras lowers to FFMA
    ("mm 4096^3 fp32", _mod("", "a @ b", "a, b"),
     "[torch.randn(4096, 4096), torch.randn(4096, 4096)]", 2 * 4096 ** 3,
     [("default", {}),
      ("FFMA float32 mma (before)", {"f32_split_tf32": False}),
      ("3xTF32 128x128x32", {"mm_f32": (128, 128, 32)}),
      ("3xTF32 64x64x32 (first default)", {"mm_f32": (64, 64, 32)}),
      ("3xTF32 64x128x32", {"mm_f32": (64, 128, 32)}),
      ("3xTF32 64x64x64", {"mm_f32": (64, 64, 64)}),
      ("3xTF32 128x128x32 occ=1", {"mm_f32": (128, 128, 32), "mm_occupancy": 1}),
      ("3xTF32, K steps promoted (fresh accumulator per step)", {"f32_split_promote": True})]),
    ("linear+gelu 2048x1024->4096 fp32", _mod("self.l = nn.Linear(1024, 4096)", "F.gelu(self.l(x))"),
     "[torch.randn(2048, 1024)]", 2 * 2048 * 1024 * 4096,
     [("default", {}),
      ("FFMA float32 mma (before)", {"f32_split_tf32": False}),
      ("3xTF32 128x128x32", {"mm_f32": (128, 128, 32)}),
      ("3xTF32 64x64x32 (first default)", {"mm_f32": (64, 64, 32)}),
      ("3xTF32, K steps promoted (fresh accumulator per step)", {"f32_split_promote": True})]),
    # tests/models/arch_transformer_encoder_block.py's fc2: two blocks of 64x64, twelve K steps
    ("linear+add 38x384->96 fp32 (small: encoder block fc2)", _mod("self.l = nn.Linear(384, 96)", "self.l(x) + r", "x, r"),
     "[torch.randn(38, 384), torch.randn(38, 96)]", 2 * 38 * 384 * 96,
     [("default", {}),
      ("FFMA float32 mma (before)", {"f32_split_tf32": False}),
      ("3xTF32 32x32x32", {"mm_f32": (32, 32, 32)}),
      ("3xTF32 16x32x64", {"mm_f32": (16, 32, 64)})]),
    ("conv2d 3x3 32x64x56x56->64 fp32", _mod("self.c = nn.Conv2d(64, 64, 3, padding=1)", "self.c(x)"),
     "[torch.randn(32, 64, 56, 56)]", 2 * 32 * 64 * 56 * 56 * 64 * 9,
     [("default", {}),
      ("FFMA float32 mma (before)", {"f32_split_tf32": False}),
      ("3xTF32, K steps promoted (fresh accumulator per step)", {"f32_split_promote": True})]),
    ("bmm 64x1024x128x1024 bf16", _mod("", "torch.bmm(a, b)", "a, b"),
     f"[torch.randn(64, 1024, 128, dtype={BF}), torch.randn(64, 128, 1024, dtype={BF})]", 2 * 64 * 1024 * 1024 * 128,
     [("default", {}),
      ("old: BK=64 loop", {"mm_one_step_k": 0, "mm_occupancy_one_step": None}),
      ("one step, occ auto", {"mm_occupancy_one_step": None}),
      ("one step 128x256", {"mm_low": (128, 256, 64), "mm_worker_warps": None, "mm_occupancy_one_step": None}, X),
      # K = 128 is one K step per tile: more, smaller blocks per SM overlap one block's store with another's loads
      ("one step 128x64 occ=4", {"mm_low": (128, 64, 64), "mm_occupancy_one_step": 4}),
      ("one step 64x128 occ=4", {"mm_low": (64, 128, 64), "mm_occupancy_one_step": 4}),
      ("one step 128x128 occ=3", {"mm_occupancy_one_step": 3}),
      ("store without TMA", {"mm_store_tma": False}),
      ("store without TMA, occ=3", {"mm_store_tma": False, "mm_occupancy_one_step": 3}),
      ("ctas=2", {"mm_num_ctas": 2}),
      # one block walks N tiles: A loaded once, each tile's store overlapping the next tile's B load
      ("2 N tiles per block", {"mm_one_step_n_tiles": 2}),
      ("4 N tiles per block", {"mm_one_step_n_tiles": 4}),
      ("8 N tiles per block", {"mm_one_step_n_tiles": 8}),
      ("4 N tiles per block, occ=1", {"mm_one_step_n_tiles": 4, "mm_occupancy_one_step": 1}),
      ("4 N tiles per block, occ=3", {"mm_one_step_n_tiles": 4, "mm_occupancy_one_step": 3}),
      ("one step 128x256 8 warps", {"mm_low": (128, 256, 64)}),
      ("4 N tiles per block, 8 warps occ=1", {"mm_worker_warps_min_elems": 128 * 128})]),
    ("conv2d 3x3 32x256x56x56->256 bf16", _mod(f"self.c = nn.Conv2d(256, 256, 3, padding=1).to({BF})", "self.c(x)"),
     f"[torch.randn(32, 256, 56, 56, dtype={BF})]", 2 * 32 * 256 * 56 * 56 * 256 * 9,
     [("default", {}),
      # session 9 default: 256 channels on 8 worker warps (session 8: 128 channels, the compiler's warps)
      ("128 channels, compiler's warps (session 8)", {"conv_worker_warps": None}),
      ("8 warps, bco=128", {"conv_bco_worker_warps": 128}),  # sm_90: R168 instead of R255, zero frame either way
      ("positions=256", {"conv_positions": 256}),
      ("occ=2", {"conv_occupancy": 2}),
      ("bk=32", {"conv_bk": 32}, X),
      ("bco=256, compiler's warps", {"conv_worker_warps": None, "conv_bco": 256}, X)]),
    ("conv2d 7x7/2+bn+relu 64x3x224x224->64 fp16 (ResNet stem)",
     _mod(f"self.c = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False).to({HF}); "
          f"self.b = nn.BatchNorm2d(64).to({HF})", "torch.relu(self.b(self.c(x)))"),
     f"[torch.randn(64, 3, 224, 224, dtype={HF})]", 2 * 64 * 64 * 3 * 49 * 112 * 112,
     [("default", {}),
      ("unfolded", {"conv_fold_w": False}),
      ("folded, positions=128", {"conv_fold_positions": 128}),
      ("folded, occ=2", {"conv_occupancy": 2})]),
    ("conv2d 1x1+bn+relu 64x512x28x28 fp16",
     _mod(f"self.c = nn.Conv2d(512, 512, 1).to({HF}); self.b = nn.BatchNorm2d(512).to({HF})",
          "torch.relu(self.b(self.c(x)))"),
     f"[torch.randn(64, 512, 28, 28, dtype={HF})]", 2 * 64 * 512 * 784 * 512,
     [("default", {}),
      # session 9 default: 256 channels on 8 worker warps (session 8: 128 on the compiler's)
      ("compiler's warps (session 8)", {"conv_worker_warps": None}),
      ("8 warps, bco=128", {"conv_bco_worker_warps": 128}),
      ("occ=2", {"conv_occupancy": 2}),
      ("positions=256", {"conv_positions": 256}, X)]),
    ("sdpa 8x16x2048x2048x128 bf16 [D128]", _mod("", f"{SDPA}(q, k, v)", "q, k, v"),
     f"[torch.randn(8, 16, 2048, 128, dtype={BF}), torch.randn(8, 16, 2048, 128, dtype={BF}), "
     f"torch.randn(8, 16, 2048, 128, dtype={BF})]", 4 * 8 * 16 * 2048 * 2048 * 128,
     # sm_90 SASS (bench/sass_widths.py --set attn_d128=... --set attn_occupancy=...): the default spills 9
     # registers per thread; 128x64 at occupancy 1 and the 64-query tiles do not, 128x128 spills 150-300
     D128_LONG),
    ("sdpa causal 8x16x2048x2048x64 fp16", _mod("", f"{SDPA}(q, k, v, is_causal=True)", "q, k, v"),
     f"[torch.randn(8, 16, 2048, 64, dtype={HF}), torch.randn(8, 16, 2048, 64, dtype={HF}), "
     f"torch.randn(8, 16, 2048, 64, dtype={HF})]", 2 * 8 * 16 * 2048 * 2048 * 64,
     # session 19 default: 64x64 at occupancy 3 (sessions 7-18: 64x128 at occupancy 2)
     [("default", {}),
      ("64x128 occ=2 (session 18)", {"attn_d64": (64, 128), "attn_d64_occupancy": 2}),
      ("128x128 8 warps occ=1", {"attn_d64": (128, 128)}),
      ("128x64 8 warps occ=1", {"attn_d64": (128, 64), "attn_worker_warps_min_elems": 128 * 64}),
      ("128x64 occ=2", {"attn_d64": (128, 64), "attn_d64_occupancy": 2}),
      ("128x128 occ=2", {"attn_d64": (128, 128), "attn_worker_warps": None, "attn_d64_occupancy": 2}),
      ("64x64 occ=2", {"attn_d64_occupancy": 2}),
      ("64x64 occ=4", {"attn_d64_occupancy": 4}),
      ("128x64 occ=1", {"attn_d64": (128, 64), "attn_d64_occupancy": 1}, X)]),
]

# attention over short sequences (session 19): ViT-B/16 (197 tokens) and CLIP's text encoder (77), head dim 64
SHORT = [("default", {}),
         ("long-sequence tiles (session 18)", {"attn_short_keys": 0, "attn_d64": (64, 128), "attn_d64_occupancy": 2}),
         ("64x64 occ=3", {"attn_short_d64": (64, 64, 3)}),
         ("64x64 occ=2", {"attn_short_d64": (64, 64, 2)}),
         ("128x64 occ=2", {"attn_short_d64": (128, 64, 2)}),
         ("64x128 occ=3", {"attn_short_d64": (64, 128, 3)}),
         ("128x128 8 warps occ=1", {"attn_short_keys": 0, "attn_d64": (128, 128)}, X)]
LONG = [("default", {}),
        ("64x64 occ=3", {"attn_long_keys": 1 << 30}),
        ("64x64 occ=4", {"attn_long_keys": 1 << 30, "attn_d64_occupancy": 4})]
MEDIUM = [("default", {}),
          ("64x128 occ=2 (session 18)", {"attn_d64": (64, 128), "attn_d64_occupancy": 2}),
          ("64x64 occ=4", {"attn_d64_occupancy": 4}),
          ("128x64 occ=2", {"attn_d64": (128, 64), "attn_d64_occupancy": 2})]
D128 = [("default", {}),
        ("128x128 8 warps occ=1 (session 18)", {"attn_short_keys": 0, "attn_d128": (128, 128)}),
        ("64x64 occ=2", {"attn_short_d128": (64, 64, 2)}),
        ("64x64 occ=3", {"attn_short_d128": (64, 64, 3)}),
        ("128x64 occ=2", {"attn_short_d128": (128, 64, 2)})]
BY_HAND = "torch.softmax(q @ k.transpose(-2, -1) * 0.125, -1) @ v"
HF_ADD = ("torch.matmul(F.softmax(torch.matmul(q, k.transpose(2, 3)) * 0.08838834764831845 + m, dim=-1, "
          "dtype=torch.float32).to(q.dtype), v)")
GPT2 = "(q @ k.transpose(-2, -1) * 0.125).masked_fill(m == 0, float('-inf')).softmax(-1) @ v"
# session 19 also tried skipping the key tiles such a mask fills whole (the mask first, then `if` some score
# survives): the branch costs the loop its pipelining, 0.126 -> 0.176 ms at GPT-2 size (tril buffer), 0.153 ->
# 0.226 with an 80% mask; it was dropped


# session 20: a score side input with 16-byte rows loads as a tile per key step; before, gathered lane by lane
GATHERED_SIDES = ("gathered side inputs (session 19)", {"attn_side_tile_loads": False})


def TRANSPOSED(x):
    """The transpose (last two dims) of a contiguous tensor: x's values with the strides of k.transpose(-2, -1)."""
    return x.transpose(-2, -1).contiguous().transpose(-2, -1)


def TRIL(x):
    """A causal 0/1 mask of x's shape (GPT-2's tril buffer)."""
    return torch.tril(torch.ones_like(x))


def CAUSAL_MIN(x):
    """Hugging Face's additive causal buffer of x's shape: 0 on and below the diagonal, finfo.min above."""
    return torch.full_like(x, torch.finfo(x.dtype).min).triu(1)


def KEEP_80(x):
    """A 0/1 mask of x's shape keeping about 80% of the scores at random (a padding-style mask: no tile is empty)."""
    return (torch.rand_like(x.float()) < 0.8).to(x.dtype)


def _qkv(b, h, s, d, dt):
    return f"[torch.randn({b}, {h}, {s}, {d}, dtype={dt}), torch.randn({b}, {h}, {s}, {d}, dtype={dt}), " \
        f"torch.randn({b}, {h}, {s}, {d}, dtype={dt})]"


CASES += [
    # float32 attention (split TF32 for both products, TILES["f32_split_tf32"], session 22; before: FFMA)
    ("sdpa 8x12x1024x1024x64 fp32", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(8, 12, 1024, 64, "torch.float32"),
     4 * 8 * 12 * 1024 * 1024 * 64, [("default", {}), ("FFMA float32 mma (before)", {"f32_split_tf32": False})]),
    ("attention by hand 8x12x1024x1024x64 fp32", _mod("", BY_HAND, "q, k, v"), _qkv(8, 12, 1024, 64, "torch.float32"),
     4 * 8 * 12 * 1024 * 1024 * 64, [("default", {}), ("FFMA float32 mma (before)", {"f32_split_tf32": False})]),
    ("sdpa ViT-B/16 64x12x197x197x64 fp16", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(64, 12, 197, 64, HF),
     4 * 64 * 12 * 197 * 197 * 64, SHORT),
    # the kernel's second input is k^T: passed as the view k.transpose(-2, -1), as a model's glue passes it (a
    # 6th element maps input indices to what the random input is turned into)
    ("attention by hand ViT-B/16 64x12x197x197x64 fp16 (k^T a view of k)", _mod("", BY_HAND, "q, k, v"),
     _qkv(64, 12, 197, 64, HF), 4 * 64 * 12 * 197 * 197 * 64, SHORT, {1: TRANSPOSED}),
    ("attention by hand ViT-B/16 64x12x197x197x64 fp16 (k^T row-major)", _mod("", BY_HAND, "q, k, v"),
     _qkv(64, 12, 197, 64, HF), 4 * 64 * 12 * 197 * 197 * 64, SHORT[:2]),
    # GPT-2's attention by hand: masked_fill of a causal buffer; and a padding-style mask that empties no tile
    ("attention by hand causal GPT-2 8x12x1024x1024x64 bf16 (tril buffer)", _mod("", GPT2, "q, k, v, m"),
     _qkv(8, 12, 1024, 64, BF)[:-1] + ", torch.ones(1, 1, 1024, 1024)]", 4 * 8 * 12 * 1024 * 1024 * 64,
     MEDIUM[:2] + [GATHERED_SIDES], {1: TRANSPOSED, 2: TRIL}),
    ("attention by hand masked_fill 80% kept 32x12x512x512x64 fp16", _mod("", GPT2, "q, k, v, m"),
     _qkv(32, 12, 512, 64, HF)[:-1] + ", torch.ones(32, 1, 512, 512)]", 4 * 32 * 12 * 512 * 512 * 64,
     MEDIUM[:2] + [GATHERED_SIDES], {1: TRANSPOSED, 2: KEEP_80}),
    ("sdpa CLIP text 128x8x77x77x64 fp16", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(128, 8, 77, 64, HF),
     4 * 128 * 8 * 77 * 77 * 64, SHORT),
    ("sdpa causal 64x12x256x256x64 fp16", _mod("", f"{SDPA}(q, k, v, is_causal=True)", "q, k, v"),
     _qkv(64, 12, 256, 64, HF), 2 * 64 * 12 * 256 * 256 * 64, SHORT),
    ("sdpa 8x16x2048x2048x64 fp16", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(8, 16, 2048, 64, HF),
     4 * 8 * 16 * 2048 * 2048 * 64, LONG),
    ("sdpa 16x16x1024x1024x64 fp16", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(16, 16, 1024, 64, HF),
     4 * 16 * 16 * 1024 * 1024 * 64, LONG + [("64x128 occ=2", {"attn_long_keys": 0})]),
    ("sdpa 2x16x4096x4096x64 bf16", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(2, 16, 4096, 64, BF),
     4 * 2 * 16 * 4096 * 4096 * 64, LONG),
    ("sdpa 32x12x384x384x64 fp16", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(32, 12, 384, 64, HF),
     4 * 32 * 12 * 384 * 384 * 64, MEDIUM),
    ("sdpa BERT-base 32x12x512x512x64 bf16", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(32, 12, 512, 64, BF),
     4 * 32 * 12 * 512 * 512 * 64, MEDIUM),
    ("sdpa 32x16x256x256x128 bf16", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(32, 16, 256, 128, BF),
     4 * 32 * 16 * 256 * 256 * 128, D128),
    ("sdpa 32x16x197x197x128 fp16", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(32, 16, 197, 128, HF),
     4 * 32 * 16 * 197 * 197 * 128, D128),
    # Llama-style attention at head dim 128 (bench/models/llama_attention_rope_bf16.py): Hugging Face's additive
    # causal buffer and float32 softmax, then the same without a mask
    ("attention by hand HF causal buffer 4x16x1024x1024x128 bf16 [D128]", _mod("", HF_ADD, "q, k, v, m"),
     _qkv(4, 16, 1024, 128, BF)[:-1] + f", torch.ones(1, 1, 1024, 1024, dtype={BF})]", 4 * 4 * 16 * 1024 * 1024 * 128,
     D128_LONG + [GATHERED_SIDES], {1: TRANSPOSED, 2: CAUSAL_MIN}),
    ("attention by hand 4x16x1024x1024x128 bf16 [D128]", _mod("", BY_HAND, "q, k, v"), _qkv(4, 16, 1024, 128, BF),
     4 * 4 * 16 * 1024 * 1024 * 128, D128_LONG, {1: TRANSPOSED}),
    ("sdpa 4x16x1024x1024x128 bf16 [D128]", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(4, 16, 1024, 128, BF),
     4 * 4 * 16 * 1024 * 1024 * 128, D128_LONG),
    # session 21: head dim 128 past attn_short_keys, by sequence length and with a causal mask ([D128] runs them
    # all: --only D128)
    ("sdpa 16x16x512x512x128 bf16 [D128]", _mod("", f"{SDPA}(q, k, v)", "q, k, v"), _qkv(16, 16, 512, 128, BF),
     4 * 16 * 16 * 512 * 512 * 128, D128_LONG),
    ("sdpa causal 16x16x512x512x128 bf16 [D128]", _mod("", f"{SDPA}(q, k, v, is_causal=True)", "q, k, v"),
     _qkv(16, 16, 512, 128, BF), 2 * 16 * 16 * 512 * 512 * 128, D128_LONG),
    ("sdpa causal 4x16x1024x1024x128 bf16 [D128]", _mod("", f"{SDPA}(q, k, v, is_causal=True)", "q, k, v"),
     _qkv(4, 16, 1024, 128, BF), 2 * 4 * 16 * 1024 * 1024 * 128, D128_LONG),
    ("sdpa causal 8x16x2048x2048x128 bf16 [D128]", _mod("", f"{SDPA}(q, k, v, is_causal=True)", "q, k, v"),
     _qkv(8, 16, 2048, 128, BF), 2 * 8 * 16 * 2048 * 2048 * 128, D128_LONG),
    ("attention by hand HF causal buffer 2x32x2048x2048x128 bf16 [D128]", _mod("", HF_ADD, "q, k, v, m"),
     _qkv(2, 32, 2048, 128, BF)[:-1] + f", torch.ones(1, 1, 2048, 2048, dtype={BF})]", 4 * 2 * 32 * 2048 * 2048 * 128,
     D128_LONG, {1: TRANSPOSED, 2: CAUSAL_MIN}),
]


@contextlib.contextmanager
def tiles(overrides: dict):
    """Generate with gemm_common.TILES (or, for an epilogue's math, expr_math.MATH_TUNING) entries overridden."""
    from tilestudio.core.kernels import gemm_common
    from tilestudio.core.kernels.expr_math import MATH_TUNING

    tables = [gemm_common.TILES, MATH_TUNING]
    saved = [dict(t) for t in tables]
    for key, value in overrides.items():
        next((t for t in tables if key in t), gemm_common.TILES)[key] = value
    try:
        yield
    finally:
        for t, old in zip(tables, saved):
            t.clear()
            t.update(old)


def rel_error(actual, expected) -> float:
    a, e = actual.double(), expected.double()
    if not torch.isfinite(a).all():
        return math.inf
    return float(torch.linalg.vector_norm(a - e) / torch.linalg.vector_norm(e).clamp_min(1e-30))


def selected(variants, quick: bool, extra: bool, match: str | None = None) -> list[tuple[str, dict]]:
    if quick:
        return [variants[0][:2]]
    if match:  # the default, then the variants whose name contains `match` (--all or not)
        return [variants[0][:2]] + [v[:2] for v in variants[1:] if match in v[0]]
    return [v[:2] for v in variants if extra or not (len(v) > 2 and v[2])]


def case_spec(model, inputs):
    return spec_for(model, inputs, families=("matmul", "conv", "attention"))


def variant_source(spec, overrides):
    """The kernel generated under one variant's TILES overrides (a skeleton is an error here)."""
    from tilestudio.core.kernels import generate_kernel

    with tiles(overrides):
        src = generate_kernel(spec)
    if src.skeleton:
        raise RuntimeError("skeleton: " + "; ".join(src.notes))
    return src


def aot_case(label, model, inputs, variants) -> list[list[str]]:
    """--aot (CPU, no GPU): each variant generated and compiled for sm_90 as the JIT would (specialized); its
    registers per thread, shared memory per block and stack frame (F > 0: a spill), so a GPU call times only the
    variants that compile and fit."""
    from tilestudio.core.kernels import aot

    spec = case_spec(model, inputs)
    rows = []
    for name, overrides in variants:
        t0 = time.perf_counter()
        try:
            src = variant_source(spec, overrides)
            parts = []
            for rec in aot.trace_launches(src, spec):
                cubin = aot.compile_cubin(rec, "sm_90", specialize=True)
                res = aot.kernel_resources(cubin)
                parts.append(f"R{res['registers']} S{aot.shared_memory_bytes(cubin)} F{res['frame']}")
            rows.append([label, name, " + ".join(parts), (src.notes[0] if src.notes else "")[:60],
                         f"{time.perf_counter() - t0:.0f}s"])
        except Exception as exc:  # noqa: BLE001 - one variant never stops the table
            rows.append([label, name, f"ERROR {type(exc).__name__}: {str(exc)[:70]}", "",
                         f"{time.perf_counter() - t0:.0f}s"])
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    return rows


def run_case(label, model, inputs, flop, variants, reps, shaped=None) -> list[list[str]]:
    from tilestudio.core.kernels.aot import load_source
    from tilestudio.core.kernels.checking import PoisonedTorch, launch_args, make_inputs, reference_float64

    spec = case_spec(model, inputs)
    shaped = shaped or {}
    ins = [[shaped[i](x) if i in shaped else x for i, x in enumerate(make_inputs(spec, "cuda", seed))]
           for seed in range(3)]
    ref_ns = {"torch": torch, "math": math}
    exec(compile(spec.reference, spec.reference_name, "exec"), ref_ns)  # noqa: S102
    ref = ref_ns[spec.reference_name]
    expected = reference_float64(spec, ins[0])[0]
    torch_ms = median_ms(ref, ins, reps)
    rows = []
    for name, overrides in variants:
        t0 = time.perf_counter()
        try:
            src = variant_source(spec, overrides)
            ns = load_source(src)
            args = [launch_args(spec, ns, src.prepare_name, x) for x in ins]
            real = ns["torch"]
            ns["torch"] = PoisonedTorch()  # unwritten output elements read as NaN
            try:
                out = ns[src.launch_name](*args[0])
            finally:
                ns["torch"] = real
            out = out[0] if isinstance(out, tuple) else out
            err = rel_error(out, expected)
            ms = median_ms(ns[src.launch_name], args, reps)
            tol = 2e-2 if spec.outputs[0].dtype in ("float16", "bfloat16") else 2e-3
            rows.append([label, name, f"{err:.1e}" + ("" if err <= tol else " WRONG"), f"{ms:.3f}",
                         f"{flop / ms / 1e9:.0f}", f"{torch_ms:.3f}", f"{torch_ms / ms:.2f}",
                         (src.notes[0] if src.notes else "")[:60], f"{time.perf_counter() - t0:.0f}s"])
        except Exception as exc:  # noqa: BLE001 - one variant never stops the table
            rows.append([label, name, f"ERROR {type(exc).__name__}: {str(exc)[:70]}", "", "", f"{torch_ms:.3f}",
                         "", "", f"{time.perf_counter() - t0:.0f}s"])
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
    ok = [r for r in rows if r[3] and "WRONG" not in r[2]]
    if ok:
        best = min(ok, key=lambda r: float(r[3]))
        best[1] = "* " + best[1]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=None, help="run the cases whose label contains this text")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="the default variant of each case only")
    parser.add_argument("--all", action="store_true", help="also the slower-to-compile, less likely variants")
    parser.add_argument("--match", default=None, help="the default and the variants whose name contains this text")
    parser.add_argument("--aot", action="store_true",
                        help="no GPU: compile each variant for sm_90 and print registers / shared memory / frame")
    args = parser.parse_args()
    if args.aot:
        rows = [["case", "variant", "sm_90 (R regs, S shared bytes, F frame bytes)", "tiles", "time"]]
        for label, model, inputs, _, variants, *_ in CASES:
            if not args.only or args.only in label:
                rows += aot_case(label, model, inputs, selected(variants, args.quick, args.all, args.match))
        print_table(rows)
        return 0
    if not torch.cuda.is_available():
        print("bench/variants_gemm.py needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    start = time.perf_counter()
    rows = [["case", "variant (* best)", "rel err", "ms", "TFLOP/s", "torch ms", "vs torch", "tiles", "time"]]
    for label, model, inputs, flop, variants, *shaped in CASES:
        if args.only and args.only not in label:
            continue
        try:
            chosen = selected(variants, args.quick, args.all, args.match)
            rows += run_case(label, model, inputs, flop, chosen, args.reps, *shaped)
        except Exception as exc:  # noqa: BLE001
            rows.append([label, "-", f"ERROR {type(exc).__name__}: {str(exc)[:80]}", "", "", "", "", "", ""])
        torch.cuda.empty_cache()
    print(f"{torch.cuda.get_device_name()}: tile variants vs PyTorch, median of {args.reps}, "
          f"{time.perf_counter() - start:.0f} s")
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
