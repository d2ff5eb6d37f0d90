"""Memory-bound kernel variants (GPU): for the slow cases of bench/kernels.py, time each alternative tile size /
layout of core/kernels/indexing.MEMORY_TUNING against PyTorch eager and a device copy of the same bytes.

    python bench/variants_memory.py [--only pool] [--reps 20]

Per variant: the generator runs with the overrides applied to MEMORY_TUNING, the kernel is checked against the
float64 reference (checking.check_launch), then timed with CUDA events (warm-up, median of --reps, three fresh
random input sets rotated between reps). "of copy" = copy time of the same bytes / kernel time; "vs eager" =
eager time / kernel time. The row marked * is the current default; to switch a default, edit MEMORY_TUNING.
Prints progress on stderr and a compact table last. Budget: ~40 variants (~2-3 s each: JIT compile, check, timing),
under 150 s on an H200; `--only` runs one case.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels import CASES, _index_inputs, copy_ms, median_ms, moved_bytes, print_table, spec_for  # noqa: E402 - bench/kernels.py helpers

def _shifted(inner: str, outputs: int, rows: int, cols: int) -> tuple[str, dict]:
    """A shifted-path max_pool variant: `outputs` per block as (channels x rows x cols) output tiles."""
    return (f"{inner} {outputs}: {outputs // (rows * cols)} rows x {rows}x{cols}",
            {"pool_pair_windows": False, "pool_overlap_mode": "shifted", "pool_overlap_inner": inner,
             "pool_overlap_outputs": outputs, "pool_overlap_rows": rows, "pool_overlap_cols": cols})


# the one-pass look-back cumsum with chunk-major tickets and 8-word walks (session 14)
LOOKBACK_CM = {"scan_lookback": True, "scan_lookback_chunk_major": True, "scan_lookback_window": 8}


def _lookback_forms() -> list[tuple[str, dict]]:
    plain = dict(LOOKBACK_CM, scan_lookback_window=1, scan_chunk_tma=False, scan_lookback_store_tma=False)
    forms = [(4096, 4, True, False), (4096, 4, False, True), (4096, 4, True, True),
             (4096, 6, True, True), (2048, 8, True, True), (8192, 3, True, True), (4096, 6, True, False),
             (2048, 8, True, False)]
    out = []
    for chunk, occ, plain_io, early in forms:
        knobs = dict(plain if plain_io else dict(LOOKBACK_CM, scan_lookback_window=1), scan_chunk_elems=chunk,
                     scan_lookback_occupancy=occ, scan_lookback_early_total=early)
        name = (f"one pass, chunk {chunk}, chunk-major, occupancy {occ}" + (", plain loads+stores" if plain_io else "")
                + (", early total" if early else "") + " (lookback)")
        out.append((name, knobs))
    return out


def _fused_forms(forms) -> list[tuple[str, dict]]:
    """Segmented cumsums in one kernel (session 14, scan_fused_segments): (chunks per segment, occupancy, plain
    loads and stores)."""
    out = []
    for cps, occ, plain_io in forms:
        knobs = {"scan_fused_segments": cps, "scan_fused_occupancy": occ}
        if plain_io:
            knobs.update(scan_chunk_tma=False, scan_lookback_store_tma=False)
        out.append((f"fused segments of {cps} chunks, occupancy {occ}" + (", plain loads+stores" if plain_io else ""),
                    knobs))
    return out


# case label (as in bench/kernels.py) → list of (variant name, MEMORY_TUNING overrides)
VARIANTS = {
    "gelu bf16 64M": [
        ("IEEE div + ct.exp (old math)", {"approx_recip": False, "exp2": False}),
        ("erfc constants unfolded (old), block 4096", {"erfc_folded": False}),
        ("erfc constants folded, block 4096", {}),
        ("erfc constants folded, block 2048", {"elementwise_block_bytes": 4096}),
        ("erfc constants unfolded, block 2048", {"erfc_folded": False, "elementwise_block_bytes": 4096}),
        ("erfc constants folded, block 1024", {"elementwise_block_bytes": 2048}),
    ],
    "x+y bf16 64M": [
        ("checked loads, block 4096", {"elementwise_unchecked_full": False}),
        ("unchecked loads, block 4096", {}),
        ("unchecked loads, block 8192", {"elementwise_block_elems": 8192}),
        ("block 2048", {"elementwise_block_elems": 2048}),
        ("store allow_tma", {"elementwise_store_hint": ", allow_tma=True"}),
        ("load latency 10", {"elementwise_load_hint": ", latency=10"}),
    ],
    "sigmoid(2x+1)*y fp32 64M": [
        ("checked loads, block 4096", {"elementwise_unchecked_full": False}),
        ("unchecked loads, block 4096", {}),
        ("unchecked loads, block 2048", {"elementwise_block_bytes": 8192}),
    ],
    "bias+relu bcast fp16": [
        ("checked loads, block 4096", {"elementwise_unchecked_full": False}),
        ("unchecked loads, block 4096", {}),
        ("unchecked loads, block 8192", {"elementwise_block_elems": 8192}),
    ],
    "max_pool2d 2x2 64x128x112x112 bf16": [
        ("rows 32768, in-kernel reshape", {"pool_aligned_pairs": False, "pool_quads": False}),
        ("int32 pairs 8192", {"pool_quads": False, "pool_pairs_bytes": 16384}),
        ("int32 pairs 16384", {"pool_quads": False, "pool_pairs_bytes": 32768}),
        ("int32 pairs 32768", {"pool_quads": False, "pool_pairs_bytes": 65536}),
        ("int64 quads, 32 KB", {"pool_quads_bytes": 32768}),
        ("int64 quads, 16 KB", {}),
    ],
    "max_pool2d 3x3/2 32x128x112x112 fp32": [
        ("gathers", {"pool_pairs_fp32": False}),
        # session 9: 512 < 1024 (0.069 / 0.072 ms)
        ("int64 pairs, 512 outs", {"pool_pairs_fp32": True, "pool_pairs_flat": False}),
        ("int64 pairs, 1024 outs", {"pool_pairs_flat": False, "pool_pair64_window_outputs": 1024}),
        ("int64 pairs, 2048 outs", {"pool_pairs_flat": False, "pool_pair64_window_outputs": 2048}),
        ("int64 pairs, 256 outs (smaller)", {"pool_pairs_flat": False, "pool_pair64_window_outputs": 256}),
        # the output as one flat run, dense vector stores, gathered pairs (session 11, pool_pairs_flat; sm_90
        # 1024: R114, 24 LDG + 24 LDG.64 + 2 STG.128 per thread, against 12 + 12 + 4 STG for 512 outputs;
        # session 12: 512 0.064 ms < 1024 0.072 < 2048 0.080, adopted)
        ("flat pairs, 512 outs", {"pool_pairs_flat": True, "pool_pairs_flat_outputs": 512}),
        ("flat pairs, 1024 outs", {"pool_pairs_flat_outputs": 1024}),
        ("flat pairs, 2048 outs", {"pool_pairs_flat_outputs": 2048}),
    ],
    "max_pool2d 2x2 32x128x112x112 fp32": [
        ("rows 32768, in-kernel reshape", {"pool_pairs_fp32": False}),
        ("int64 pairs 8192", {"pool_pairs_fp32": True}),
        ("int64 pairs 16384", {"pool_pairs_fp32": True, "pool_pairs_bytes": 65536}),
    ],
    "embedding 65536x1024 bf16": [
        ("4096 elements per tile", {"embedding_words": False}),
        ("2048 elements per tile", {"embedding_words": False, "gather_tile_elems": 2048}),
        ("8192 elements per tile", {"embedding_words": False, "gather_tile_elems": 8192}),
        ("16384 elements per tile", {"embedding_words": False, "gather_tile_elems": 16384}),
        ("int64 words, 4096 elements per tile", {}),
        ("int64 words, 8192 elements per tile", {"gather_tile_elems": 8192}),
    ],
    "pad 1,1,1,1 64x128x112x112 fp16": [
        ("words, 2048 per block", {}),
        ("gathers, 4096 elements per tile", {"pad_words": False}),
        ("gathers, 2048 elements per tile", {"pad_words": False, "gather_tile_elems": 2048}),
        ("words, 4096 per block", {"pad_words_tile": 4096}),
        ("words, 8192 per block", {"pad_words_tile": 8192}),
        # smaller blocks (session 7 ran 2048 < 4096 < 8192 words, fastest first)
        ("words, 1024 per block (smaller)", {"pad_words_tile": 1024}),
        ("words, 512 per block (smaller)", {"pad_words_tile": 512}),
        # the output as one flat run of words, dense vector stores, input words gathered (session 11; sm_90
        # 2048: R64, 9 KB shared, 4 STG.128 instead of 16 STG per thread)
        ("flat words, 2048 per block", {"pad_words_flat": True}),
        ("flat words, 1024 per block", {"pad_words_flat": True, "pad_flat_tile": 1024}),
        ("flat words, 4096 per block", {"pad_words_flat": True, "pad_flat_tile": 4096}),
    ],
    "max_pool2d 3x3/2 64x128x112x112 fp16": [
        ("gather 2048 outs (old)", {"pool_pair_windows": False, "pool_quads": False, "pool_overlap_mode": "gather",
                                    "pool_window_outputs": 2048}),
        ("int32 pairs, 1024 outs", {"pool_quads": False, "pool_pair_window_outputs": 1024}),
        ("int32 pairs, 2048 outs", {"pool_quads": False, "pool_pair_window_outputs": 2048}),
        ("int32 pairs, 4096 outs", {"pool_quads": False, "pool_pair_window_outputs": 4096}),
        ("int64 quads, 1024 outs", {}),
        ("int64 quads, 2048 outs", {"pool_pair_window_outputs": 2048}),
        # smaller blocks (session 7: 1024 outputs 0.090 ms, 2048 0.109; int32 pairs 1024 < 2048 < 4096 likewise)
        ("int64 quads, 512 outs (smaller)", {"pool_pair_window_outputs": 512}),
        ("int64 quads, 256 outs (smaller)", {"pool_pair_window_outputs": 256}),
        # the output as a flat run of int32 words, dense stores, gathered input words (session 11; sm_90 1024
        # words: R104, 24 LDG.64 + 24 LDG.U16 + 2 STG.128 per thread)
        ("flat quads, 1024 words", {"pool_quads_flat": True}),
        ("flat quads, 512 words", {"pool_quads_flat": True, "pool_quads_flat_words": 512}),
        ("flat quads, 2048 words", {"pool_quads_flat": True, "pool_quads_flat_words": 2048}),
        _shifted("split", 1024, 8, 16),
        _shifted("merged", 1024, 8, 16),
    ],
    "adaptive_avg_pool2d(1) 128x512x28x28 fp32": [
        ("256 cols x 4096", {"pool_global_cols": 256, "pool_global_elems": 4096}),
        ("512 cols x 4096", {"pool_global_cols": 512, "pool_global_elems": 4096}),
        ("512 cols x 8192", {"pool_global_cols": 512, "pool_global_elems": 8192}),
        ("1024 cols x 8192", {"pool_global_cols": 1024, "pool_global_elems": 8192}),
        ("256 cols x 8192", {"pool_global_cols": 256, "pool_global_elems": 8192}),
        ("256 cols x 8192, plain loads", {"pool_global_elems": 8192, "pool_global_tma": False}),
        # larger tiles (4096 -> 8192 -> 16384 elements: 0.112 -> 0.085 -> 0.060 ms over sessions 7-9)
        ("256 cols x 16384", {"pool_global_cols": 256, "pool_global_elems": 16384}),
        ("256 cols x 32768 (bigger)", {"pool_global_cols": 256, "pool_global_elems": 32768}),
    ],
    # scans: scan_max_single / scan_tile_elems / scan_chunk_elems / scan_col_bi / scan_min_blocks (segments)
    "cumsum dim=1 64x4096x64 bf16 (inner dim)": [
        # one pass, no segments: each block walks all 4096 rows of a narrow column strip with its carry
        ("bi 8, one pass, 512 blocks", {"scan_mma": False, "scan_col_bi": 8, "scan_col_min_blocks": 256}),
        ("bi 16, one pass, 256 blocks", {"scan_mma": False, "scan_col_bi": 16, "scan_col_min_blocks": 128}),
        ("bi 16, chunk 8192, one pass", {"scan_mma": False, "scan_col_bi": 16, "scan_col_min_blocks": 128,
                                         "scan_chunk_elems": 8192}),
        ("bi 32, one pass, 128 blocks", {"scan_mma": False, "scan_col_bi": 32, "scan_col_min_blocks": 64}),
        ("bi 32, chunk 2048, >=264 blocks (~old)", {"scan_mma": False, "scan_col_bi": 32, "scan_chunk_elems": 2048,
                                                    "scan_col_min_blocks": 264}),
        ("bi 64, chunk 4096, >=512 blocks", {"scan_mma": False, "scan_col_bi": 64, "scan_chunk_elems": 4096,
                                             "scan_col_min_blocks": 512}),
        ("bi 64, chunk 4096, >=1024 blocks", {"scan_mma": False, "scan_col_bi": 64, "scan_chunk_elems": 4096,
                                              "scan_col_min_blocks": 1024}),
        ("bi 64, chunk 4096, >=2048 blocks", {"scan_mma": False, "scan_col_bi": 64, "scan_chunk_elems": 4096,
                                              "scan_col_min_blocks": 2048}),
        ("bi 64, chunk 4096, >=512 blocks, 8 worker warps", {"scan_mma": False, "worker_warps": 8}),
        # each (64 x 64) chunk scanned on tensor cores as lower-triangular ones @ chunk (scan_mma, the default
        # since session 10, >= 128 blocks): with the in-tile scan's segments, with the default, and one pass
        ("bi 64, chunk 4096, >=512 blocks, tensor-core chunks", {"scan_mma_col_min_blocks": 512}),
        ("bi 64, chunk 4096, >=128 blocks, tensor-core chunks", {}),
        ("bi 64, chunk 4096, one pass, tensor-core chunks", {"scan_mma_col_min_blocks": 0}),
        # plain chunk loads (MEMORY_TUNING["scan_chunk_tma"]; sm_90 totals kernel 52 KB -> 2 KB shared per block)
        ("bi 64, chunk 4096, >=128 blocks, tensor-core chunks, plain loads", {"scan_chunk_tma": False}),
        # one pass (session 8): a block per (row, chunk) in ticket order, per-lane decoupled look-back
        ("one pass, chunk 4096 (lookback)", {"scan_lookback": True}),
        ("one pass, chunk 2048 (lookback)", {"scan_lookback": True, "scan_chunk_elems": 2048}),
        ("one pass, chunk 8192 (lookback)", {"scan_lookback": True, "scan_chunk_elems": 8192}),
        # session 14: chunk-major tickets, 8-word walks (sm_90: R168 S66920; occupancy 3 / 2)
        ("one pass, chunk 4096, chunk-major, window 8 (lookback)", LOOKBACK_CM),
        ("one pass, chunk 4096, chunk-major, window 8, occupancy 3 (lookback)",
         dict(LOOKBACK_CM, scan_lookback_occupancy=3)),
        ("one pass, chunk 2048, chunk-major, window 8, occupancy 4 (lookback)",
         dict(LOOKBACK_CM, scan_chunk_elems=2048, scan_lookback_occupancy=4)),
        ("one pass, chunk 8192, chunk-major, window 8, occupancy 2 (lookback)",
         dict(LOOKBACK_CM, scan_chunk_elems=8192, scan_lookback_occupancy=2)),
        *_fused_forms([(4, 4, False), (2, 4, False), (8, 4, False), (16, 4, False), (4, 3, False), (4, 4, True)]),
        ("bi 64, chunk 8192, >=1024 blocks", {"scan_col_bi": 64, "scan_chunk_elems": 8192,
                                              "scan_col_min_blocks": 1024}),
        ("bi 64, >=512 blocks, load latency 10", {"scan_latency": 10}),
        ("bi 64, >=512 blocks, plain loads", {"chunk_load_tma": False}),
        # occupancy hints for the totals / scan passes (session 12; sm_90 R255 -> R128 / R128 or R64 / R80; the
        # default 4 / 3 since session 13)
        ("default segments, occupancy 2 / 2", {"scan_totals_occupancy": 2, "scan_segment_occupancy": 2}),
        ("default segments, no occupancy hints", {"scan_totals_occupancy": None, "scan_segment_occupancy": None}),
    ],
    "cumsum 64x1048576 fp32 (chunked carry)": [
        ("chunk 2048, >=264 blocks (~old)", {"scan_chunk_elems": 2048, "scan_min_blocks": 264}),
        ("chunk 4096, >=1024 blocks", {"scan_chunk_elems": 4096, "scan_min_blocks": 1024}),
        ("chunk 4096, >=2048 blocks", {"scan_chunk_elems": 4096, "scan_min_blocks": 2048}),
        ("chunk 8192, >=1024 blocks", {"scan_chunk_elems": 8192, "scan_min_blocks": 1024}),
        ("chunk 4096, >=1024 blocks, load latency 4", {"scan_latency": 4}),
        # plain loads instead of TMA tiles staged in shared memory (MEMORY_TUNING["scan_chunk_tma"]; sm_90 totals
        # kernel R255 with 149 KB -> R78 with 1 KB per block, scan kernel R255 -> R168)
        ("chunk 4096, >=1024 blocks, plain loads", {"scan_chunk_tma": False}),
        ("chunk 4096, >=1024 blocks, plain loads, latency 4", {"scan_chunk_tma": False, "scan_latency": 4}),
        ("chunk 4096, >=1024 blocks, load latency 10", {"scan_latency": 10}),
        # two warp groups per block (rowwise TUNING worker_warps): R255 -> R168 per thread in both kernels
        ("chunk 4096, >=1024 blocks, 8 worker warps", {"worker_warps": 8}),
        # one pass (session 8): a block per chunk in ticket order, prefixes by decoupled look-back
        ("one pass, chunk 4096 (lookback)", {"scan_lookback": True}),
        ("one pass, chunk 8192 (lookback)", {"scan_lookback": True, "scan_chunk_elems": 8192}),
        ("one pass, chunk 8192, 8 worker warps (lookback)", {"scan_lookback": True, "scan_chunk_elems": 8192,
                                                             "worker_warps": 8}),
        # session 10 (off): each chunk's block reads all earlier totals of its row at once (no walk, no chain)
        ("one pass, chunk 4096 (all earlier totals)", {"scan_lookback": True, "scan_lookback_all": True}),
        ("one pass, chunk 8192 (all earlier totals)", {"scan_lookback": True, "scan_lookback_all": True,
                                                       "scan_chunk_elems": 8192}),
        # session 14: tickets chunk-major across rows (a few chunks of every row in flight, not all of a few
        # rows) and walks reading 8 status words per round trip, with occupancy hints (sm_90: R255 -> R64 at 4)
        ("one pass, chunk 4096, chunk-major, window 8 (lookback)", LOOKBACK_CM),
        ("one pass, chunk 4096, chunk-major, window 8, occupancy 4 (lookback)",
         dict(LOOKBACK_CM, scan_lookback_occupancy=4)),
        ("one pass, chunk 4096, chunk-major, occupancy 4 (lookback)",
         dict(LOOKBACK_CM, scan_lookback_window=1, scan_lookback_occupancy=4)),
        ("one pass, chunk 4096, window 8, occupancy 4 (lookback)",
         dict(LOOKBACK_CM, scan_lookback_chunk_major=False, scan_lookback_occupancy=4)),
        ("one pass, chunk 8192, chunk-major, window 8, occupancy 2 (lookback)",
         dict(LOOKBACK_CM, scan_chunk_elems=8192, scan_lookback_occupancy=2)),
        ("one pass, chunk 2048, chunk-major, window 16, occupancy 6 (lookback)",
         dict(LOOKBACK_CM, scan_chunk_elems=2048, scan_lookback_window=16, scan_lookback_occupancy=6)),
        # the walk one word at a time (0.191 ms above, window 8 0.201): occupancy, chunk and load forms around it
        # (sm_90: plain loads R64 S42064 at 4; chunk 2048 at 8 R32 F56; chunk 8192 plain loads at 3 R80 F64)
        ("one pass, chunk 4096, chunk-major, window 2, occupancy 4 (lookback)",
         dict(LOOKBACK_CM, scan_lookback_window=2, scan_lookback_occupancy=4)),
        ("one pass, chunk 4096, chunk-major, occupancy 4, plain loads (lookback)",
         dict(LOOKBACK_CM, scan_lookback_window=1, scan_lookback_occupancy=4, scan_chunk_tma=False)),
        ("one pass, chunk 4096, chunk-major, occupancy 5, plain loads (lookback)",
         dict(LOOKBACK_CM, scan_lookback_window=1, scan_lookback_occupancy=5, scan_chunk_tma=False)),
        ("one pass, chunk 2048, chunk-major, occupancy 6 (lookback)",
         dict(LOOKBACK_CM, scan_chunk_elems=2048, scan_lookback_window=1, scan_lookback_occupancy=6)),
        ("one pass, chunk 2048, chunk-major, occupancy 8 (lookback)",
         dict(LOOKBACK_CM, scan_chunk_elems=2048, scan_lookback_window=1, scan_lookback_occupancy=8)),
        ("one pass, chunk 8192, chunk-major, occupancy 2 (lookback)",
         dict(LOOKBACK_CM, scan_chunk_elems=8192, scan_lookback_window=1, scan_lookback_occupancy=2)),
        ("one pass, chunk 8192, chunk-major, occupancy 3, plain loads (lookback)",
         dict(LOOKBACK_CM, scan_chunk_elems=8192, scan_lookback_window=1, scan_lookback_occupancy=3,
              scan_chunk_tma=False)),
        # plain loads and stores (no TMA staging, no producer warps: sm_90 chunk 4096 S25600, R128 at 4, R80 F16 at
        # 6; chunk 2048 at 8 R64 F0; chunk 8192 at 3 R168 F0) and the total published before the chunk's scan
        *_lookback_forms(),
        *_fused_forms([(4, 4, False), (2, 4, False), (8, 4, False), (4, 3, False), (4, 6, False), (4, 4, True),
                       (8, 4, True)]),
        ("one pass, chunk 8192, 8 worker warps (all earlier totals)", {"scan_lookback": True,
                                                                       "scan_lookback_all": True,
                                                                       "scan_chunk_elems": 8192, "worker_warps": 8}),
        # each chunk's 64-wide blocks scanned on tensor cores, tf32 hi + lo (session 9, scan_mma_rows; sm_90
        # R255 with an 8-byte frame in the scan kernel), with the default segments and with fewer
        ("chunk 4096, >=1024 blocks, tensor-core blocks", {"scan_mma_rows": True}),
        ("chunk 4096, >=256 blocks, tensor-core blocks", {"scan_mma_rows": True, "scan_min_blocks": 256}),
        # occupancy hints for the totals / scan passes (session 12: the scan pass ran one block per SM, R255;
        # 4 / 3 is the default since session 13: 0.283 -> 0.224 ms)
        ("chunk 4096, >=1024 blocks, no occupancy hints",
         {"scan_totals_occupancy": None, "scan_segment_occupancy": None}),
        ("chunk 4096, >=1024 blocks, occupancy 2 / 2",
         {"scan_totals_occupancy": 2, "scan_segment_occupancy": 2}),
        ("chunk 4096, >=1024 blocks, occupancy - / 2", {"scan_totals_occupancy": None, "scan_segment_occupancy": 2}),
    ],
    "cumsum 4096x4096 fp32": [
        ("1 row x 4096 per tile", {"scan_max_single": 4096, "scan_tile_elems": 4096}),
        ("2 rows x 4096 per tile", {"scan_max_single": 4096, "scan_tile_elems": 8192}),
        ("2 chunks of 2048 + carry", {"scan_max_single": 2048, "scan_tile_elems": 2048, "scan_chunk_elems": 2048}),
        ("1 row x 4096 per tile, persistent", {"scan_persistent": True}),
        # occupancy hints (MEMORY_TUNING["scan_single_occupancy"]; sm_90 R168 -> R127 at 4, R80 with a 16-byte
        # spill frame at 6)
        ("1 row x 4096 per tile, occupancy 4", {"scan_single_occupancy": 4}),
        ("1 row x 4096 per tile, occupancy 6", {"scan_single_occupancy": 6}),
        ("1 row x 4096 per tile, 8 worker warps", {"worker_warps": 8}),
        # 64-wide blocks scanned on tensor cores (tf32 hi + lo), block prefixes after (session 9, scan_mma_rows)
        ("1 row x 4096 per tile, tensor-core blocks", {"scan_mma_rows": True}),
    ],
    # cross entropy, plain (N, C) logits: classes per chunk x rows per block
    "cross_entropy 4096x65536 bf16": [
        ("1024 x 4 rows", {"ce_cols": 1024, "ce_tile_elems": 4096}),
        ("2048 x 2 rows", {"ce_cols": 2048, "ce_tile_elems": 4096}),
        ("1024 x 8 rows", {"ce_cols": 1024, "ce_tile_elems": 8192}),
        ("2048 x 4 rows", {"ce_cols": 2048, "ce_tile_elems": 8192}),
        ("4096 x 1 row, load latency 4", {"ce_cols": 4096, "ce_tile_elems": 4096, "ce_latency": 4}),
        ("4096 x 1 row, no latency hint", {"ce_latency": None}),
        ("4096 x 1 row, load latency 10", {"ce_latency": 10}),
        # wider chunks (session 7: 4096 x 1 row beat 2048 x 2 and 1024 x 4)
        ("8192 x 1 row (bigger)", {"ce_cols": 8192, "ce_tile_elems": 8192}),
        # per-lane running maxima and sums, no row max per chunk (session 12, ce_lane_max)
        ("4096 x 1 row, lane maxima", {"ce_lane_max": True}),
        ("8192 x 1 row, lane maxima", {"ce_lane_max": True, "ce_cols": 8192, "ce_tile_elems": 8192}),
        ("2048 x 2 rows, lane maxima", {"ce_lane_max": True, "ce_cols": 2048}),
        # exponentials flushing denormal results: no range fix-up around MUFU.EX2 (session 12, ce_exp_ftz)
        ("4096 x 1 row, exp2 ftz", {"ce_exp_ftz": True}),  # session 12: 0.164 ms < 0.171, adopted
        ("4096 x 1 row, exp with range fix-up (old)", {"ce_exp_ftz": False}),
        ("2048 x 2 rows, exp2 ftz", {"ce_exp_ftz": True, "ce_cols": 2048}),
        ("8192 x 1 row, exp2 ftz", {"ce_exp_ftz": True, "ce_cols": 8192, "ce_tile_elems": 8192}),
    ],
}

# since session 14 long cumsum rows too few for a chunk loop each take the one-pass look-back by default
# (MEMORY_TUNING["scan_lookback_rows"]): the row case's segmented and fused variants turn it off to be measured
VARIANTS["cumsum 64x1048576 fp32 (chunked carry)"] = [
    (name, knobs if knobs.get("scan_lookback") else dict(knobs, scan_lookback_rows=False))
    for name, knobs in VARIANTS["cumsum 64x1048576 fp32 (chunked carry)"]] + [
    ("segmented, two kernels (the default before session 14)", {"scan_lookback_rows": False})]
# shapes outside bench/kernels.py whose default form changed with scan_lookback_rows (session 14): rows that
# were segmented (512 rows of 4 chunks; an exclusive cumsum, 128 rows of 16) and a chunk loop per row (256 rows
# of 2 chunks)
SCOPE_CASES = [
    ("scan", "cumsum 512x16384 fp32 (look-back scope)", "def forward(self, x):\n        return x.cumsum(-1)",
     "[torch.randn(512, 16384)]", "mem", None),
    ("scan", "cumsum 256x8192 bf16 (look-back scope)", "def forward(self, x):\n        return x.cumsum(-1)",
     "[torch.randn(256, 8192, dtype=torch.bfloat16)]", "mem", None),
    ("scan", "exclusive cumsum 128x65536 fp32 (look-back scope)",
     "def forward(self, x):\n        return x.cumsum(-1) - x", "[torch.randn(128, 65536)]", "mem", None),
]
for _case in SCOPE_CASES:
    VARIANTS[_case[1]] = [("one pass by look-back, split scan (default since session 15)", {}),
                          ("one pass by look-back, plain ct.cumsum (session 14)", {"scan_split_width": 0}),
                          ("chunk loop / segments, plain ct.cumsum (before session 14)",
                           {"scan_lookback_rows": False, "scan_split_width": 0})]

# the look-back variants name what they change from the look-back as it was before session 14 (line by line, no
# occupancy hint, the compiler's TMA loads and stores), not from today's look-back defaults
LOOKBACK_BASE = {"scan_lookback_chunk_major": False, "scan_lookback_window": 1, "scan_lookback_occupancy": None,
                 "scan_lookback_load_tma": None, "scan_lookback_store_tma": None}
for _label in ("cumsum 64x1048576 fp32 (chunked carry)", "cumsum dim=1 64x4096x64 bf16 (inner dim)"):
    VARIANTS[_label] = [(name, dict(LOOKBACK_BASE, **knobs) if knobs.get("scan_lookback") else knobs)
                        for name, knobs in VARIANTS[_label]]

# row cumsums scanned in blocks of 4 elements, 2 or 3 levels (session 15, scan_split_width / scan_split_levels; the
# default since): sm_90, 4096 floats on 4 warps, 160 -> 40 / 26 shuffles, 48 -> 16 / 21 shared loads
SPLIT = [("plain ct.cumsum (before session 15)", {"scan_split_width": 0}),
         ("split scan, blocks of 4, 2 levels", {"scan_split_width": 4, "scan_split_levels": 2}),
         ("split scan, blocks of 4, 3 levels", {"scan_split_width": 4, "scan_split_levels": 3})]
for _label in ["cumsum 64x1048576 fp32 (chunked carry)", "cumsum 4096x4096 fp32"]:
    VARIANTS[_label] = VARIANTS[_label] + SPLIT
VARIANTS["cumsum 64x1048576 fp32 (chunked carry)"] += [
    (f"split scan, blocks of 4, 2 levels, look-back occupancy {occ}",
     {"scan_split_width": 4, "scan_lookback_occupancy": occ}) for occ in (4, 8)] + [
    ("split scan, blocks of 4, 2 levels, chunks of 8192, look-back occupancy 4 (sm_90 R126)",
     {"scan_split_width": 4, "scan_chunk_elems": 8192, "scan_lookback_occupancy": 4})]
VARIANTS["cumsum 4096x4096 fp32"] += [
    (f"split scan, blocks of 4, 2 levels, occupancy {occ}", {"scan_split_width": 4, "scan_single_occupancy": occ})
    for occ in (6, 8)]
for _case in SCOPE_CASES:
    VARIANTS[_case[1]] += [("one pass by look-back, split scan, blocks of 4, 3 levels", {"scan_split_levels": 3}),
                           ("chunk loop / segments, split scan, blocks of 4, 2 levels", {"scan_lookback_rows": False})]
# cross entropy over GPT-2's vocabulary: 50257-class bf16 rows start off 16-byte alignment (every row's loads are
# 16-bit element loads in sm_90 SASS, where 65536 classes load through TMA)
VOCAB_CASES = [
    ("loss", "cross_entropy 4096x50257 bf16 (rows off 16 bytes)", "def forward(self, x, t):\n        return F.cross_entropy(x, t)",
     "[torch.randn(4096, 50257, dtype=torch.bfloat16), torch.randint(0, 50257, (4096,))]", "mem", None),
    # an odd row count: 4095 * 50257 logits are not a multiple of 16, so the flat tiles come from the largest
    # multiple-of-16 prefix and the last tile is gathered (session 17; (N, C) tiles before)
    ("loss", "cross_entropy 4095x50257 bf16 (rows off 16 bytes, odd rows)", "def forward(self, x, t):\n        return F.cross_entropy(x, t)",
     "[torch.randn(4095, 50257, dtype=torch.bfloat16), torch.randint(0, 50257, (4095,))]", "mem", None),
]
VARIANTS[VOCAB_CASES[0][1]] = [("4096 x 1 row, flat tiles (default since session 16)", {}),
                               ("4096 x 1 row, (N, C) tiles (before session 16)", {"ce_flat": False}),
                               ("2048 x 2 rows", {"ce_cols": 2048, "ce_tile_elems": 4096})]
VARIANTS[VOCAB_CASES[1][1]] = [("4095 x 1 row, flat tiles, the last gathered (default since session 17)", {}),
                               ("4095 x 1 row, (N, C) tiles (before session 17)", {"ce_flat": False})]
# (session 15 also timed an int64 4096x4096 cumsum split the same way: 0.078 -> 0.095 ms, slower; int64 scans keep
# ct.cumsum, see MEMORY_TUNING["scan_split_width"])


# the strided elementwise kernel (session 22): tile size, occupancy hint, unchecked loads/stores of exact tiles
_STRIDED = "rotary q strided (b,s,h,d).transpose(1,2) 4x32x2048x128 bf16"
VARIANTS[_STRIDED] = [
    ("(32, 128) tiles (default)", {}),
    ("(16, 128) tiles", {"elementwise_strided_tile_elems": 2048}),
    ("(64, 128) tiles", {"elementwise_strided_tile_elems": 8192}),
    ("(128, 128) tiles", {"elementwise_strided_tile_elems": 16384}),
    ("(32, 128) tiles, unchecked", {"elementwise_strided_unchecked": True}),
    ("(64, 128) tiles, unchecked", {"elementwise_strided_tile_elems": 8192, "elementwise_strided_unchecked": True}),
    ("(32, 128) tiles, occupancy 4", {"elementwise_strided_occupancy": 4}),
    ("(64, 128) tiles, occupancy 2", {"elementwise_strided_tile_elems": 8192, "elementwise_strided_occupancy": 2}),
    ("(32, 128) tiles, unchecked, occupancy 4", {"elementwise_strided_unchecked": True, "elementwise_strided_occupancy": 4}),
    ("(32, 128) tiles, loads latency 10", {"elementwise_load_hint": ", latency=10"}),
    ("(32, 128) tiles, no TMA", {"elementwise_load_hint": ", allow_tma=False", "elementwise_store_hint": ", allow_tma=False"}),
]

# The sort kernels (sort_bitonic.SORT_TUNING). Session 30's H100 timings switched on the occupancy hint
# ("sort_occupancy" 4: without it the compiler stages the network's layout changes through ~200 KB of shared memory
# per block whatever the tile's size, one block per SM; at 4 the sm_90 cubins take 33 KB and ~25% fewer
# instructions, at 2 about 80 KB; 8 does not fit and is ignored) and a large top-k of whole lines by sorted groups
# of k and halving rounds ("topk_rounds_tile"). The stage form: "halves" (the default) or "partner" (65 KB but
# R250 and spills on the compiler's warps)
_NO_HINT = {"sort_occupancy": None}
for _label in ("sort 4096 per line 8192x4096 fp32", "topk k=256 16384x2048 bf16"):
    VARIANTS[_label] = [("occupancy 4 (default since session 31)", {}),
                        ("no occupancy hint (before session 31)", _NO_HINT),
                        ("occupancy 2", {"sort_occupancy": 2}),
                        ("occupancy 4, 8 worker warps", {"sort_worker_warps": 8}),
                        ("occupancy 2, 8 worker warps", {"sort_occupancy": 2, "sort_worker_warps": 8}),
                        ("partner form, occupancy 4", {"sort_form": "partner"}),
                        ("partner form, 8 worker warps, no hint", {"sort_form": "partner", "sort_worker_warps": 8,
                                                                  **_NO_HINT})]
VARIANTS["topk k=256 16384x2048 bf16"][:2] = [
    ("halving rounds, occupancy 4 (default since session 31)", {}),
    ("whole-line sort, no occupancy hint (before session 31)", {"topk_rounds_tile": False, **_NO_HINT}),
    ("whole-line sort, occupancy 4", {"topk_rounds_tile": False}),
    ("halving rounds, no occupancy hint", _NO_HINT)]
# the rows after the splice keep the default halving rounds: say so in their labels
VARIANTS["topk k=256 16384x2048 bf16"][4:] = [("halving rounds, " + name, o)
                                              for name, o in VARIANTS["topk k=256 16384x2048 bf16"][4:]]

# packed keys of 16-bit floats (session 32, SORT_TUNING["keys32"]): a bfloat16 / float16 value's own 16 bits and
# the column in an int32 key instead of its float32 image and the column in an int64 one (sm_90 static
# instructions: top-256 of 2048 12304 -> 4344, the vocabulary top-50's chunk kernel 8160 -> 3136, top-8 of 1024
# 1432 -> 1976; on since session 32's H100 timings); the float32 cases keep int64 keys
_WIDE = {"keys32": False, "keys32_select": False}
_SORT_DESC = "def forward(self, x):\n        return torch.sort(x, dim=-1, descending=True)"
SORT16_CASES = [("topk", "sort 4096 per line 8192x4096 bf16", _SORT_DESC,
                 "[torch.randn(8192, 4096, dtype=torch.bfloat16)]", "mem", None),
                ("topk", "sort vocab 256x32000 bf16", _SORT_DESC, "[torch.randn(256, 32000, dtype=torch.bfloat16)]",
                 "mem", None)]
for _case in SORT16_CASES:
    VARIANTS[_case[1]] = [("int32 keys (default since session 32)", {}), ("int64 keys", _WIDE),
                          ("int32 keys, 8 worker warps", {"sort_worker_warps": 8}),
                          ("int64 keys, 8 worker warps", {**_WIDE, "sort_worker_warps": 8})]
VARIANTS["topk k=8 16384x1024 bf16"] = [("int32 keys (default since session 32)", {}),
                                        ("int64 keys", _WIDE)]
VARIANTS["topk k=256 16384x2048 bf16"][1:1] = [("halving rounds, occupancy 4, int64 keys", _WIDE),
                                               ("halving rounds, occupancy 4, int64 keys, 8 worker warps",
                                                {**_WIDE, "sort_worker_warps": 8})]

# whole-number upscaling at input resolution (gather_upscale.py, session 29; the default since session 31 at 1024
# outputs per block): nearest x2 as one dense load + broadcast + dense store per block, bilinear x2 as 9 gathered
# source tiles blended per 4 outputs; the generic layout maps every output pixel to its source in float32 and
# gathers 1 / 4 values
for _label in ("upsample nearest x2 32x128x128x128 bf16", "upsample bilinear x2 32x128x128x128 bf16"):
    VARIANTS[_label] = [("input resolution, 1024 outputs per block (default since session 31)", {}),
                        ("per-pixel gathers (before session 31)", {"upscale_whole": False}),
                        ("input resolution, 512 outputs per block", {"upscale_tile_elems": 512}),
                        ("input resolution, 2048 outputs per block", {"upscale_tile_elems": 2048}),
                        ("input resolution, 4096 outputs per block", {"upscale_tile_elems": 4096})]

# long lines (sort_long.py, session 29): chunk length of the chunk sorts (the rank kernel's searches grow with the
# number of chunks, the sorts with log2 of their length); occupancy 4 since session 31
for _label in ("topk k=50 vocab 1024x32000 bf16", "sort vocab 256x32000 fp32"):
    VARIANTS[_label] = [("chunks of 4096, 128 keys per rank block, occupancy 4 (default)", {}),
                        ("no occupancy hint (before session 31)", _NO_HINT),
                        ("occupancy 2", {"sort_occupancy": 2}),
                        ("chunks of 2048", {"long_chunk": 2048}),
                        ("chunks of 1024", {"long_chunk": 1024}),
                        ("chunks of 4096, occupancy 4, 8 worker warps", {"sort_worker_warps": 8}),
                        ("chunks of 4096, whole chunk sorts", {"topk_rounds": False}),
                        ("chunks of 4096, 256 keys per rank block", {"rank_tile": 256})]
VARIANTS["topk k=50 vocab 1024x32000 bf16"][1:1] = [("int64 keys", _WIDE),
                                                    ("int64 keys, 8 worker warps", {**_WIDE, "sort_worker_warps": 8})]

# the generic gather kernel's occupancy hint (session 31, MEMORY_TUNING["gather_occupancy"]): sm_90 bucketize
# compiles to R64 with 132 KB of shared memory per block without one, R57 and 9 KB at 4; unfold R80 -> R96
for _label in ("bucketize 64M fp32 into 1023 boundaries", "unfold 3x3 pad 1 16x64x56x56 fp16"):
    VARIANTS[_label] = [("occupancy 4 (default since session 31)", {}),
                        ("no occupancy hint", {"gather_occupancy": None}),
                        ("occupancy 2", {"gather_occupancy": 2}), ("occupancy 8", {"gather_occupancy": 8})]


def _tables() -> list[dict]:
    """The tuning tables a variant's overrides may name (each key lives in exactly one)."""
    from tilestudio.core.kernels.expr_math import MATH_TUNING
    from tilestudio.core.kernels.indexing import MEMORY_TUNING
    from tilestudio.core.kernels.rowwise import TUNING
    from tilestudio.core.kernels.sort_bitonic import SORT_TUNING

    return [MEMORY_TUNING, MATH_TUNING, TUNING, SORT_TUNING]


def run_variant(spec, overrides: dict, reps: int, label: str = ""):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import load_source
    from tilestudio.core.kernels.checking import check_launch, launch_args, make_inputs
    tables = _tables()
    saved = [dict(t) for t in tables]
    for key, value in overrides.items():
        next(t for t in tables if key in t)[key] = value
    try:
        src = generate_kernel(spec)
    finally:
        for t, old in zip(tables, saved):
            t.clear()
            t.update(old)
    if src.skeleton:
        return "skeleton", math.nan, 0
    ns = load_source(src)
    check = check_launch(spec, ns, src.launch_name, src.prepare_name, "cuda", seed=3,
                         make_input=_index_inputs(spec, label))
    sets = [launch_args(spec, ns, src.prepare_name, make_inputs(spec, "cuda", s, _index_inputs(spec, label)))
            for s in range(3)]
    ms = median_ms(ns[src.launch_name], sets, reps=reps)
    nbytes = moved_bytes(ns[src.launch_name], sets[0])
    return ("ok" if check.ok else f"WRONG {check.message[:40]}"), ms, nbytes


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=None, help="substring of the case labels to run")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--match", default=None,
                        help="only the current default and the variants naming this text (alternatives split by |)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench/variants_memory.py needs a CUDA GPU", file=sys.stderr)
        return 2
    t0 = time.time()
    by_label = {c[1]: c for c in CASES + SCOPE_CASES + VOCAB_CASES + SORT16_CASES}
    rows = [["case", "variant", "check", "ms", "of copy", "vs eager"]]
    for label, variants in VARIANTS.items():
        if args.only and args.only not in label:
            continue
        case = by_label[label]
        try:
            spec = spec_for(case[2], case[3])
            ref_ns = {"torch": torch, "math": math}
            exec(spec.reference, ref_ns)  # noqa: S102 - the spec's own reference
            from tilestudio.core.kernels.checking import make_inputs
            ref_sets = [make_inputs(spec, "cuda", s, _index_inputs(spec, label)) for s in range(3)]
            eager = median_ms(ref_ns[spec.reference_name], ref_sets, reps=args.reps)
            del ref_sets
        except Exception as exc:  # noqa: BLE001 - one case never stops the table
            rows.append([label, "-", f"ERROR {type(exc).__name__}: {str(exc)[:60]}", "", "", ""])
            continue
        ceiling = None
        for name, overrides in variants:
            default = all(any(k in t and t[k] == v for t in _tables()) for k, v in overrides.items())
            if args.match and not default and not any(m in name for m in args.match.split("|")):
                continue
            try:
                status, ms, nbytes = run_variant(spec, overrides, args.reps, label)
                if ceiling is None and nbytes:
                    ceiling = copy_ms(nbytes)
                frac = f"{ceiling / ms:.2f}" if ceiling and ms == ms else ""
                rows.append([label, name + (" *" if default else ""), status, f"{ms:.3f}", frac,
                             f"{eager / ms:.2f}x"])
            except Exception as exc:  # noqa: BLE001
                rows.append([label, name, f"ERROR {type(exc).__name__}: {str(exc)[:60]}", "", "", ""])
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
        rows.append([label, "eager", "", f"{eager:.3f}", f"{ceiling / eager:.2f}" if ceiling else "", "1.00x"])
        torch.cuda.empty_cache()
    print(f"# {torch.cuda.get_device_name()}, {time.time() - t0:.0f} s; * = current MEMORY_TUNING default")
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
