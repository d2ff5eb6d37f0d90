"""Index arithmetic and code-building helpers shared by the gather-style generators (pool, gather, loss, attention).

These generators compute, for every element of an output tile, the coordinates of the element(s) it reads and load
them with `ct.gather` (which honours any strides, so strided views need no copy). The helpers here decode flat
indices into coordinates, build broadcast-aware gather index tuples, load fused side inputs by coordinates (the
`load_side` callback of `expr.emit_elementwise`), map spec outputs to tile variables and assemble a module.
"""

from __future__ import annotations

import math
import re
from typing import Any, Sequence

from ..specs import KernelSpec, OpRecord, TensorSpec
from .base import KernelSource, Unsupported


# Tuning choices of the memory-bound generators (elementwise, pool so far), kept in one table so that
# bench/variants_memory.py can time the alternatives on a GPU and the defaults can be switched here. Each value is
# read when a kernel is generated; every choice is deterministic per shape.
MEMORY_TUNING: dict[str, Any] = {
    # elementwise: bytes of the widest operand moved per block at large sizes (block = this // itemsize, a power
    # of two, 1024..elementwise_block_elems elements): fp32 4096 elements.
    "elementwise_block_bytes": 16384,
    # elementwise: at most this many elements per block. H200, unchecked loads (below): 4096 beats 8192 for 2-byte
    # dtypes (bench/variants_memory.py, same run: x+y bf16 64M 0.132 -> 0.114 ms, bias+relu fp16 0.108 -> 0.101,
    # gelu bf16 0.126 -> 0.112)
    "elementwise_block_elems": 4096,
    # elementwise: full operands of a block whose tile lies inside the tensors load with check_bounds=False (all
    # blocks when the blocks tile the tensors exactly, else all but the last). With bounds checks tileiras guards
    # each 16-byte load with a branch and issues them a few at a time between the math (SASS, sm_90). H200, block
    # 4096: x+y bf16 64M 0.169 -> 0.114 ms (0.62 -> 0.91 of copy); fp32 sigmoid chain unchanged (0.218/0.216)
    "elementwise_unchecked_full": True,
    # elementwise: the @ct.kernel occupancy hint (None: none); extra keyword text on full-tile loads / stores
    # (e.g. ", latency=10", ", allow_tma=True"). H200, x+y bf16 64M, device time, same run (eager 0.094 ms): default
    # 0.096 ms (1.01 of a same-size copy), store allow_tma 0.096, load latency 10 0.096, block 2048 0.095, 8192
    # 0.096; a persistent grid walking the tiles (measured, removed) 4/8/16 blocks per SM 0.105/0.104/0.100
    # elementwise: an operand broadcast only over leading dims (cos/sin of rotary embeddings over batch and heads, a
    # position embedding over the batch) whose trailing part is a whole number of blocks loads its tile whole at
    # block index pid mod (that number), like a full operand, instead of gathering element by element
    "elementwise_lead_broadcast_load": True,
    # elementwise: rotate_half(x) (fusion rule R9) built from the x tile in registers where its halves are powers of
    # two (False: always gathered at rotated offsets; core/kernels/elementwise_rotate.py)
    "elementwise_rotate_shuffle": True,
    # elementwise: a second kernel that reads inputs arriving as strided views in place (elementwise_strided.py),
    # for iteration spaces whose last dim has at least this many elements (0: none; the wrapper copies such inputs
    # to contiguous), in tiles of about this many elements
    # scatter-style ops (scatter.py): the inverse form (each output element walks its candidate updates, one
    # deterministic launch) up to this many updates per element; the atomic form (three launches) beyond
    "scatter_inverse_max": 16,
    "elementwise_strided_min_last": 32,
    # ... and for any last dim where the iteration space has at most this many elements (0: no such rule): a small
    # call is launch-bound, and each copied input is one more launch (a GRU cell's gates over six column slices of
    # its two projections: six copies per step)
    "elementwise_strided_small_numel": 1 << 16,
    "elementwise_strided_tile_elems": 4096,
    # the strided kernel's @ct.kernel occupancy hint (None: none), and whether the loads and stores of its blocks
    # whose (BS, DP) tile lies inside the iteration space skip the bounds checks (D a power of two; all blocks
    # when BS divides S, else all but each lead index's last row block). H200, rotary over a Llama-shaped q viewed
    # per head 4x32x2048x128 bf16 (bench/variants_memory.py, one run, eager 0.475 ms): checked (32, 128) tiles
    # 0.089 ms (0.39 of copy), (16, 128) 0.079, (64, 128) 0.152, (128, 128) 0.295, occupancy 4 / load latency 10 /
    # no TMA 0.089; unchecked (32, 128) 0.043 (0.80), unchecked (64, 128) 0.049
    "elementwise_strided_occupancy": None,
    "elementwise_strided_unchecked": True,
    "elementwise_occupancy": None,
    "elementwise_load_hint": "",
    "elementwise_store_hint": "",
    # pool, aligned windows (kernel == stride, e.g. max_pool2d(2)): "split" views the input as
    # (rows * O0, K0, O1, K1, ...) on the host (rows, O0 separate when In0 > O0 * K0) and loads
    # (BM, K0, BO1, K1, ..) tiles directly (no in-kernel reshape, no partial-tile lanes along O0);
    # "reshape" loads a (BR, BO0*K0, ...) tile and reshapes it in the kernel.
    # H200, max_pool2d(2) 64x128x112x112 bf16 (variants_memory.py, eager 0.330 ms): with -inf padding (a non-TMA
    # load path) reshape 8192 0.769 ms, rows 8192 0.693, split 1.6; with zero padding rows 4096 0.451 ms,
    # rows 8192 0.345, rows 16384 0.280, rows 32768 0.251, split 8192 1.622, reshape 16384 0.319
    "pool_aligned_mode": "rows",
    "pool_aligned_elems": 32768,   # input elements per block
    # the aligned "rows"/"split" views are exact (every padded lane of a tile feeds only an output lane outside the
    # output, which is never stored), so their loads may pad with zeros ("zero", TMA's own fill) instead of the
    # reduction identity ("identity": -inf for max, which the hardware fill cannot produce)
    "pool_aligned_pad": "zero",
    # "rows" layout, 16-bit input, innermost windows exact pairs: read the pairs as int32 and split them with
    # bit operations instead of reshaping the row tile (pool_aligned._pair_view). Specialized sm_90 SASS of
    # max_pool2d(2) 64x128x112x112 bf16: no shared memory and no shuffles (the reshape: 91 KB, 256 SHFL, 200 STS
    # per thread), plain LDGs instead of TMA. H200, same run (eager 0.345 ms): reshape 32768 0.260 ms; pairs
    # 8192 0.123, 16384 0.120, 32768 0.133, 65536 0.144
    "pool_aligned_pairs": True,
    # input bytes per block of the pair view: 16384 bf16 / 8192 fp32 elements. H200, same run (eager: bf16 above,
    # fp32 max_pool2d(2) 32x128x112x112 0.157 ms): fp32 pairs 8192 0.070 ms, 16384 0.084
    "pool_pairs_bytes": 32768,
    # the pair views for float32 inputs too (int64 words split into two float32). H200, 32x128x112x112 fp32, same
    # run, device time: max_pool2d(2) in-kernel reshape 0.569 ms -> pairs 0.070 (eager 0.157); max_pool2d(3, 2, 1)
    # gathers 0.289 -> pair windows 0.072 (1024 outputs; 2048: 0.073; eager 0.205)
    "pool_pairs_fp32": True,
    # 16-bit pools through int64 words of four elements, two outputs packed per int32 store (pool_quads.py): the
    # 2-wide aligned windows and max_pool(3, 2, 1). H200, same run, device time (session 7): max_pool2d(2)
    # 64x128x112x112 bf16 int32 pairs 16384 0.095 ms (0.67 of a same-size copy) -> quads 32 KB 0.076, 16 KB
    # 0.062 (1.04; eager 0.306); max_pool2d(3, 2, 1) fp16 int32 pairs 1024 outputs 0.138 -> quads 1024 0.090
    # (0.71), 2048 0.109 (eager 0.415)
    "pool_quads": True,
    "pool_quads_bytes": 16384,  # input bytes per block of the 2-wide quad view (above)
    # max_pool(3, 2, 1) of 16-bit inputs through quads with the output as one flat run of int32 words, each
    # block storing a dense slice and gathering its input words (as pad_words_flat). H200, session 11, same run,
    # device time, max_pool2d(3, 2, 1) 64x128x112x112 fp16: quad tiles 1024 outputs 0.090 ms (0.70 of a
    # same-size copy) -> flat 1024 words 0.075 (0.84, 5.50x eager); 512 words 0.080, 2048 0.089
    "pool_quads_flat": True,
    "pool_quads_flat_words": 1024,  # output words per block
    # max_pool(3, 2, 1) of 16-bit inputs over an even last dim: int32 pairs with shifted dense-slice loads
    # (pool_pairs.py) instead of per-window-element gathers; outputs per block. H200, max_pool2d(3, 2, 1)
    # 64x128x112x112 fp16, same run (eager 0.443 ms): gathers 0.344 ms; pairs 1024 outputs 0.156, 2048 0.164,
    # 4096 0.171
    "pool_pair_windows": True,
    # ... with the output as one flat run of elements, dense vector stores, gathered pair words (as
    # pool_quads_flat; no fused epilogue): float32 max_pool(3, 2, 1) and 16-bit widths that are not a multiple of
    # 4. H200, session 12, same run, device time, max_pool2d(3, 2, 1) 32x128x112x112 fp32: int64 pair windows
    # 512 outputs 0.069 ms (0.92 of a same-size copy) -> flat 512 outputs 0.064 (1.00, 3.20x eager); 1024 0.072,
    # 2048 0.080
    "pool_pairs_flat": True,
    "pool_pairs_flat_outputs": 512,
    "pool_pair_window_outputs": 1024,
    # the same for float32 inputs (int64 pairs). H200, session 9, same run, device time (bench/gpu_session.sh
    # prepared-mem): max_pool2d(3, 2, 1) 32x128x112x112 fp32 1024 outputs 0.072 ms (0.87 of copy), 512 0.069
    # (0.91); the fp16 quads stay at 1024 (512: 0.091 ms, 1024 0.090, 256 0.103)
    "pool_pair64_window_outputs": 512,
    # pool, general windows (max_pool2d(3, 2, 1), ...): gathered outputs per block and output positions per row
    "pool_window_outputs": 2048,
    # pool, overlapping windows at a power-of-two stride dividing the input (max_pool2d(3, 2, 1) on even sizes):
    # "shifted" loads one tile-aligned tile per distinct window shift from a split view (pool._shifted);
    # "gather" keeps the general per-window-element gathers. Outputs per block; at most this many outputs along
    # the innermost dim / each outer spatial dim (the rest of the block goes to rows = channels, which have no
    # halo): a block at the start of a dim reads its shifted halo tiles with a gather, so spatial tiles stay a
    # fraction of the output size (56x56 outputs: 7 x 4 spatial blocks of 8 x 16, 8 channels each)
    # H200, max_pool2d(3, 2, 1) 64x128x112x112 fp16 (eager 0.426 ms): gather 2048 outputs 0.343 ms; shifted
    # merged 1024 0.786 ms, 2048 0.954, split 2.97-3.2 (its -inf padded loads take the non-TMA path)
    "pool_overlap_mode": "gather",
    "pool_overlap_outputs": 1024,
    "pool_overlap_cols": 16,
    "pool_overlap_rows": 8,
    # innermost dim of the view: "split" (.., W/s, s) loads exactly the phases a shift needs (strided when s > 1);
    # "merged" (.., W) loads whole contiguous (output, phase) runs and masks the unneeded phases in registers
    "pool_overlap_inner": "merged",
    "pool_window_cols": 256,
    # scans (cumsum, cumprod, logcumsumexp, cummax/cummin): rows up to scan_max_single elements in one tile
    # (short rows stacked up to scan_tile_elems), longer ones in chunks of scan_chunk_elems with a carry; a scan
    # over a middle dim reads scan_col_bi contiguous inner elements per tile row; when fewer than
    # scan_min_blocks blocks would walk the chunks, rows are cut into up to scan_max_segments segments
    "scan_max_single": 4096,
    "scan_tile_elems": 4096,
    "scan_chunk_elems": 4096,
    "scan_col_bi": 64,
    "scan_min_blocks": 1024,
    # the same for a scan over a middle dim (column strips). H200, cumsum dim=1 64x4096x64 bf16 (strips of 64),
    # same run, device time (session 7): >= 512 blocks 0.069 ms, >= 1024 0.078, >= 2048 0.101; one pass over
    # strips of 16 (256 blocks) 0.075, of 8 0.087 (session 5, wall time: 0.092 / 0.118 / 0.138)
    "scan_col_min_blocks": 512,
    # load latency hint (None: none) in the chunk loops of chunked scans (and their segment totals). H200, session
    # 8: no better (cumsum dim=1 64x4096x64 bf16 0.069 -> 0.071 ms, 64x1048576 fp32 0.282 -> 0.283)
    "scan_latency": None,
    # allow_tma on the chunk loads of chunked scans (None: rowwise TUNING["chunk_load_tma"], the compiler's TMA).
    # sm_90, cumsum 64x1048576 fp32: the TMA totals kernel stages its 16 unrolled chunk loads in 149 KB of shared
    # memory at R255 (one block per SM), with plain loads R78 and 1 KB; the scan kernel R255 -> R168. Yet TMA
    # stays faster: H200, session 12, same run, device time: cumsum 64x1048576 fp32 0.283 -> 0.307 ms with plain
    # loads (latency 4: 0.307), cumsum dim=1 64x4096x64 bf16 0.054 -> 0.120 (correct either way: 48 passed)
    "scan_chunk_tma": None,
    # @ct.kernel(occupancy=...) for the two passes of a segmented scan (None: no hint). Nsight Compute on the H200
    # (session 12): cumsum 64x1048576's scan pass ran 256-thread blocks at 255 registers, one block per SM
    # (12.5 % theoretical occupancy, DRAM 41 %). sm_90 with the hints: totals R255 / 149 KB -> R128 / 116 KB
    # (2) or R64 / 50 KB (4), scan R255 -> R128 (2) or R80 (3), no spills. H200, session 13, same run, device
    # time: cumsum 64x1048576 fp32 0.283 ms without hints, 0.227 at 2 / 2, 0.224 at 4 / 3 (0.45 -> 0.57 of a
    # copy), 0.228 at - / 2, 0.221 at 4 / 3 with >=2048 blocks; cumsum dim=1 64x4096x64 bf16 0.054 either way
    "scan_totals_occupancy": 4,
    "scan_segment_occupancy": 3,
    # the same hint for scans whose lines each take one tile (chunk loops with a carry: sm_90 cumsum 3x10000 fp32
    # spills 56 bytes at 4, so they keep no hint). sm_90, cumsum 4096x4096 fp32 (one (1, 4096) tile per row of
    # 128 threads): R168 without a hint, R127 at 4, R80 with a 16-byte spill frame at 6. H200, session 13, same
    # run, device time: 0.045 ms without, 0.040 at 4 (0.77 -> 0.86 of a copy), 0.039 at 6
    "scan_single_occupancy": 4,
    # single-tile scans (rows up to scan_max_single) on the row kernels' persistent grid with their load/store
    # hints (rowwise.Layout.persist). H200, session 11, same run: cumsum 4096x4096 fp32 0.046 -> 0.062 ms
    "scan_persistent": False,
    "scan_max_segments": 64,
    # cumsum over a middle dim of 16-bit inputs (no prologue: the operand must be exact in its own dtype) on
    # tensor cores: each (BR x BI) chunk tile is scanned as tri @ x, tri the BR x BR lower-triangular ones
    # (exact in fp16/bf16; float32 accumulation), instead of ct.cumsum along the tile's middle axis, with rows cut
    # into segments while fewer than scan_mma_col_min_blocks blocks would walk them. H200, session 10, same run,
    # device time, cumsum dim=1 64x4096x64 bf16: ct.cumsum at >= 512 blocks 0.069 ms (0.28 of a copy); tensor
    # cores at >= 512 blocks 0.062, at >= 128 blocks 0.054 (0.36), in one pass 0.081
    "scan_mma": True,
    "scan_mma_col_min_blocks": 128,
    # the same for float cumsums along rows (rows of 1024..scan_max_single elements, one tile each): the tile
    # viewed as (BR/64, 64) is scanned within each 64 by x @ triu on tensor cores (16-bit inputs without a
    # prologue as they are; float32 as a tf32 hi + lo pair, two mmas, ~float32 accuracy), then the 64-wide blocks
    # get the exclusive prefix of their totals (a ct.cumsum of BR/64 values); in chunk loops the carry grows by
    # the chunk's total (extracting the scanned tile's last element after the reshape spilled 49 KB per thread
    # on sm_90; this form has a zero frame). H200, session 10, same run, device time: cumsum 4096x4096 fp32 0.046
    # -> 0.130 ms; 64x1048576 fp32 (chunked) 0.283 -> 0.293, 0.275 at >= 256 blocks (noise): off
    "scan_mma_rows": False,
    # long-row float cumsums in one pass with a decoupled look-back (scan.py _LookBack): one chunk per block in
    # the order of an atomic ticket, each block publishing its chunk total, then its running prefix, as one
    # 64-bit (flag, float32) word that later blocks of the row read back. Reads the input once (the segmented
    # form reads it 1.5-2x). Correct under real concurrency (tests/kernels/test_scan_lookback_gpu.py, H200 session
    # 9: 18 passed) but slower: cumsum 64x1048576 fp32 segmented 0.282 ms, look-back chunks of 4096 / 8192 0.790 /
    # 0.476 (the serial chain of look-backs, not the bytes, bounds it)
    "scan_lookback": False,
    # ... rows (not the middle-dim form) whose blocks, instead of walking back one status word per round trip,
    # read every earlier chunk's total of their row in one vector of atomic reads (up to scan_lookback_all_max
    # chunks per row) and wait until all are published: no running prefixes, no chain. Correct on the H200
    # (session 11: 12 passed) but slower still: cumsum 64x1048576 fp32 segmented 0.283 ms, all earlier totals in
    # chunks of 4096 / 8192 / 8192 on 8 warps 0.527 / 0.401 / 0.391
    "scan_lookback_all": False,
    "scan_lookback_all_max": 512,
    # the look-back's tickets chunk-major (a block per chunk c of every scan line before any chunk c + 1) instead
    # of line by line, so the blocks in flight hold a few chunks of each line, not all of a few lines (and the
    # walks stay short); its walk reading scan_lookback_window status words per round trip (1: one word); its
    # occupancy hint; allow_tma on its chunk loads / stores (None: the compiler's TMA staging); the chunk total
    # published before the chunk's own scan. H200, session 14, same run, device time, cumsum 64x1048576 fp32
    # (segmented default 0.224 ms, 0.57 of a copy): look-back line by line 0.797 | chunk-major 0.553 | + occupancy
    # 4 0.190 (0.67; sm_90 R255 -> R64, 50 KB shared) | + window 8 0.201 | window 2 0.201 | + plain loads and
    # stores 0.188 | **at occupancy 6 0.179 (0.71; R80, 25 KB, 4 warps: no TMA producer warps)** | early total
    # 0.179 (same) | chunks of 2048 at 8 0.193, of 8192 at 3 0.186
    "scan_lookback_chunk_major": True,
    "scan_lookback_window": 1,
    "scan_lookback_occupancy": 6,
    "scan_lookback_load_tma": False,
    "scan_lookback_store_tma": False,
    "scan_lookback_early_total": False,
    # float cumsums along rows (one row per tile) scanned in blocks of scan_split_width elements (0: a plain
    # ct.cumsum), scan_split_levels levels deep (scan.emit_split_cumsum): each thread scans its own 16-byte load,
    # only block totals cross lanes. H200, session 15, same run, device time: cumsum 64x1048576 fp32 (look-back)
    # 0.180 -> 0.150 ms (0.71 -> 0.85 of a copy; 3 levels 0.150; chunks of 8192 at occupancy 4 0.146), 4096x4096
    # 0.041 -> 0.038 (0.88 -> 0.94), 512x16384 0.031 -> 0.024, exclusive 128x65536 0.043 -> 0.024. int64 sums
    # keep ct.cumsum (4096x4096 int64 0.078 -> 0.095 split: slower)
    "scan_split_width": 4,
    "scan_split_levels": 2,
    # float cumsum rows too few to fill the GPU with a chunk loop each (fewer than scan_min_blocks, which the
    # segmented form would cut into segments) take the one-pass look-back with the settings above: cumsum
    # 64x1048576 fp32 0.224 -> 0.179 ms. Middle-dim scans keep their segments (cumsum dim=1 64x4096x64 bf16:
    # segmented on tensor cores 0.054 ms, look-back chunk-major in chunks of 8192 at occupancy 2 0.092)
    "scan_lookback_rows": True,
    # segmented float cumsums in one kernel: segments of this many chunks (0: two kernels, totals then scan),
    # each block reducing its segment, taking the earlier segments' total by look-back, then scanning the
    # segment (its loads hit L2); scan_fused_occupancy: the kernel's occupancy hint. Correct on the H200 (session
    # 14: 15 passed) but no faster, same run, device time: cumsum 64x1048576 fp32 (look-back 0.180 ms) segments
    # of 2 / 4 / 8 chunks at occupancy 4 0.184 / 0.202 / 0.216, 4 at 3 0.194, at 6 0.236; cumsum dim=1
    # 64x4096x64 bf16 (segmented 0.054-0.055) 8 chunks 0.056, 4 / 16 0.058, 2 0.064: off
    "scan_fused_segments": 0,
    "scan_fused_occupancy": None,
    # cross entropy over plain (N, C) logits: classes per chunk and elements per (rows x classes) tile
    # H200, cross_entropy 4096x65536 bf16: 1024 x 4 rows 0.231 ms, 2048 x 2 0.246, 4096 x 1 row 0.198 (eager 0.452)
    "ce_cols": 4096,
    "ce_tile_elems": 4096,
    # latency hint (None: none) on the chunk loads of the plain-logits loop: a deeper prefetch past each chunk's
    # row-max reduction. H200, session 8 (variants_memory.py --only cross_entropy): 4096x65536 bf16 0.180 ms
    # without, 0.171 with 4 or 10 (0.73 -> 0.77 of copy)
    "ce_latency": 4,
    # the plain-logits loop without a row max per chunk: every lane keeps its own running max m and sum l, and
    # since one of exp(m - max(m, x)) and exp(x - max(m, x)) is 1, one exponential e = exp(-|x - m|) per element
    # updates both (l = l * e + 1 where x > m, else l + e); the lanes meet once per row at the end. No block
    # reduction (and barrier) per chunk. Correct on the H200 (session 12: 5 passed) but slower: cross_entropy
    # 4096x65536 bf16 0.171 -> 0.202 ms (8192 x 1 row 0.277, 2048 x 2 rows 0.199): the extra per-element
    # arithmetic costs more than the barriers it saves (fewer instructions per logit is what helped: ce_exp_ftz)
    "ce_lane_max": False,
    # the class loop's exponentials as ct.exp2(..., flush_to_zero=True): terms below float32's normal range (at
    # least 2^126 under the running max, nothing to a sum that holds a 1) flush to zero, and the denormal-range
    # fix-up around each MUFU.EX2 goes (sm_90 SASS of the 4096x65536 bf16 loop body: 592 -> 496 instructions,
    # one FSETP and two FMUL fewer per logit). H200, session 12, device time: cross_entropy 4096x65536 bf16
    # 0.171 ms (0.77 of a same-size copy; two runs) -> 0.164 (0.80, 2.67x eager); with 2048 x 2 rows 0.193,
    # 8192 x 1 row 0.184
    "ce_exp_ftz": True,
    # plain logits whose rows are not 16-byte aligned read through aligned tiles of the flat tensor (loss_ce
    # .flat_rows; sm_90, 50257 bf16 classes: 16-bit element loads -> 4 LDG.E.128 per chunk, R88, no spill). H200,
    # session 16, same run, device time, cross_entropy 4096x50257 bf16 (eager 0.303 ms): (N, C) tiles 0.600
    # (0.51x eager) -> flat 0.255 (1.19x)
    "ce_flat": True,
    # pool, global (adaptive_avg_pool2d(1), ...): positions per load (a power of two, at most) and elements per tile
    # H200, adaptive_avg_pool2d(1) 128x512x28x28 fp32: 256 cols x 4096 0.112 ms, 512 x 4096 0.174 ms,
    # 256 x 8192 0.085 ms, 512 x 8192 0.118 ms (eager 0.073)
    "pool_global_cols": 256,
    # session 9, same run, device time (bench/gpu_session.sh prepared-mem): 256 x 8192 0.065 ms (0.78 of copy,
    # 0.97x eager), 256 x 16384 0.060 (0.85, 1.06x eager)
    "pool_global_elems": 16384,
    # allow_tma on the global pool's loads (None: the compiler's TMA tiles, staged in shared memory: 102 KB per
    # block for adaptive_avg_pool2d(1) 128x512x28x28 fp32; plain loads: none). H200, session 8: plain loads 0.097
    # ms vs TMA 0.066
    "pool_global_tma": None,
    # gather family (embedding, pad, index, ...): output elements per (BR rows x BL <= 1024 columns) tile
    "gather_tile_elems": 4096,
    # the generic gather kernel's occupancy hint (gather.tiled; None: none). sm_90 SASS without one: bucketize 64M
    # fp32 into 1023 boundaries takes 132 KB of shared memory per block (one block per SM), at 4 9 KB. H100,
    # session 31: bucketize 1.767 ms (0.38x eager) -> 0.787 (0.86x) at 4 or 8, 1.211 at 2; unfold 3x3 unchanged
    "gather_occupancy": 4,
    # whole-number upscaling at input resolution (gather_upscale.py: nearest by 2^k, bilinear x2): one dense store of
    # a (fh*BH, fw*BW) output tile per block of "upscale_tile_elems" outputs instead of per-pixel gathers. H100,
    # sessions 30-31, 32x128x128x128 bf16 x2: nearest gathers 0.346 ms (0.64 of copy) -> 0.232 (0.96, 2.69x
    # eager) at 1024-4096 outputs per block (512: 0.334); bilinear gathers 1.399 -> 0.408 (4.25x eager) at 1024
    # (512: 0.568, 2048: 0.664, 4096: 1.254, 8192: 2.468). sm_90 SASS per thread (bench/sass_widths.py --ops):
    # nearest 32 LDG.U16 + 568 instructions -> one LDG.128 + 224; bilinear R236, 128 LDG.U16, 1800 instructions ->
    # R106, 72 LDG.U16, 864
    "upscale_whole": True,
    "upscale_tile_elems": 1024,
    # zero padding of the last one/two dims as shifted 32-bit word copies (gather_words.py) instead of per-element
    # gathers; words per block. H200, pad (1, 1, 1, 1) 64x128x112x112 fp16, same run (eager 0.331 ms): gathers
    # 0.202 ms (0.50 of a same-size copy); words 2048 per block 0.151 (0.67), 4096 0.158, 8192 0.173
    "pad_words": True,
    "pad_words_tile": 2048,
    # ... with the output as one flat run of 32-bit words (gather_words.flat_generate): each block stores a dense
    # slice (vector stores; rows of 57 words store 4 bytes at a time as tiles) and gathers its input words.
    # H200, session 11, same run, device time: 2048 words per block 0.108 ms (0.93 of a same-size copy, 3.07x
    # eager; the row tiles above 0.150), 1024 0.111, 4096 0.110
    "pad_words_flat": True,
    "pad_flat_tile": 2048,
    # embedding lookups as 64-bit word copies of the table rows (gather_words.py). H200, same run, device time
    # (session 7), embedding 65536x1024 bf16: elements 4096 per tile 0.074 ms (0.90 of a same-size copy), words
    # 4096 0.066 (1.01), words 8192 0.066 (eager 0.071)
    "embedding_words": True,
}


def prod(xs: Sequence[int]) -> int:
    return int(math.prod(xs)) if xs else 1


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(int(n), 1)
    return strides[::-1]


def tup(items: Sequence[Any]) -> str:
    items = [str(i) for i in items]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def is_ref(v: Any) -> bool:
    return isinstance(v, dict) and "ref" in v


def decode(flat: str, shape: Sequence[int], lines: list[str], indent: str, prefix: str,
           bound_outer: bool = False) -> list[str]:
    """Coordinates of the row-major flat index `flat` within `shape`: one expression per dim ("0" for size-1
    dims), assigned to `<prefix><d>` variables. The outermost dim is not reduced modulo its size unless
    `bound_outer` (out-of-range flat indices then give out-of-range coordinates, which gathers pad)."""
    strides = contiguous_strides(shape)
    out = []
    for d, (n, st) in enumerate(zip(shape, strides)):
        if n == 1:
            out.append("0")
            continue
        expr = flat if st == 1 else f"({flat} // {st})"
        if d > 0 or bound_outer:
            expr = f"{expr} % {n}"
        name = f"{prefix}{d}"
        lines.append(f"{indent}{name} = {expr}")
        out.append(name)
    return out


def flat_run_coords(bid: str, per_row: int, col: str, indent: str = "    ") -> list[str]:
    """A block's place in a flat run of output words (the flat pad and pool forms): o = its B words from block
    `bid`, m = their row (`per_row` words each), `col` = their word in the row."""
    return [f"{indent}o = {bid} * B + ct.arange(B, dtype=ct.int32)", f"{indent}m = o // {per_row}",
            f"{indent}{col} = o - m * {per_row}"]


def flat_index(coords: Sequence[str], shape: Sequence[int]) -> str:
    """The row-major flat index expression of `coords` within `shape`."""
    terms = []
    for c, st, n in zip(coords, contiguous_strides(shape), shape):
        if n == 1 or c == "0":
            continue
        terms.append(c if st == 1 else f"{c} * {st}")
    return " + ".join(terms) if terms else "0"


def broadcast_index(tshape: Sequence[int], full_shape: Sequence[int], coords: Sequence[str], what: str) -> list[str]:
    """Gather indices of a tensor of shape `tshape` broadcast (right-aligned) to `full_shape`, whose coordinates
    are `coords`. A 0-d tensor is passed to kernels reshaped to (1,)."""
    if not tshape:
        return ["0"]
    off = len(full_shape) - len(tshape)
    if off < 0:
        raise Unsupported(f"{what}: shape {list(tshape)} has more dims than {list(full_shape)}")
    idx = []
    for i, n in enumerate(tshape):
        if n == 1:
            idx.append("0")
        elif n == full_shape[i + off]:
            idx.append(coords[i + off])
        else:
            raise Unsupported(f"{what}: shape {list(tshape)} does not broadcast to {list(full_shape)}")
    return idx


def array_param(t: TensorSpec) -> str:
    return f"a_{t.name}"


def word_views(x: str, elements: int, word: str) -> list[str]:
    """Wrapper suffixes (`x = x<suffix>`) viewing the tensor `x` as words of `elements` elements (dtype `word`):
    a tensor whose start is not a whole word into its buffer (a flat buffer sliced by one) cannot be viewed so and
    is copied first."""
    copy = [f".clone() if {x}.storage_offset() % {elements} else {x}"] if elements > 1 else []
    return copy + [f".view({word})"]


def out_param(t: TensorSpec) -> str:
    return f"o_{t.name}"


def scalar_param(t: TensorSpec) -> str:
    return f"s_{t.name}"


class SideLoader:
    """`load_side` for emit_elementwise: loads a spec input at the current tile's coordinates (broadcast)."""

    def __init__(self, spec: KernelSpec, coords: Sequence[str], full_shape: Sequence[int], tile_shape: str,
                 lines: list[str], indent: str, exclude: Sequence[str] = ()):
        self.inputs = {t.graph_value: t for t in spec.inputs}
        self.coords, self.full_shape, self.tile_shape = list(coords), list(full_shape), tile_shape
        self.lines, self.indent, self.exclude = lines, indent, set(exclude)
        self.count = 0

    def __call__(self, value: str) -> str:
        t = self.inputs.get(value)
        if t is None or value in self.exclude:
            raise Unsupported(f"fused operand {value} is neither a kernel input nor computed in the kernel")
        if t.role == "scalar":
            return scalar_param(t)
        idx = broadcast_index(t.shape, self.full_shape, self.coords, f"fused operand {t.name}")
        self.count += 1
        var = f"sd_{t.name}_{self.count}"
        self.lines.append(f"{self.indent}{var} = ct.broadcast_to(ct.gather({array_param(t)}, {tup(idx)})"
                          f".astype(ct.float32), {self.tile_shape})")
        return var


def elementwise(ops: list[OpRecord], env: dict[str, str], load_side, lines: list[str], indent: str) -> dict:
    if not ops:
        return env
    for rec in ops:
        if not rec.category.startswith("elementwise"):
            raise Unsupported(f"{rec.target} fused into this kernel is not elementwise")
    from .expr import emit_elementwise

    return emit_elementwise(ops, env, load_side, lines, indent)


def tuple_items(spec: KernelSpec) -> dict[str, tuple[str, int]]:
    """getitem values of tuple results: name → (tuple value, index), read from the spec's reference."""
    out = {}
    for m in re.finditer(r"^\s*(\w+) = (\w+)\[(\d+)\]\s*$", spec.reference, re.M):
        out[m.group(1)] = (m.group(2), int(m.group(3)))
    return out


def split_anchor(spec: KernelSpec, category: str) -> tuple[list[OpRecord], OpRecord, list[OpRecord]]:
    """(prologue ops, the anchor op, epilogue ops) of a spec with exactly one anchor of `category`."""
    idx = [i for i, r in enumerate(spec.ops) if r.category == category]
    if len(idx) != 1:
        raise Unsupported(f"expected one {category} op in the kernel, found {len(idx)}")
    i = idx[0]
    return spec.ops[:i], spec.ops[i], spec.ops[i + 1:]


def input_for(spec: KernelSpec, v: Any, what: str) -> TensorSpec:
    if not is_ref(v):
        raise Unsupported(f"{what}: expected a tensor argument, got {v!r}")
    for t in spec.inputs:
        if t.graph_value == v["ref"]:
            return t
    raise Unsupported(f"{what}: tensor {v['ref']} is not a kernel input")


def module(spec: KernelSpec, kernels: list[str], wrapper: str, kernel_names: list[str],
           notes: list[str] | None = None) -> KernelSource:
    code = "\n\n".join(k.rstrip("\n") + "\n" for k in kernels) + "\n\n" + wrapper.rstrip("\n") + "\n"
    return KernelSource(spec_id=spec.id, family=spec.family, code=code, launch_name=f"launch_{spec.id}",
                        kernel_names=kernel_names, notes=notes or [])


def one_kernel_module(spec: KernelSpec, kernel: list[str], grid: int, consts: list, note: str) -> KernelSource:
    """A module of one `<id>_kernel` launched over a 1-d grid of `grid` blocks with (inputs, outputs, consts)."""
    name = f"{spec.id}_kernel"
    w: list[str] = []
    device = wrapper_head(spec, w)
    alloc_outputs(spec, device, w)
    w.append(f"    ct.launch(torch.cuda.current_stream(), ({grid}, 1, 1), {name}, "
             f"({', '.join(input_args(spec) + [o.name for o in spec.outputs] + [str(c) for c in consts])}))")
    w.append(ret_outputs(spec))
    return module(spec, ["\n".join(kernel)], "\n".join(w), [name], [note])


def wrapper_head(spec: KernelSpec, lines: list[str]) -> str:
    """`def launch_<id>(...)` plus the array/scalar argument bindings; returns the device expression."""
    params = ", ".join(t.name for t in spec.inputs)
    lines.append(f"def launch_{spec.id}({params}):")
    device = None
    for t in spec.inputs:
        if t.role == "scalar":
            lines.append(f"    {scalar_param(t)} = {t.name}")
            continue
        device = device or f"{t.name}.device"
        view = f"{t.name}.reshape(1)" if not t.shape else t.name
        lines.append(f"    {array_param(t)} = {view}")
    if device is None:
        raise Unsupported("a kernel with no tensor input")
    return device


def alloc_outputs(spec: KernelSpec, device: str, lines: list[str]) -> None:
    for o in spec.outputs:
        lines.append(f"    {o.name} = torch.empty({tuple(o.shape)!r}, dtype=torch.{o.dtype}, device={device})")


def ret_outputs(spec: KernelSpec) -> str:
    names = [o.name for o in spec.outputs]
    return f"    return {names[0]}" if len(names) == 1 else f"    return {', '.join(names)}"


def input_args(spec: KernelSpec, skip: Sequence[str] = ()) -> list[str]:
    """Kernel arguments / parameters for every spec input (arrays then scalars in spec order)."""
    return [array_param(t) if t.role != "scalar" else scalar_param(t) for t in spec.inputs if t.name not in skip]


def output_vars(spec: KernelSpec, env: dict[str, str]) -> list[tuple[TensorSpec, str]]:
    """Each spec output with the tile variable holding it (tuple elements resolved through the reference)."""
    items = tuple_items(spec)
    out = []
    for o in spec.outputs:
        gv = o.graph_value or o.name
        var = env.get(gv)
        if var is None and o.name in items:
            src, i = items[o.name]
            var = env.get(f"{src}[{i}]")
        if var is None:
            raise Unsupported(f"output {o.name} is not computed by this kernel's generator")
        out.append((o, var))
    return out


def register_tuple_items(spec: KernelSpec, env: dict[str, str], node: str, elements: Sequence[str | None]) -> None:
    """Make the tuple elements of `node` visible in env both as `node[i]` and under their getitem names."""
    for i, var in enumerate(elements):
        if var is not None:
            env[f"{node}[{i}]"] = var
    for name, (src, i) in tuple_items(spec).items():
        if src == node and i < len(elements) and elements[i] is not None:
            env[name] = elements[i]


def guarded(generate):
    """Turn an unexpected argument shape (a parse error inside a generator) into Unsupported, naming the ops, so
    one odd spec becomes an explicit skeleton instead of aborting the composition of the whole model."""
    import functools

    @functools.wraps(generate)
    def wrapper(spec: KernelSpec) -> KernelSource:
        try:
            return generate(spec)
        except Unsupported:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise Unsupported(f"{', '.join(r.target for r in spec.ops)}: unexpected arguments "
                              f"({type(exc).__name__}: {exc})") from exc

    return wrapper
