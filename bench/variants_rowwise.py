"""Row-wise kernels (softmax, norms, reductions): time the generator's tuning alternatives side by side (GPU).

    python bench/variants_rowwise.py                    # every case, every variant (< 120 s on an H200)
    python bench/variants_rowwise.py --cases softmax    # cases whose label contains a word
    python bench/variants_rowwise.py --variants default,old,nopersist
    python bench/variants_rowwise.py --aot              # CPU only: generate + AOT-compile every variant (sm_90)

Each variant is a set of overrides of `core/kernels/rowwise.TUNING` (the one table every row-wise generator reads
its choices from); switch a default there when a variant wins. Cases are bench/kernels.py's cases (same spec
building, inputs and timing helpers). Per case: a device-to-device copy of the same number of bytes (the
ceiling), PyTorch eager on the spec's reference, and each variant whose generated code differs from the ones
already timed (identical code is timed once). CUDA events, warm-up, median of 20 reps, three fresh random
input sets rotated between reps; every variant is checked against the float64 reference first (a wrong
variant prints WRONG and is not timed). The compact table comes last: ms and fraction of copy per variant.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels as bk  # noqa: E402  bench/kernels.py: cases, spec building, timing

# the shapes measured last session (labels of bench/kernels.py CASES), most important first
CASE_LABELS = [
    "softmax rows 8192x8192 fp32",
    "softmax rows 16384x1000 bf16",
    "softmax rows 65536x1000 bf16",
    "layer_norm 8192x8192 fp32",
    "add+layer_norm 16384x4096 bf16",
    "rms_norm 16384x4096 bf16",
    "sum(-1) 8192x8192 fp32",
    "softmax dim=1 64x256x32x32 fp16 (inner dim)",
    "scale+softmax 4096x32768 fp32 (two-pass rows)",
    "layer_norm 2048x65536 fp32 (two-pass rows)",
    "group_norm(32)+silu 32x256x56x56 fp16",
    "mean(2,3) global pool 128x512x28x28 fp16",
    "batch_norm eval 64x256x56x56 fp16",
    "mean(1) 4096x4096x4 fp32",
    "argmax(-1) 8192x8192 bf16",
    "var(-1) 8192x8192 fp32",
    "logsumexp(-1) 16384x4096 fp32",
    "amax(0) 65536x1024 fp16 (column reduce)",
]
EXTRA_CASES = [
    ("softmax", "log_softmax rows 8192x4096 fp16", "def forward(self, x):\n        return torch.log_softmax(x, -1)",
     "[torch.randn(8192, 4096).half()]", "mem", None),
    # a vocabulary-size row (past softmax_wide_single: two passes, or split rows read once)
    ("softmax", "softmax rows 2048x131072 fp32 (two-pass rows)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(2048, 131072)]", "mem", None),
    # GPT-2's vocabulary: 13 chunks of 4096, no divisor near 16384 (two passes, or ragged split rows)
    ("softmax", "softmax rows 4096x50257 fp32 (two-pass rows)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(4096, 50257)]", "mem", None),
    ("softmax", "log_softmax rows 4096x50257 bf16 (two-pass rows)", "def forward(self, x):\n        return torch.log_softmax(x, -1)",
     "[torch.randn(4096, 50257).to(torch.bfloat16)]", "mem", None),
    # an odd row count: 4095 * 50257 elements in all is not a multiple of 16, so the flat view's last tile goes
    # element-wise (softmax_flat.Tail; before session 17 such rows took the split rows' 32-bit accesses)
    ("softmax", "softmax rows 4095x50257 fp32 (two-pass rows, odd rows)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(4095, 50257)]", "mem", None),
    # attention-score softmax of a ViT-B/16 (12 heads x 197 tokens, batch 64) and of CLIP's text encoder (77
    # tokens): short rows whose stride is off 16 bytes (394 / 154 bytes), many rows per tile
    ("softmax", "softmax rows 151296x197 fp16 (ViT attention, rows off 16 bytes)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(151296, 197).half()]", "mem", None),
    ("softmax", "softmax rows 151296x200 fp16 (aligned attention reference)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(151296, 200).half()]", "mem", None),
    ("softmax", "softmax rows 98560x80 fp16 (aligned attention reference)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(98560, 80).half()]", "mem", None),
    ("softmax", "softmax rows 49152x384 bf16 (aligned attention)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(49152, 384).bfloat16()]", "mem", None),
    ("softmax", "softmax rows 65536x100 fp32 (aligned attention)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(65536, 100)]", "mem", None),
    ("softmax", "softmax rows 98560x50 fp16 (attention, rows off 16 bytes)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(98560, 50).half()]", "mem", None),
    ("softmax", "softmax rows 65536x130 fp32 (attention, rows off 16 bytes)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(65536, 130)]", "mem", None),
    ("norm", "layer_norm 65536x768 bf16 (short rows, masked)",
     "def __init__(self):\n        super().__init__()\n        self.ln = nn.LayerNorm(768).to(torch.bfloat16)\n    def forward(self, x):\n        return self.ln(x)",
     "[torch.randn(65536, 768).bfloat16()]", "mem", None),
    ("norm", "layer_norm 131072x384 fp16 (short rows, masked)",
     "def __init__(self):\n        super().__init__()\n        self.ln = nn.LayerNorm(384).half()\n    def forward(self, x):\n        return self.ln(x)",
     "[torch.randn(131072, 384).half()]", "mem", None),
    ("softmax", "softmax rows 98560x77 fp16 (CLIP text attention, rows off 16 bytes)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(98560, 77).half()]", "mem", None),
    ("softmax", "log_softmax rows 4095x50257 bf16 (two-pass rows, odd rows)", "def forward(self, x):\n        return torch.log_softmax(x, -1)",
     "[torch.randn(4095, 50257).to(torch.bfloat16)]", "mem", None),
    # the same split (4, 4, 4, 1 chunks of 4096) over rows whose stride is a multiple of 16 bytes: 50257-float rows
    # start misaligned, so their loads and stores are 32-bit (sm_90: 128 LDG.E per thread), not 128-bit or TMA
    ("softmax", "softmax rows 4096x50256 fp32 (two-pass rows, aligned)", "def forward(self, x):\n        return torch.softmax(x, -1)",
     "[torch.randn(4096, 50256)]", "mem", None),
]

def _flat(tile: int, elems: int, tma: bool, occupancy: int) -> dict:
    """Every knob of the flat softmax form (softmax_flat.py), so a variant stays the same when defaults move."""
    return {"softmax_flat_tile": tile, "softmax_flat_elems": elems, "softmax_flat_tma": tma,
            "softmax_flat_occupancy": occupancy}


# name -> TUNING overrides; "old" reproduces last session's generator (non-persistent, no hints, small tiles)
VARIANTS = {
    "default": {},
    "old": {"persistent": False, "load_latency": None, "store_tma": None, "row_tile_elems": 4096,
            "col_min_bi": 32, "col_max_single": 8192, "group_channel_rows": False, "lane_softmax": False},
    "unchecked": {"unchecked_exact": True},
    "nopersist": {"persistent": False},
    "ww8": {"worker_warps": 8},  # @ct.kernel(num_worker_warps=8): two warp groups per block (session 8)
    # ... at one block per SM: the persistent kernels' occupancy hints (2, 4) would cap registers at 80 / 40 and
    # spill (layer_norm 8192^2 fp32 16 bytes, group_norm+silu 80 bytes per thread, sm_90 cubins)
    "ww8occ1": {"worker_warps": 8, "occupancy": 1, "occupancy_stacked": 1, "chunked_occupancy": None},
    "persistcol": {"persistent_col": True},  # column layouts (reduced middle dim) persistent too
    "colplain": {"persistent_col": False},  # column layouts one block per (row tile, inner window)
    "words": {"softmax_words": True},  # ragged single-tile softmax rows through int64 words (softmax_words.py)
    "occ1": {"occupancy": 1},
    "occ4": {"occupancy": 4},
    # stacked short rows (softmax over 1000 columns) at 6 blocks per SM instead of 4 (session 12, Nsight Compute:
    # 30 % achieved occupancy, stalls on the shared-memory row reductions; sm_90 R64 -> R40, no spills; 8 spills)
    "occ6stacked": {"occupancy_stacked": 6},  # the default since session 13 (65536x1000 0.087 -> 0.080 ms)
    "occ4stacked": {"occupancy_stacked": 4},
    # short attention rows (session 17: ViT 197 / aligned 200 / CLIP 77 fp16 columns spill under the default 6:
    # sm_90 R72 none / R40 96 B / R80 248 B; at 3: R125 / R80 / R168 and no spill; at 2: R198 / R128 / R254)
    "occ3stacked": {"occupancy_stacked": 3},
    "occ2stacked": {"occupancy_stacked": 2},
    "nohints": {"load_latency": None, "store_tma": None},
    "tmastore": {"store_tma": None},
    "lat3": {"load_latency": 3},
    # full-row kernels (softmax / norms): rows stacked per tile
    "tile4k": {"row_tile_elems": 4096},
    # short attention rows in smaller stacked tiles (sm_90, session 18: ViT 197 R72 -> R48 at 4096 x 8 blocks,
    # CLIP 77 R80 with a 248-byte frame -> R64 / R56 spill-free at 4096 / 2048 x 8)
    "tile2k": {"row_tile_elems": 2048},
    "tile4k_occ8": {"row_tile_elems": 4096, "occupancy_stacked": 8},
    "tile2k_occ8": {"row_tile_elems": 2048, "occupancy_stacked": 8},
    # stacked rows of masked columns with aligned output rows: stores through TMA at occupancy 3 / 4 (softmax /
    # norms, the defaults since session 18), rows per stacked tile at most 32 (the default) or 16
    "plainmasked": {"stacked_masked_tma_occupancy": None, "norm_masked_tma_occupancy": None, "stack_max_rows": None},
    "mtma3": {"stacked_masked_tma_occupancy": 3, "norm_masked_tma_occupancy": 3},
    "mtma4": {"stacked_masked_tma_occupancy": 4, "norm_masked_tma_occupancy": 4},
    "mtma5": {"stacked_masked_tma_occupancy": 5, "norm_masked_tma_occupancy": 5},
    "mtma6": {"stacked_masked_tma_occupancy": 6, "norm_masked_tma_occupancy": 6},
    "recip": {"softmax_approx_recip": True},  # the default since session 18
    "ieeerecip": {"softmax_approx_recip": False},
    # fewer short rows per tile, more blocks per SM (rows off 16 bytes: element loads and stores either way)
    "rows16_occ8": {"stack_max_rows": 16, "occupancy_stacked": 8},
    "rows8_occ12": {"stack_max_rows": 8, "occupancy_stacked": 12},
    "rows8_occ16": {"stack_max_rows": 8, "occupancy_stacked": 16},
    "rows4_occ16": {"stack_max_rows": 4, "occupancy": 16},
    "rows64": {"stack_max_rows": 64},
    "rows16": {"stack_max_rows": 16},
    "tmastore_tile4k_occ8": {"store_tma": None, "row_tile_elems": 4096, "occupancy_stacked": 8},
    "tmastore_occ3": {"store_tma": None, "occupancy_stacked": 3},
    "tile16k": {"row_tile_elems": 16384},
    # long rows: one pass from registers instead of two passes, or wider chunks
    "single32k": {"max_single": 32768},
    # a whole 32768 float32 row as one tile on 8 worker warps, one block per row: spill-free (R168, 132 KB of
    # shared memory) where single32k spills; one pass instead of two (session 8)
    "single32k_ww8": {"max_single": 32768, "worker_warps": 8, "persistent": False},
    # two-pass norms keeping a row's first chunks in registers between the passes (read once): sm_90 spill-free
    # for layer_norm 2048x65536 fp32 with 32768 floats on 8 worker warps (R168) and 16384 on 4 (R255)
    "resident32k_ww8": {"norm_resident_elems": 32768, "worker_warps": 8},
    "resident16k": {"norm_resident_elems": 16384},
    "resident16k_ww8": {"norm_resident_elems": 16384, "worker_warps": 8},
    # two-pass softmax rows likewise (scale+softmax 4096x32768 fp32: 4 or 7 of 8 chunks kept, spill-free on 8 warps)
    "sresident16k_ww8": {"softmax_resident_elems": 16384, "worker_warps": 8},
    "sresident28k_ww8": {"softmax_resident_elems": 28672, "worker_warps": 8},
    # long norm rows (and group norm groups) split over cooperating blocks that read once (norm_split.py, session 9): 8192 /
    # 4096 floats per block at occupancy 2 (sm_90: R128, zero frame; at the compiler's occupancy R255, and
    # tileiras 13.4 segfaulted on the 8192 form of layer_norm 2048x65536)
    "split8k": {"norm_split_elems": 8192},
    "split4k": {"norm_split_elems": 4096},
    # 16384 floats per block (session 10; the default since): at occupancy 2 R128 with a 112-byte frame, 0.377 ms
    # (two-pass 0.404); on 8 worker warps at occupancy 1 R168, 40-byte frame, 0.616 ms
    "split16k": {"norm_split_elems": 16384},
    "split16k_ww8": {"norm_split_elems": 16384, "split_occupancy": 1, "worker_warps": 8},
    # softmax rows past 32768 likewise (softmax_split.py): sm_90 R128, zero frame for 8192 and 16384 fp32
    "ssplit8k": {"softmax_split_elems": 8192},
    "ssplit16k": {"softmax_split_elems": 16384},
    # 32768 per block on 8 worker warps at occupancy 1 (session 10; sm_90 R168, zero frame), as the one-tile
    # 32768-float rows that reach 0.94 of a copy: 0.693 ms vs 0.602 in 16384s (the default)
    "ssplit32k_ww8": {"softmax_split_elems": 32768, "split_occupancy": 1, "worker_warps": 8},
    # rows without a chunk-count divisor near 16384 / 4096: 4-chunk segments and a short last one (session 10;
    # the default since session 11: softmax 4096x50257 fp32 1.044 -> 0.700 ms), the last segment's repeated
    # slots storing their chunk again (session 11's split_skip_repeats off) or two-pass rows
    "ssplit_ragged": {"softmax_split_ragged": True},
    "ssplit_repeat_stores": {"split_skip_repeats": False},
    "ssplit_none": {"softmax_split_ragged": False},
    # split rows with plain chunk loads (session 11, split_chunk_tma, off; sm_90 layer_norm 2048x65536 R128 with a
    # 112-byte frame and 107 KB shared -> R217, no frame, 1 KB; softmax 2048x131072 R128 / 67 KB -> R224 / 1 KB)
    "split_ldg": {"split_chunk_tma": False},
    # split rows' segment statistics folded lane-wise, one reduction per statistic (session 13)
    "lanestats": {"split_lane_stats": True},
    # the blocks of a row wait for its slowest, so 4, 4, 4, 1 chunks keep 13 / 16 of the block time busy: 13
    # blocks of 1 chunk (also at occupancy 4), 5 of 3, 3 of 5, 2 of 7 on 8 warps
    "ssplit4k": {"softmax_split_elems": 4096},
    "ssplit4k_occ4": {"softmax_split_elems": 4096, "split_occupancy": 4},
    "ssplit12k": {"softmax_split_elems": 12288},
    "ssplit20k": {"softmax_split_elems": 20480},
    "ssplit28k_ww8": {"softmax_split_elems": 28672, "split_occupancy": 1, "worker_warps": 8},
    # balanced segments from narrower or wider chunks (session 15): 50257 = 25 chunks of 2048, 5 blocks of 5 (the
    # last 4.5 full); 7 chunks of 8192, one per block (the last 0.13 full)
    "ssplit2k_5x5": {"chunk": 2048, "long_tile_elems": 2048, "softmax_split_elems": 10240},
    "ssplit8k_7": {"chunk": 8192, "softmax_split_elems": 8192},
    # rows off 16-byte alignment through aligned tiles of the flat tensor (softmax_flat.py, session 16; sm_90,
    # softmax 4096x50257 fp32: split rows 128 LDG.E + 128 STG.E of 32 bits per thread; flat 16384 per block R244,
    # 32 LDG.E.128 + 96 STG.E.128 (three branches per tile); zero padding: 64 UTMALDG.1D, R128). H200, same run:
    # split rows 0.704 ms | flat 16384 0.764 | + TMA loads 0.624 | 8192 at occupancy 4 0.547 | + TMA loads 0.513
    # (R64, 8-byte frame; the default since) | TMA loads in tiles of 2048, 16384 per block 0.827. Each variant
    # names every flat knob (tile, elements per block, TMA loads, occupancy)
    "noflat": {"softmax_flat": False},
    "flat16k": _flat(4096, 16384, False, 2),
    "flattma16k": _flat(4096, 16384, True, 2),
    "flat8k_occ4": _flat(4096, 8192, False, 4),
    "flattma8k_occ4": _flat(4096, 8192, True, 4),
    # around the best: occupancy 3 (R80, no frame), 4 tiles of 2048 (R64, no frame), 12288 at 3 (R80, 8 bytes)
    "flattma8k_occ3": _flat(4096, 8192, True, 3),
    "flattma8k_2k_occ4": _flat(2048, 8192, True, 4),
    "flattma12k_occ3": _flat(4096, 12288, True, 3),
    # session 21: bigger blocks shared by 8 worker warps (the same registers per thread as 8192 on 4 warps), so a
    # bf16 block moves as many bytes as a float32 one at the default
    "flattma16k_ww8_occ2": {**_flat(4096, 16384, True, 2), "worker_warps": 8},
    "flattma16k_ww8_occ1": {**_flat(4096, 16384, True, 1), "worker_warps": 8},
    "flattma8k_ww8_occ2": {**_flat(4096, 8192, True, 2), "worker_warps": 8},
    "flattma16k_8k_ww8_occ2": {**_flat(8192, 16384, True, 2), "worker_warps": 8},
    # (session 16 also held 16-bit rows as loaded, widened at each use: log_softmax 4096x50257 bf16 0.374 -> 0.375
    # ms at 8192 per block, 0.392 at 12288, 0.457 at 16384; not kept)
    # aligned rows whose split is ragged through the flat form too (softmax_flat_aligned, the default since
    # session 16: 4096x50256 0.544 -> 0.512 ms); every long row flat (2048x131072: 0.598 -> 0.887) is not
    "noflataligned": {"softmax_flat_aligned": False},
    # group norm groups split in about 16384 / 8192 elements, the last segment short (session 10, off; sm_90
    # R128, zero frame for group_norm(32)+silu 32x256x56x56 fp16: 2 segments of 4 chunks / 4 of 2)
    "gnsplit16k_ragged": {"norm_split_groups": True, "norm_split_ragged": True, "norm_split_elems": 16384},
    "gnsplit8k_ragged": {"norm_split_groups": True, "norm_split_ragged": True, "norm_split_elems": 8192},
    "chunk8k": {"chunk": 8192},
    # long rows, one row per tile and narrower chunks: the lane-wise accumulator of a (2, 4096) tile holds 8192
    # floats per block on top of the loaded tile (few blocks per SM); (1, 2048) / (1, 1024) hold a quarter / eighth
    "chunk2k1r": {"chunk": 2048, "long_tile_elems": 2048},
    "normchunk4k": {"norm_long_chunk": 4096},  # layer/rms norm two-pass: 1 row x 4096 (the previous default)
    "normchunk1k": {"norm_long_chunk": 1024},
    "chunk1k1r": {"chunk": 1024, "long_tile_elems": 1024},
    "chunk4k1r": {"chunk": 4096, "long_tile_elems": 4096},
    "chunk2k2r": {"chunk": 2048, "long_tile_elems": 4096},
    # inner-dim (col layout) windows
    "col32": {"col_min_bi": 32, "col_max_single": 8192},
    "col128": {"col_min_bi": 128, "col_max_single": 32768},
    # group norm: flat (N*G, C/G*HW) rows with per-element weight gathers; the whole group in one (8, 4096) tile
    # (the default until session 7: it spills 177 registers per thread in the sm_90 SASS); channel rows
    # (N*G, C/G, HW) in two passes over HW chunks with per-chunk merged statistics; with lane-wise Welford
    # statistics (the default: (8, 512) chunks)
    "gnflat": {"group_channel_rows": False},
    "gnsingle": {"group_max_single": 32768},
    # the whole group as one tile on 8 worker warps, one block per group: spill-free in the sm_90 cubin (the
    # compiler's warp count spills 704 bytes per thread); one read and one write of the input (session 8)
    "gn1ww8": {"group_max_single": 32768, "worker_warps": 8, "persistent": False},
    "gnchunk4k": {"group_max_single": 16384, "group_chunk": 4096, "lane_group": False},
    "gnchunk8k": {"group_max_single": 8192, "group_chunk": 8192, "lane_group": False},
    "gnlane2k": {"group_max_single": 16384, "group_chunk": 2048},
    # more resident blocks / a load latency hint in the chunk loops of the two-pass forms (AOT sm_90, group norm:
    # occupancy 4 0.6 s, latency 10 0.9 s)
    "chunkocc4": {"chunked_occupancy": 4},
    "chunkocc8": {"chunked_occupancy": 8},
    "chunklat": {"long_latency": 10},
    # plain loads in the chunk loops: tileiras stages every TMA chunk load in shared memory (two-pass layer norm
    # 2048x65536 223 KB, scale+softmax 4096x32768 231 KB, group norm 120 KB per block: one block per SM); plain
    # loads need ~1-5 KB
    "chunkldg": {"chunk_load_tma": False},
    "chunkldg_occ4": {"chunk_load_tma": False, "chunked_occupancy": 4},
    "chunkldg_lat": {"chunk_load_tma": False, "long_latency": 4},
    # eval batch norm: channel rows cut at their largest power-of-two divisor, exact tiles loaded unchecked (the
    # default since session 7); not cut; cut with checked loads; with the load latency / store hints
    "bnunsplit": {"bn_split_rows": False},
    "bnsplit_checked": {"bn_unchecked": False},
    "bnhints": {"bn_hints": True},
    # long rows: per-chunk tile sums of exp (the previous online softmax) instead of lane-wise sums; a load
    # latency hint on the chunk loops (AOT: layer_norm 1.1 s, softmax 12.8 s)
    "lanesum": {"lane_softmax": False},
    "expfull": {"softmax_exp2": False},  # ct.exp (the previous default) instead of exp2
    "exp2long": {"softmax_exp2": True, "long_latency": 10},
    "longlat": {"long_latency": 10},
    # reductions: elements per tile
    "red8k": {"red_tile_elems": 8192},
    "red16k": {"red_tile_elems": 16384},
}
COMMON = ["default", "ww8", "ww8occ1", "unchecked", "old", "nopersist", "persistcol", "colplain", "occ1", "occ4", "nohints", "tmastore", "lat3"]


def variants_for(label: str, family: str) -> list[str]:
    if "group_norm" in label:  # each distinct variant JIT-compiles ~12 s: the few that matter
        return ["default", "gnsplit16k_ragged", "gnsplit8k_ragged", "gn1ww8", "ww8occ1", "gnsingle", "gnchunk8k", "gnlane2k", "chunkocc4", "chunkocc8", "chunklat", "chunkldg",
                "chunkldg_occ4", "chunkldg_lat"]
    names = list(COMMON)
    if family in ("softmax", "norm"):
        names += ["tile4k", "tile16k", "expfull"]
    if family == "softmax":
        names += ["words", "occ4stacked"]
    if "two-pass" in label:
        names += ["lanestats", "chunk8k", "longlat", "exp2long", "chunk4k1r", "chunk2k1r", "chunk2k2r", "chunk1k1r"] + (
            ["split16k", "split_ldg", "split16k_ww8", "split8k", "split4k", "resident32k_ww8", "resident16k", "resident16k_ww8", "normchunk4k", "normchunk1k",
             "chunkocc4"]
            if "norm" in label else []) + (
            ["chunkldg", "chunkldg_occ4", "chunkldg_lat"]) + (
            ["single32k_ww8", "sresident16k_ww8", "sresident28k_ww8", "lanesum", "single32k"] if "32768" in label
            else []) + (["ssplit8k", "ssplit16k", "ssplit32k_ww8", "split_ldg"] if "131072" in label else []) + (
            ["noflataligned"] if "softmax" in label and ("131072" in label or "50256" in label) else []) + (
            ["ssplit_repeat_stores", "ssplit_none", "ssplit4k", "ssplit4k_occ4", "ssplit12k", "ssplit20k",
             "ssplit28k_ww8", "ssplit2k_5x5", "ssplit8k_7", "noflat", "flat16k", "flattma16k",
             "flat8k_occ4", "flattma8k_occ4", "flattma8k_occ3", "flattma8k_2k_occ4", "flattma12k_occ3",
             "flattma16k_ww8_occ2", "flattma16k_ww8_occ1", "flattma8k_ww8_occ2", "flattma16k_8k_ww8_occ2"]
            if "50257" in label else [])
    if family in ("softmax", "norm"):
        names += ["plainmasked", "mtma3", "mtma4", "mtma5", "mtma6", "rows64", "rows16", "ieeerecip"]
    if "attention" in label:
        names += ["occ4stacked", "occ3stacked", "occ2stacked", "tile2k", "tile4k_occ8", "tile2k_occ8", "tmastore", "tmastore_tile4k_occ8", "tmastore_occ3",
                  "rows16_occ8", "rows8_occ12", "rows8_occ16", "rows4_occ16"]
    if "global pool" in label:
        names += ["occ4stacked"]
    if "batch_norm" in label:
        names += ["bnunsplit", "bnsplit_checked", "bnhints"]
    if "inner dim" in label:
        names += ["col32", "col128"]
    if family == "reduction":
        names += ["red8k", "red16k"]
    return names


def generate(spec, overrides):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.rowwise import tuned

    with tuned(**overrides):
        return generate_kernel(spec)


def all_cases():
    by_label = {c[1]: c for c in bk.CASES + EXTRA_CASES}
    return [by_label[label] for label in CASE_LABELS + [c[1] for c in EXTRA_CASES]]


class CaseRun:
    """One case on the GPU: its spec, three input sets, eager and copy times, and the variants timed so far."""

    def __init__(self, case):
        import torch

        from tilestudio.core.kernels.checking import make_inputs

        self.family, self.label, body, inputs, _, _ = case
        self.spec = bk.spec_for(body, inputs)
        self.ins = [make_inputs(self.spec, "cuda", s, bk._index_inputs(self.spec)) for s in range(3)]
        ref_ns = {"torch": torch, "math": math}
        exec(self.spec.reference, ref_ns)  # noqa: S102 - the spec's own reference chain
        ref = ref_ns[self.spec.reference_name]
        self.eager = bk.median_ms(ref, self.ins, reps=20)
        res = ref(*self.ins[0])
        out_bytes = sum(o.numel() * o.element_size() for o in (res if isinstance(res, tuple) else (res,)))
        in_bytes = sum(t.numel() * t.element_size() for t in self.ins[0] if isinstance(t, torch.Tensor))
        self.nbytes = in_bytes + out_bytes
        self.copy = bk.copy_ms(self.nbytes)
        self.results: dict[str, object] = {}
        self.seen: dict[str, str] = {}

    def run(self, name: str) -> None:
        from tilestudio.core.kernels.aot import load_source
        from tilestudio.core.kernels.checking import check_launch, launch_args

        spec = self.spec
        try:
            src = generate(spec, VARIANTS[name])
            if src.skeleton:
                self.results[name] = "skeleton"
                return
            key = hashlib.sha1(src.code.encode()).hexdigest()
            if key in self.seen:
                self.results[name] = f"={self.seen[key]}"
                return
            self.seen[key] = name
            ns = load_source(src)
            check = check_launch(spec, ns, src.launch_name, src.prepare_name, "cuda", seed=7)
            if not check.ok:
                self.results[name] = "WRONG"
                print(f"  {self.label} {name}: WRONG {check.message}", file=sys.stderr, flush=True)
                return
            sets = [launch_args(spec, ns, src.prepare_name, x) for x in self.ins]
            self.results[name] = bk.median_ms(ns[src.launch_name], sets, reps=20)
        except Exception as exc:  # noqa: BLE001 - one variant never stops the table
            self.results[name] = "ERROR"
            print(f"  {self.label} {name}: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr, flush=True)
        print(f"  {self.label} {name}: {self.results[name]}", file=sys.stderr, flush=True)


def aot_all(cases, names_filter) -> int:
    """CPU: generate and AOT-compile (sm_90) every distinct variant of every case."""
    from tilestudio.core.kernels.aot import compile_launch, trace_launches

    bad = 0
    for case in cases:
        spec = bk.spec_for(case[2], case[3])
        seen = {}
        for name in variants_for(case[1], case[0]):
            if names_filter and name not in names_filter:
                continue
            src = generate(spec, VARIANTS[name])
            key = hashlib.sha1(src.code.encode()).hexdigest()
            if key in seen:
                print(f"{case[1]:48s} {name:10s} = {seen[key]}", flush=True)
                continue
            seen[key] = name
            import linecache

            fname = f"<kernel {spec.id}>"
            linecache.cache[fname] = (len(src.code), None, src.code.splitlines(True), fname)
            t = time.time()
            try:
                sizes = [compile_launch(r, "sm_90")[0] for r in trace_launches(src, spec)]
                print(f"{case[1]:48s} {name:10s} ok {sizes} {time.time() - t:.1f}s  {src.notes[0][-70:]}",
                      flush=True)
            except Exception as exc:  # noqa: BLE001
                bad += 1
                print(f"{case[1]:48s} {name:10s} FAIL {type(exc).__name__}: {str(exc)[:200]}", flush=True)
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="", help="comma-separated words; a case runs if its label has one")
    parser.add_argument("--variants", default="", help="comma-separated variant names (default: all that apply)")
    parser.add_argument("--budget", type=float, default=110.0, help="seconds before remaining variants are skipped")
    parser.add_argument("--aot", action="store_true", help="CPU: only generate and AOT-compile every variant")
    args = parser.parse_args()
    words = [w for w in args.cases.split(",") if w]
    cases = [c for c in all_cases() if not words or any(w in c[1] for w in words)]
    names_filter = [n for n in args.variants.split(",") if n]
    if args.aot:
        return aot_all(cases, names_filter)
    import torch

    if not torch.cuda.is_available():
        print("bench/variants_rowwise.py needs a CUDA GPU (or --aot)", file=sys.stderr)
        return 2
    start = time.time()
    deadline = start + args.budget
    runs = []
    for case in cases:
        try:
            runs.append(CaseRun(case))
        except Exception as exc:  # noqa: BLE001
            print(f"{case[1]}: ERROR {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr, flush=True)
    # variant-major order: every case gets `default` and `old` first, so a time-limited run stays comparable
    order = list(dict.fromkeys(n for r in runs for n in variants_for(r.label, r.family)))
    if names_filter:  # the order given on the command line (most wanted first, should the budget run out)
        order = [n for n in names_filter if n in order]
    def interrupted(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)  # `timeout` sends SIGTERM: still print what was measured
    try:
        for name in order:
            if names_filter and name not in names_filter:
                continue
            for r in runs:
                if name not in variants_for(r.label, r.family):
                    continue
                if time.time() > deadline:
                    r.results[name] = "skip(time)"
                    continue
                r.run(name)
    except KeyboardInterrupt:
        print("interrupted: the table below has what was measured", file=sys.stderr)
    rows = [(r.label, r.nbytes, r.copy, r.eager, r.results) for r in runs]
    print(f"\nrow-wise variants on {torch.cuda.get_device_name()} ({time.time() - start:.0f} s); "
          "per variant: ms (fraction of copy); '=x' same code as x; * best")
    for label, nbytes, ceil, eager, results in rows:
        timed = {k: v for k, v in results.items() if isinstance(v, float)}
        best = min(timed, key=timed.get) if timed else None
        cells = []
        for name, v in results.items():
            if isinstance(v, float):
                cells.append(f"{name}{'*' if name == best else ''} {v:.3f} ({ceil / v:.2f})")
            else:
                cells.append(f"{name} {v}")
        head = f"{label} [{nbytes / 1e6:.0f} MB] copy {ceil:.3f} eager {eager:.3f} ({ceil / eager:.2f})"
        if best:
            head += f" best {best} {eager / timed[best]:.2f}x eager"
        print(head)
        print("    " + " | ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
