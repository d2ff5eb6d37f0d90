"""Shared machinery of the row-wise families (reduction, softmax, norm, scan).

Every kernel of these families reduces or scans one group of dimensions of its main input. The wrapper views the
input (a free view; a permute + contiguous only when the reduced dimensions are not adjacent) as

- ``row`` layout ``(M, R)``: the reduced dimensions are innermost; a block owns ``BM`` rows and walks the row in
  ``BR``-wide chunks (one chunk when the row fits the tile);
- ``col`` layout ``(O, R, I)``: dimensions after the reduced ones stay innermost so loads stay coalesced; a block
  owns a ``(BO, ., BI)`` window and walks ``R`` in ``BR`` chunks; the reduction runs along tile axis 1.

Fused elementwise ops are emitted by ``expr.emit_elementwise``. Their side inputs are loaded for the current tile
either with ``ct.load`` on the same view as the main tensor (same full shape) or with ``ct.gather`` on the
tensor itself, indexing each of its dimensions by a digit of the tile's row/column coordinates (broadcast
dimensions get index 0), so any broadcastable side input works without host-side copies.

This module holds the tuning table (`TUNING`, `tuned`) and the layout choice (`Layout`, `make_layout`,
`choose_tiles`, `choose_tiles_full_row`) and re-exports the rest of the shared machinery, which lives in
``rowwise_values`` (dtypes, arithmetic, literals), ``rowwise_spec`` (anchor / prologue / epilogue of a spec),
``rowwise_code`` (code buffers, `Kernel`) and ``rowwise_emit`` (tile loads and stores, wrapper, `SameShapeGen`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from .base import NUM_SM, pow2_at_least
from .rowwise_code import Code, Kernel, Param  # noqa: F401  (re-exported)
from .rowwise_emit import (SameShapeGen, TileCtx, alloc_line, check_float, first_tensor, input_ctx,  # noqa: F401
                           main_tensor, out_dim_map, store_line, wrapper_source)
from .rowwise_spec import ELEMENTWISE, Parts, as_float, emit_ops, ref_of, split_spec  # noqa: F401
from .rowwise_values import (FLOAT_DTYPES, INT_DTYPES, cdiv, ct_dtype, decode, flit, norm_dims,  # noqa: F401
                             pow2_floor, prod)


# Every performance choice of the row-wise generators (softmax, norm, reduction) lives in this one table, so a
# benchmark (bench/variants_rowwise.py) can switch defaults with `tuned(...)` and compare. Tile sizes follow from
# it deterministically per shape (see choose_tiles / choose_tiles_full_row).
TUNING = {
    # row-layout kernels with more row tiles than NUM_SM * occupancy launch that many blocks, each looping over
    # row tiles with a stride of the grid size: no tail of tiny blocks, and the compiler can prefetch the next
    # tile's load while the current one is reduced
    "persistent": True,
    # the persistent loop for column layouts too (reduced middle dim: softmax over an inner dim, middle-dim
    # reductions): the loop walks (row tile, inner window) pairs. H200, session 8 (bench/gpu_session.sh prepared,
    # variants default,persistcol): softmax dim=1 64x256x32x32 fp16 0.039 -> 0.022 ms (0.49 -> 0.87 of copy)
    "persistent_col": True,
    "occupancy": 2,  # @ct.kernel(occupancy=...) of persistent kernels; their grid is NUM_SM * occupancy
    # persistent kernels whose tile stacks at least 8 short rows (row length <= 1024): occupancy 4. H200, two runs
    # each (bench/variants_rowwise.py --variants default,occ4): softmax 16384x1000 bf16 0.048 -> 0.045 and
    # 0.065 -> 0.045 ms, mean(2,3) 128x512x28x28 fp16 0.060 -> 0.048 and 0.060 -> 0.058; one-row tiles lose
    # (layer_norm 8192^2 fp32 0.212 -> 0.338, argmax(-1) 8192^2 0.057 -> 0.092, log_softmax 8192x4096 0.058 -> 0.074)
    # H200, session 13, same run, device time: 6 blocks per SM (sm_90 R64 -> R40, no spills) softmax 16384x1000
    # bf16 0.028 -> 0.027 ms, 65536x1000 0.087 -> 0.080 (0.74 -> 0.80 of a copy); Nsight Compute on the latter:
    # 75 % theoretical / 42 % achieved occupancy (4: 50 / 30 %). mean(2,3) pools stack rows too (R64 -> R40)
    "occupancy_stacked": 6,
    # stacked short rows whose tile is wider than the row (masked columns: attention scores over 200 tokens, 1000
    # classes, 768 features) and whose output rows are whole 16-byte units: stores through TMA at this occupancy
    # (softmax / norms; None: plain stores at "occupancy_stacked"). Plain stores of masked columns are 16-bit or
    # 32-bit per element and spill at 6 blocks per SM (sm_90: softmax 151296x200 fp16 R40 with a 96-byte frame,
    # 64 STG.E.U16; layer_norm 65536x768 bf16 R40, 200 bytes); TMA stores at 3: R80, no frame, 8 UTMASTG.2D.
    # H200, session 18, same run (variants_rowwise.py, variants default / mtma3 / mtma4, all with rows of 32):
    # softmax 151296x200 fp16 0.103 -> 0.039 / 0.037 ms (eager 0.058), 65536x1000 bf16 0.081 -> 0.075 / 0.083,
    # 49152x384 bf16 0.028 -> 0.028 / 0.032, 65536x100 fp32 0.062 -> 0.019; layer_norm 65536x768 bf16
    # 0.128 -> 0.082 / 0.071, 131072x384 fp16 0.127 -> 0.080 / 0.069
    "stacked_masked_tma_occupancy": 3,
    "norm_masked_tma_occupancy": 4,
    # rows per stacked tile at most (None: as many as fill row_tile_elems). Tiles of 64 or 128 short rows spill
    # or lose the occupancy hint (sm_90: softmax 98560x77 fp16 R80 with a 248-byte frame, 98560x50 R249). H200,
    # session 18, same run: softmax 98560x50 fp16 0.083 -> 0.034 ms, 98560x77 0.068 -> 0.046, 65536x100 fp32
    # (with TMA stores) 0.026 -> 0.019; 16 rows lose (0.035, 0.047, 0.020; ViT 151296x197 0.087 -> 0.098)
    "stack_max_rows": 32,
    "load_latency": 10,  # latency hint (1..10, None: none) on loads of the main input: deeper prefetch
    "store_tma": False,  # allow_tma on stores of row tiles (None: compiler default); plain stores were faster
    # full-view loads of the main input (and same-shape inputs) with check_bounds=False when the tiles cover the
    # view exactly (O % BO == R % BR == I % BI == 0), as elementwise does. Off: slower here on the H200 (same run,
    # bench/variants_rowwise.py --variants default,unchecked: softmax 8192^2 fp32 0.163 -> 0.186 ms, rms_norm bf16
    # 0.093 -> 0.105, logsumexp 0.088 -> 0.108, amax(0) 0.059 -> 0.074; sum(-1) 0.096 -> 0.088). Correct either
    # way (the rowwise, loss and pool GPU tests pass with it on: 598).
    "unchecked_exact": False,
    "row_tile_elems": 8192,  # full-row kernels (softmax, norms): short rows are stacked up to this many elements
    "red_tile_elems": 4096,  # reductions: elements per tile (lane-wise accumulators double the register need)
    "max_single": 8192,  # longest row a full-row kernel keeps in registers; longer rows take two passes
    "chunk": 4096,  # chunk width of the two-pass path
    # two-pass path: rows x chunk elements per tile. H200 (variants_rowwise.py): scale+softmax 4096x32768 fp32
    # (2, 4096) 1.203 ms, (1, 4096) 0.942, (1, 2048) 1.187; layer_norm 2048x65536 fp32 (2, 4096) 0.798 ms,
    # (1, 4096) 0.488, (1, 2048) 0.469 (eager 0.669 / 0.563)
    "long_tile_elems": 4096,
    # the two-pass path of layer/rms norm: chunk width and tile (one row x 2048). H200, layer_norm 2048x65536
    # fp32, same-run pairs (1 x 4096 -> 1 x 2048): session 3 0.488 -> 0.469 ms, session 6 (device time)
    # 0.427 -> 0.402; the two-pass softmax goes the other way (0.329 -> 0.364), so it keeps "chunk"
    "norm_long_chunk": 2048,
    "col_min_bi": 64,  # inner-dim (col layout) kernels: window at least this many contiguous elements
    "col_max_single": 16384,  # col layout: reduced extent x window kept whole up to this many elements
    # kernels whose tile loop runs more chunk iterations per row tile than this (two-pass softmax/norms over
    # long rows) stay non-persistent and without the load latency hint: a persistent loop around such chunk
    # loops took tileiras 10 minutes and a 16 MB cubin (softmax 4096x32768, 2 passes x 8 chunks)
    "persist_max_chunks": 2,
    # group norm over (N, C, *S): view as (N*G, C/G, HW) so each channel row gets its weight/bias as one value
    # (a (C/G, 1) gather, not a per-element gather with a division by HW); a whole group up to this many
    # (padded) elements stays in one tile and is normalised from registers, else chunks of HW are walked twice
    "group_channel_rows": True,
    # H200, group_norm(32)+silu 32x256x56x56 fp16, same run, device time (session 7; copy 0.030 ms, eager 0.156):
    # one (8, 4096) tile per group 0.072 ms (177 registers per thread spilled); two passes over (8, 512) chunks
    # with per-chunk merged statistics 0.148, (8, 256) 0.322, (8, 1024) 0.076; with lane-wise Welford statistics
    # (lane_group) (8, 512) 0.066, (8, 256) 0.072
    "group_max_single": 16384,
    "group_chunk": 4096,  # elements (C/G padded x HW chunk) per chunk of the two-pass group path
    "group_min_hw": 32,  # shorter channel rows (and HW == 1) keep the flat (N*G, C/G*HW) rows
    # long rows (chunked statistics / online softmax): accumulate per lane across chunks and reduce once after
    # the loop instead of two or three tile reductions per chunk. Softmax (one row-max reduction per chunk, the
    # sum of exp lane-wise): 4096x32768 fp32 compiles in 1.6 s to a 181 KB cubin (per-chunk sums: 2.7 s,
    # 430 KB). Layer/rms norm (lane-wise Welford / sum of squares): 2048x65536 took tileiras 181 s and 2.2 MB
    # (per-chunk Chan merge: 4.5 s, 339 KB), so norms keep the per-chunk merge
    "lane_softmax": True,
    # softmax exps as ct.exp2(x * log2(e), flush_to_zero=True) (one MUFU op) instead of ct.exp. H200: scale+softmax
    # 4096x32768 fp32 0.973 -> 0.387 ms (eager 0.685), softmax 8192x8192 fp32 0.174 -> 0.173, log_softmax
    # 8192x4096 fp16 0.074 -> 0.068, softmax 16384x1000 bf16 0.056 -> 0.060 (noise level)
    "softmax_exp2": True,
    # 1 / row sum of the one-tile and two-pass softmax as an approximate reciprocal (MUFU rcp, <= 1 ulp) instead
    # of the IEEE division (sm_90: an FCHK and a slow-path call per row held by a thread; ViT 151296x197 fp16
    # 1760 -> 1472 instructions). H200, session 18, same run: softmax 151296x197 fp16 0.088 -> 0.083 ms, 98560x77
    # 0.046 -> 0.044, 65536x130 fp32 0.039 -> 0.037, 49152x384 bf16 0.028 -> 0.027; 8192^2 fp32 and the two-pass
    # 4096x32768 level (0.145, 0.270)
    "softmax_approx_recip": True,
    # single-tile softmax rows loaded and stored as int64 words (softmax_words.py): 8-byte masked stores where a
    # row that is not a power of two long (1000 classes) stores 2 bytes per instruction. H200, session 8: slower
    # (softmax 16384x1000 bf16 0.66 -> 0.48 of copy, 65536x1000 0.74 -> 0.51)
    "softmax_words": False,
    "lane_norm": False,
    # the same lane-wise Welford statistics for group norm's chunked channel rows (groups of unpadded C/G; the
    # H200 rows at group_max_single above); tileiras compiles the (8, 512) form in 0.7 s, 151 KB
    "lane_group": True,
    # eval batch norm: channel rows of non-power-of-two length cut into rows of its largest power-of-two divisor
    # (norm._channel_split), whose exact tiles load unchecked (bn_unchecked). H200, batch_norm eval
    # 64x256x56x56 fp16, same run, device time (session 7; copy 0.054 ms, eager 0.136): unsplit 0.079 ms (0.69
    # of copy), split 0.065, split + unchecked 0.055 (0.98). Session 5 (wall time, checked loads): split 0.104,
    # unsplit 0.103
    "bn_split_rows": True,
    "bn_unchecked": True,
    # eval batch norm: the load latency / store hints of the other row kernels (off: see norm._ChannelAffine)
    "bn_hints": False,
    # latency hint on main-input loads of kernels with long chunk loops (None: none; the hint on persistent
    # multi-chunk kernels made tileiras take 10 minutes, so it is off by default)
    "long_latency": None,
    # occupancy hint (None: the compiler's) of the non-persistent two-pass group norms (a block per group walks
    # its chunks for the statistics, then again, from L2, to normalize): more resident blocks keep more loads in
    # flight. H200, session 8 (variants_rowwise.py): group_norm(32)+silu 32x256x56x56 fp16 0.066 -> 0.045 ms with
    # 4 (0.46 -> 0.66 of copy), 0.146 with 8. Layer norms keep the compiler's: layer_norm 2048x65536 fp32 lost
    # (0.402 -> 0.424 ms with 4), so norm.py applies it to group norms only
    "chunked_occupancy": 4,
    # allow_tma on the main-input loads of multi-chunk kernels (None: the compiler's choice, TMA). tileiras
    # stages every TMA chunk load of the (unrolled) chunk loops in shared memory: the two-pass group norm takes
    # 120 KB per block and the two-pass layer norm 2048x65536 223 KB (one block per SM); plain loads need 5 KB
    # (bench/sass_widths.py shows [R<regs> S<shared bytes>]). H200, session 8: plain loads lose (layer_norm
    # 2048x65536 fp32 0.402 -> 0.652 ms; group norm 0.066 -> 0.063, but occupancy 4 alone gives 0.045)
    "chunk_load_tma": None,
    # @ct.kernel(num_worker_warps=...) of every row-wise kernel (None: the compiler's; tileiras 13.4 takes 4 or 8):
    # more warps share a tile, so a large single tile (a whole group norm group, a long softmax row) needs fewer
    # registers per thread. Sass (bench/sass_widths.py): group_norm(32)+silu 32x256x56x56 fp16 as one
    # (8, 4096) tile spills without. H200, session 9 (variants_rowwise.py ww8occ1: 8 warps at one block per SM,
    # every bench case): level or worse everywhere (argmax 0.040 -> 0.055 ms, logsumexp 0.072 -> 0.108, group
    # norm 0.045 -> 0.088); the one-tile group norm on 8 warps 0.053 vs 0.045. Only softmax_wide_single uses 8
    "worker_warps": None,
    # two-pass norms (no prologue, or one SameShapeGen.resident_ok accepts): this many elements of each row's first
    # chunks stay in registers from the statistics pass to the normalizing one, so they are read from memory once
    # (None: every chunk read twice). layer_norm 2048x65536 fp32 reads 2 x 256 KB per row, 0.63 of a copy (0.67
    # is that traffic's ceiling); keeping 32768 floats would make it 1.5 reads. H200, session 9, same run: default
    # 0.401 ms, 32768 kept on 8 worker warps 0.517, 16384 kept 0.796, 16384 on 8 warps 0.460: the register-held
    # chunks cost more (fewer rows in flight per SM) than the reads they save
    "norm_resident_elems": None,
    # two-pass norm rows (layer / rms / instance rows; group norm groups with norm_split_groups) split over
    # cooperating blocks that read once (norm_split.py): each block holds this many elements of a row (whole
    # chunks) in registers, publishes its segment's statistics through 64-bit atomic words, waits for its row's
    # other segments (taken in atomic-ticket order, so they have started or will start: no deadlock), merges them
    # and normalizes from registers (None: off; the two-pass form reads each row twice, 0.67 of a copy at best).
    # Correct on the GPU with waiting blocks (tests/kernels/test_split_rows_gpu.py). H200, session 10, same run,
    # device time, layer_norm 2048x65536 fp32: two-pass 0.402 ms (0.63 of a copy), split in 8192s 0.476, in
    # 4096s 0.650; next run: two-pass 0.404, 16384s 0.377 (0.68; sm_90 R128 with a 112-byte frame), 16384s on 8
    # worker warps at occupancy 1 0.616. group_norm(32)+silu 32x256x56x56 fp16: 0.045 -> 0.213 ms in 8192s
    "norm_split_elems": 16384,
    "norm_split_groups": False,
    # ... with segments of about norm_split_elems and a short last one where the chunk count has no divisor near
    # it (as softmax_split_ragged; group_norm(32) over 56x56 maps: 7 chunks of 8 x 512, 2 segments of 4).
    # H200, session 11, same run: group_norm(32)+silu 32x256x56x56 fp16 0.046 ms (unsplit) -> 0.149 in 2
    # segments, 0.186 in 4 (with norm_split_groups)
    "norm_split_ragged": False,
    # the same for softmax / log_softmax rows longer than softmax_wide_single (softmax_split.py): each block holds
    # its segment, publishes its max and sum of exponentials. H200, session 10, same run, device time, softmax
    # 2048x131072 fp32: two-pass rows 0.777 ms (0.65 of a copy), split in 8192s 0.786, in 16384s 0.601 (0.84)
    "softmax_split_elems": 16384,
    # ... also for rows whose chunk count has no divisor near softmax_split_elems / chunk (vocabularies of 50257:
    # 13 chunks of 4096; 151936: 38): segments of about that many chunks, the last one short, its slots past the
    # row re-reading the row's last chunk (same block, same values) and left out of the max and sum (split_rows
    # SplitRow.chunk). H200, session 11, same run, device time (copy 0.387 ms, eager 0.772): softmax 4096x50257
    # fp32 two-pass rows 1.044 ms (0.37 of a copy, slower than eager) -> 4 segments of 4, 4, 4 and 1 chunks 0.700
    # (0.55, 1.10x eager). Group norm groups the same way lose (norm_split_ragged)
    "softmax_split_ragged": True,
    # ... and a short last segment's slots past the row (repeats of the row's last chunk, read again from cache)
    # skip the normalizing and the store (`if in<i>:`) instead of writing the same chunk again (softmax
    # 4096x50257: 16 chunk stores per row for 13 chunks). H200, session 11, same run, device time: softmax
    # 4096x50257 fp32 0.702 -> 0.813 ms with the branches (0.55 -> 0.48 of a copy), so repeats store again.
    # Same run, segment sizes: 13 blocks of one chunk at occupancy 4 0.677, at 2 0.819; 5 of 3 chunks 0.751;
    # 3 of 5 0.837; 2 of 7 on 8 warps 0.784
    "split_skip_repeats": False,
    # softmax / log_softmax rows longer than one chunk whose stride is not a multiple of 16 bytes (50257 float32)
    # read once through aligned tiles of the flat tensor (softmax_flat.py) instead of the split rows' 32-bit
    # element accesses: softmax_flat_tile elements per tile, about softmax_flat_elems per block, zero-padded
    # loads that tileiras stages through TMA (softmax_flat_tma; else -inf padding and 128-bit loads), allow_tma on
    # the stores (None: the compiler's 1D TMA stores), the occupancy hint. H200, session 16, same run, device
    # time, softmax 4096x50257 fp32 (copy 0.389 ms): split rows 0.704 (0.55 of a copy) | flat, 16384 per block at
    # occupancy 2 0.764 | + TMA loads 0.624 | 8192 at occupancy 4 0.547 | **+ TMA loads 0.513 (0.76, 1.51x eager;
    # sm_90 R64, 8-byte frame)** | TMA loads, tiles of 2048, 16384 per block 0.827 (bench/variants_rowwise.py)
    "softmax_flat": True,
    "softmax_flat_tile": 4096,
    "softmax_flat_elems": 8192,
    "softmax_flat_tma": True,
    "softmax_flat_store_tma": False,
    "softmax_flat_occupancy": 4,
    # ... also for rows of a 16-byte stride whose split rows would end in a short segment (softmax_flat
    # ._ragged_split). H200, session 16, same run: softmax 4096x50256 fp32 split rows 0.544 ms -> flat 0.512;
    # for every long row, 2048x131072 (8 even segments) 0.598 -> 0.887: ragged splits only
    "softmax_flat_aligned": True,
    # (session 17 also tried one block per row: two passes over the row's aligned flat tiles, the second from L2,
    # the row's two end tiles stored element-wise; correct on the H200 (21 passed) but slower, same run:
    # softmax 4096x50257 fp32 0.508 -> 0.73-0.97 ms, log_softmax 4096x50257 bf16 0.374 -> 0.55-1.36 over tiles of
    # 2048-8192, occupancy 2/4/none, TMA or 128-bit loads; not kept)
    # allow_tma on the chunk loads of split-row kernels (None: TUNING["chunk_load_tma"], the compiler's TMA).
    # sm_90, layer_norm 2048x65536 fp32 in 16384s: TMA R128 with a 112-byte spill frame and 107 KB of shared
    # staging per block; plain loads R217, no frame, 1 KB (2 blocks per SM either way). TMA stays faster: H200,
    # session 12, same run, device time: that layer norm 0.373 -> 0.608 ms with plain loads, softmax 2048x131072
    # fp32 0.606 -> 0.754 (correct either way: 33 passed)
    "split_chunk_tma": None,
    "split_occupancy": 2,  # the occupancy hint of split-row kernels (None: the compiler's; see norm_split_elems)
    # split rows' segment statistics lane-wise over the chunks held in registers, then one tile reduction per
    # statistic (softmax: the max and the sum of exponentials; norms: the sum, then the squared deviations from
    # the segment's mean, or the sum of squares) instead of one or two per chunk. Nsight Compute on the H200
    # (session 13): layer_norm 2048x65536's split kernel spends 49 % of its stalls at block barriers (8 chunks
    # x 2 reductions per block). Norm rows whose chunks need a mask keep the per-chunk merge. Correct on the GPU
    # (test_split_rows_gpu.py: 52 passed) but not faster: H200, session 13, same run, device time: layer_norm
    # 2048x65536 fp32 0.369 -> 0.404 ms, softmax 2048x131072 fp32 0.599 -> 0.597, 4096x50257 0.705 -> 0.730
    "split_lane_stats": False,
    # at most this many blocks per split row: all of a row's blocks must be resident at once (a block spins until
    # its row's others have published), so rows needing more segments stay two-pass; 32 blocks fit any GPU of 16
    # SMs at split_occupancy 2
    "split_max_segments": 32,
    # the same for two-pass softmax rows (online max / sum pass, then the normalizing pass). H200, session 9 (same
    # run as softmax_wide_single): scale+softmax 4096x32768 fp32 with 16384 / 28672 floats kept on 8 worker warps
    # 0.281 / 0.287 ms, behind the one-pass row (0.271)
    "softmax_resident_elems": None,
    # softmax rows longer than max_single, up to this many (padded) elements: one tile per row on
    # softmax_wide_worker_warps warps, one block per row (not persistent), read once. H200, session 9, same run,
    # device time (bench/gpu_session.sh prepared-norms; copy 0.254 ms): scale+softmax 4096x32768 fp32 two passes
    # 0.328 ms (0.77 of copy) -> one pass on 8 worker warps 0.271 (0.94; 2.43x eager). sm_90: spill-free on 8
    # warps (the compiler's warp count spills)
    "softmax_wide_single": 32768,
    "softmax_wide_worker_warps": 8,
}


@contextlib.contextmanager
def tuned(**overrides):
    """Generate with some TUNING entries changed (benchmarks of alternatives)."""
    unknown = set(overrides) - set(TUNING)
    if unknown:
        raise KeyError(f"unknown tuning keys {sorted(unknown)}")
    saved = dict(TUNING)
    TUNING.update(overrides)
    try:
        yield TUNING
    finally:
        TUNING.clear()
        TUNING.update(saved)


def load_hint() -> str:
    lat = TUNING["load_latency"]
    return f", latency={int(lat)}" if lat else ""


def store_hint() -> str:
    tma = TUNING["store_tma"]
    return "" if tma is None else f", allow_tma={bool(tma)}"


# ---- layouts --------------------------------------------------------------------------------------------------


@dataclass
class Layout:
    """How the main input of shape `shape` is tiled; `dims_*` are its dims (size > 1) in canonical order."""

    kind: str  # "row" | "col"
    shape: list[int]
    perm: list[int] | None  # permutation applied before the view (non-adjacent reduced dims)
    O: int
    R: int
    I: int
    dims_o: list[int]
    dims_r: list[int]
    dims_i: list[int]
    BO: int = 1
    BR: int = 1
    BI: int = 1
    persistent: bool = False  # row layout: a grid of `cap` blocks loops over the row tiles
    cap: int = 0
    occupancy: int = 1  # persistent: the @ct.kernel occupancy hint (cap = NUM_SM * occupancy)
    hints: bool = False  # emit the TUNING load/store hints on main-input loads and row-tile stores
    unchecked: bool = False  # unchecked main-input loads where the tiles cover the view exactly, whatever TUNING
    latency: int | None = None  # a load latency hint of the kernel's own (scans), whatever the hints above
    chunk_tma: bool | None = None  # allow_tma of the chunk loads of its own (scans, split rows), else TUNING's
    long_loops: bool = False  # many chunk iterations per tile: no load latency hint (compile time)
    store_tma: bool | None = None  # allow_tma on its row-tile stores (the look-back scan's), whatever the hints
    store_compiler: bool = False  # row-tile stores without allow_tma (the compiler's TMA), whatever the above

    def persist(self, kernel: "Kernel | None" = None, passes: int = 1, allow: bool = True,
                tma_occupancy: int | None = None) -> "Layout":
        """Make a row-layout kernel persistent (per TUNING, and `allow`) when it has more row tiles than one full
        grid; turn on load/store hints. Call after the tile sizes are final and before the body is emitted;
        `passes`: how many times the kernel walks the chunks of a row; `tma_occupancy` (where every output row
        is a whole number of 16-byte units): stacked rows of masked columns store through TMA at this occupancy."""
        self.hints = True
        if self.nch * passes > TUNING["persist_max_chunks"]:
            self.long_loops = True
            return self
        stacked = self.BO >= 8 and self.R <= 1024
        if tma_occupancy and stacked and self.kind == "row" and self.nch == 1 and self.R % self.BR:
            self.store_compiler = True
            occ = max(1, int(tma_occupancy))
        else:
            occ = max(1, int(TUNING["occupancy_stacked" if stacked else "occupancy"]))
        cap = NUM_SM * occ
        kinds = ("row", "group", "col") if TUNING["persistent_col"] else ("row", "group")
        if TUNING["persistent"] and allow and self.kind in kinds and self.blocks() > cap:
            self.persistent, self.cap, self.occupancy = True, cap, occ
            if kernel is not None and occ > 1:
                kernel.options["occupancy"] = occ
        return self

    @property
    def load_hint(self) -> str:
        if self.latency:
            hint = f", latency={int(self.latency)}"
        elif self.hints and self.long_loops:
            lat = TUNING["long_latency"]
            hint = f", latency={int(lat)}" if lat else ""
        else:
            hint = load_hint() if self.hints else ""
        return hint + self.chunk_tma_hint

    @property
    def chunk_tma_hint(self) -> str:
        """The allow_tma keyword of every load in a multi-chunk kernel's chunk loops (the layout's chunk_tma, else
        TUNING["chunk_load_tma"])."""
        tma = self.chunk_tma if self.chunk_tma is not None else TUNING["chunk_load_tma"]
        return f", allow_tma={bool(tma)}" if tma is not None and self.nch > 1 else ""

    @property
    def store_hint(self) -> str:
        if self.store_compiler:
            return ""
        if self.store_tma is not None:
            return f", allow_tma={bool(self.store_tma)}"
        return store_hint() if self.hints else ""

    @property
    def exact(self) -> bool:
        """Every tile of the view lies inside it (no padded lanes anywhere)."""
        return self.O % self.BO == 0 and self.R % self.BR == 0 and (self.kind == "row" or self.I % self.BI == 0)

    @property
    def nch(self) -> int:
        return cdiv(self.R, self.BR)

    @property
    def view_shape(self) -> tuple[int, ...]:
        return (self.O, self.R) if self.kind == "row" else (self.O, self.R, self.I)

    @property
    def tile(self) -> str:
        return f"({self.BO}, {self.BR})" if self.kind == "row" else f"({self.BO}, {self.BR}, {self.BI})"

    @property
    def axis(self) -> int:
        return 1

    @property
    def red_tile(self) -> str:
        return f"({self.BO}, 1)" if self.kind == "row" else f"({self.BO}, 1, {self.BI})"

    @property
    def red_view_shape(self) -> tuple[int, ...]:
        return (self.O, 1) if self.kind == "row" else (self.O, 1, self.I)

    def tiles_grid(self) -> tuple[int, ...]:
        if self.kind == "row":
            return (cdiv(self.O, self.BO),)
        return (cdiv(self.O, self.BO), cdiv(self.I, self.BI))

    def grid(self) -> tuple[int, ...]:
        if self.persistent:
            return (min(self.cap, self.blocks()),)
        return self.tiles_grid()

    def blocks(self) -> int:
        """Number of tiles (= blocks of a non-persistent grid)."""
        return prod(self.tiles_grid())

    def tile_index(self, chunk: str) -> str:
        return f"(pid, {chunk})" if self.kind == "row" else f"(pid, {chunk}, pid_i)"

    def red_index(self) -> str:
        return "(pid, 0)" if self.kind == "row" else "(pid, 0, pid_i)"

    def view_expr(self, tensor: str) -> str:
        """Wrapper expression viewing a tensor of the main input's full shape in this layout."""
        t = tensor
        if self.perm is not None:
            t = f"{t}.permute{tuple(self.perm)}"
        return f"{t}.contiguous().reshape{self.view_shape}"

    def emit_block_coords(self, code: Code) -> None:
        """Coordinates of the block's tile; a persistent kernel opens its loop over row tiles here (the rest of
        the body goes inside it)."""
        col = self.kind != "row"
        if self.persistent:
            code(f"for {'t' if col else 'pid'} in range(ct.bid(0), {self.blocks()}, ct.num_blocks(0)):")
            code.level += 1
            if col:  # (row tile, inner window) pairs, inner windows fastest
                ni = cdiv(self.I, self.BI)
                code(f"pid = t // {ni}")
                code(f"pid_i = t % {ni}")
        else:
            code("pid = ct.bid(0)")
        if self.kind == "row":
            scaled = f"pid * {self.BO}" if self.BO > 1 else "pid"
            code(f"rows = {scaled} + ct.arange({self.BO}, dtype=ct.int32)[:, None]")
        else:
            if not self.persistent:
                code("pid_i = ct.bid(1)")
            code(f"rows = pid * {self.BO} + ct.arange({self.BO}, dtype=ct.int32)[:, None, None]")
            code(f"inner = pid_i * {self.BI} + ct.arange({self.BI}, dtype=ct.int32)[None, None, :]")

    def emit_chunk_coords(self, code: Code, chunk: str) -> None:
        start = "" if chunk == "0" else f"{chunk} * {self.BR} + "
        index = "[None, :]" if self.kind == "row" else "[None, :, None]"
        code(f"cols = {start}ct.arange({self.BR}, dtype=ct.int32){index}")

    def input_groups(self) -> list[tuple[str, list[int]]]:
        groups = [("rows", self.dims_o), ("cols", self.dims_r)]
        if self.kind == "col":
            groups.append(("inner", self.dims_i))
        return groups

    def output_groups(self) -> list[tuple[str, list[int]]]:
        groups = [("rows", self.dims_o)]
        if self.kind == "col":
            groups.append(("inner", self.dims_i))
        return groups

    def needs_mask(self) -> bool:
        return self.R % self.BR != 0

    def valid(self) -> str | None:
        """Boolean expression of the tile lanes inside the reduced extent (None: every lane is)."""
        return f"(cols < {self.R})" if self.needs_mask() else None

    @property
    def count(self) -> int:
        """Elements reduced per row."""
        return self.R

    @property
    def chunk_elems(self) -> int:
        """Reduced elements per row in one chunk tile."""
        return self.BR


def make_layout(shape: list[int], reduced: list[int]) -> Layout:
    """Canonical (M, R) or (O, R, I) view of `shape` reducing/scanning `reduced` (sorted dims)."""
    rank = len(shape)
    red = set(reduced)
    eff = [d for d in range(rank) if shape[d] > 1]
    eff_red = [d for d in eff if d in red]
    eff_keep = [d for d in eff if d not in red]
    if eff_red:
        first, last = eff.index(eff_red[0]), eff.index(eff_red[-1])
        adjacent = eff[first:last + 1] == eff_red
    else:
        adjacent, first, last = True, len(eff), len(eff) - 1
    if adjacent:
        dims_o, dims_r, dims_i = eff[:first], eff_red, eff[last + 1:]
        perm = None
    else:
        dims_o, dims_r, dims_i = eff_keep, eff_red, []
        perm = [d for d in range(rank) if d not in red] + [d for d in range(rank) if d in red]
    O, R, I = (prod(shape[d] for d in g) for g in (dims_o, dims_r, dims_i))
    kind = "row" if I == 1 else "col"
    if kind == "row":
        dims_o = dims_o + dims_i  # empty
    return Layout(kind, list(shape), perm, O, R, I, dims_o, dims_r, dims_i if kind == "col" else [])


def choose_tiles(layout: Layout, tile_elems: int, max_br: int, min_tile: int = 512) -> Layout:
    """Power-of-two tile sizes: whole rows up to `max_br`, else `max_br` chunks; fill the tile with rows, then
    shrink the row block while the grid is smaller than the GPU (keeping at least `min_tile` elements)."""
    L = layout
    if L.kind == "row":
        L.BR = min(pow2_at_least(L.R), max_br)
        L.BO = min(pow2_at_least(L.O), max(1, tile_elems // L.BR))
        while L.BO > 1 and L.blocks() < NUM_SM and L.BO * L.BR > min_tile:
            L.BO //= 2
    else:
        L.BI = min(pow2_at_least(L.I), 128)
        L.BR = min(pow2_at_least(L.R), max(1, tile_elems // L.BI), max_br)
        L.BO = min(pow2_at_least(L.O), max(1, tile_elems // (L.BR * L.BI)))
        while L.BO > 1 and L.blocks() < NUM_SM and L.BO * L.BR * L.BI > min_tile:
            L.BO //= 2
        while L.BI > 32 and L.I >= L.BI and L.blocks() < NUM_SM:
            L.BI //= 2  # narrower column windows for more blocks; the rows per chunk grow to keep the tile size
            L.BR = min(pow2_at_least(L.R), max(1, tile_elems // L.BI), max_br)
    return L


def choose_tiles_full_row(layout: Layout, max_single: int | None = None, chunk: int | None = None,
                          tile_elems: int | None = None, long_tile: int | None = None) -> Layout:
    """Tiles for kernels that keep a whole row in registers when they can (softmax, norms, scans): the full
    reduced extent in one tile up to `max_single` elements, else `chunk`-element chunks; short rows are stacked
    `BO` per tile up to `tile_elems` elements. (Tiles above 8192 elements compile several times slower and to
    much larger cubins, so rows longer than that take two passes.) Defaults come from TUNING; the col layout
    (reduced dims in the middle) keeps windows of at least `col_min_bi` contiguous inner elements so each row
    segment of a load is a full 128-byte line, and keeps (reduced extent x window) whole up to `col_max_single`."""
    L = layout
    explicit = max_single is not None
    max_single = TUNING["max_single"] if max_single is None else max_single
    chunk = TUNING["chunk"] if chunk is None else chunk
    tile_elems = TUNING["row_tile_elems"] if tile_elems is None else tile_elems
    full = pow2_at_least(L.R)
    if L.kind == "row":
        if full > max_single:  # two passes over chunks: rows stacked up to long_tile_elems
            return choose_tiles(L, max(chunk, TUNING["long_tile_elems"] if long_tile is None else long_tile),
                                max_br=chunk)
        L = choose_tiles(L, max(tile_elems, full), max_br=full)
        if TUNING["stack_max_rows"]:
            L.BO = min(L.BO, int(TUNING["stack_max_rows"]))
        return L
    col_single = max_single if explicit else max(max_single, TUNING["col_max_single"])
    bi_min = min(pow2_at_least(L.I), 32 if explicit else max(32, TUNING["col_min_bi"]))
    if full * bi_min <= col_single:
        L.BR = full
        L.BI = min(pow2_at_least(L.I), 256, max(bi_min, max(tile_elems, full * bi_min) // full))
    else:
        L.BI = bi_min
        L.BR = max(1, chunk // L.BI)
    L.BO = min(pow2_at_least(L.O), max(1, tile_elems // (L.BR * L.BI)))
    while L.BO > 1 and L.blocks() < NUM_SM and L.BO * L.BR * L.BI > 512:
        L.BO //= 2
    while L.BI > 32 and L.I >= L.BI and L.blocks() < NUM_SM and L.BO * L.BR * L.BI > 512:
        L.BI //= 2
    return L
