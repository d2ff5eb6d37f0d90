"""Pooling kernels: max/avg pooling (1d/2d/3d, with indices), adaptive avg/max pooling, fused elementwise epilogue.

Layout: the input is (lead..., *spatial) with nd spatial dims (lead is (N, C), (C,) or anything else); the output
(lead..., *out_spatial) is tiled as a 2-D (rows = lead elements, cols = output positions) problem. This module
parses the op (PoolOp) and picks one of five paths, in this order; pool_paths.py, pool_aligned.py and
pool_pairs.py emit them:
- global (every output spatial size 1 and a window covering the whole input, adaptive pooling to 1 included): a
  row reduction over (BR, BS) tiles of the (rows, positions) view, coalesced `ct.load`s, float32 accumulation.
- aligned (kernel == stride, power-of-two kernel, no padding/dilation/indices: the common max_pool2d(2)): the
  wrapper views the input so that every window offset is its own axis, (rows, O0, K0, O1, K1, ...) or, when the
  first dim splits exactly, (rows * O0, K0, O1, K1, ...); each block loads a whole-window tile with `ct.load` and
  reduces the K axes (ceil_mode tails: load + in-kernel reshape). With 2-wide innermost windows over an even
  width and a 16-bit input (float32 with MEMORY_TUNING["pool_aligned_pairs"/"pool_pairs_fp32"]), each pair of
  elements is read as one int32 (int64) word and split with bit operations, one load per outer window offset: no
  in-kernel reshape. Tile sizes and the layout come from indexing.MEMORY_TUNING.
- pair windows (pool_pairs.py; max pooling with kernel 3, stride 2, padding 1 over an even last dim of a 16-bit
  input, any window along the outer dim): pair words loaded at element offsets with `ct.load_advanced_indexing`,
  so the left neighbour pair is one shifted dense slice instead of a gather.
- shifted (overlapping windows, no dilation/indices, power-of-two stride dividing each input dim: max_pool2d(3, 2,
  1) on even sizes, 3x3/1 pools): the input is viewed as (rows, In0/s0, s0, ..., InL) and every distinct window
  shift is one tile-aligned `ct.load` of that view sliced at the block's first output + shift (`Array.slice`);
  blocks at the start of a dim read their negative-shift halo with a bounds-checked `ct.gather`. Only when
  MEMORY_TUNING["pool_overlap_mode"] == "shifted".
- windowed (the general gather path, adaptive pooling included): each block owns a (BR, BP) tile of outputs,
  walks the pooling window with runtime loops and reads the window element of every output with one `ct.gather`
  (int32 offsets into a flat view of the input when it has < FLAT_LIMIT elements, per-dim indices otherwise);
  window elements outside the input are masked to -inf (max) or 0 (avg). Windows follow PyTorch exactly:
  start = o*stride - pad (+ k*dilation); the avg divisor clips the window to the padded input first
  (count_include_pad) or to the input (exclude pad), divisor_override wins; adaptive windows are
  [floor(o*In/Out), ceil((o+1)*In/Out)); max keeps the first maximum (NaN propagates) and its flat spatial index.
ceil_mode only changes the output size, which the spec carries.
"""

from __future__ import annotations

from ..specs import KernelSpec, OpRecord
from .base import KernelSource, Unsupported
from .expr import bind_args
from .indexing import MEMORY_TUNING, guarded, input_for, prod, tuple_items
from .pool_pairs import generate_pair_windows, pair_windows_fit
from .pool_aligned import generate_aligned
from .pool_quads import generate_quad_windows, generate_quads, quad_windows_fit, quads_fit
from .pool_paths import generate_global, generate_shifted, generate_windowed, shift_groups

FLAT_LIMIT = 2 ** 31  # inputs with fewer elements are gathered through a flat view with int32 offsets

_KINDS = {
    "max_pool1d": ("max", 1), "max_pool2d": ("max", 2), "max_pool3d": ("max", 3),
    "max_pool1d_with_indices": ("max", 1), "max_pool2d_with_indices": ("max", 2),
    "max_pool3d_with_indices": ("max", 3),
    "avg_pool1d": ("avg", 1), "avg_pool2d": ("avg", 2), "avg_pool3d": ("avg", 3),
    "adaptive_avg_pool1d": ("aavg", 1), "adaptive_avg_pool2d": ("aavg", 2), "adaptive_avg_pool3d": ("aavg", 3),
    "_adaptive_avg_pool2d": ("aavg", 2), "_adaptive_avg_pool3d": ("aavg", 3),
    "adaptive_max_pool1d": ("amax", 1), "adaptive_max_pool2d": ("amax", 2), "adaptive_max_pool3d": ("amax", 3),
}
_TUPLE_OPS = {"max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
              "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d"}


def _ints(v, nd: int, default=None) -> list[int]:
    if v is None or v == []:
        if default is None:
            raise Unsupported(f"missing pooling parameter (got {v!r})")
        return list(default)
    if isinstance(v, int):
        return [v] * nd
    v = [int(x) for x in v]
    return v * nd if len(v) == 1 else v


def _indices_used(spec: KernelSpec, rec: OpRecord) -> bool:
    """Whether anything reads element 1 (the indices) of a (values, indices) pooling result."""
    names = {n for n, (src, i) in tuple_items(spec).items() if src == rec.node and i == 1}
    used = {o.graph_value for o in spec.outputs} | {o.name for o in spec.outputs}
    used |= {v for r in spec.ops for v in r.inputs}
    return bool(names & used)


class PoolOp:
    """The parsed pooling op: kind (max, avg, aavg = adaptive avg, amax = adaptive max), rank nd, the
    input's lead and spatial dims, the output's spatial dims and window kernel / stride / padding / dilation per
    dim (adaptive pooling: its largest window, stride 1, no padding)."""

    def __init__(self, spec: KernelSpec, rec: OpRecord):
        op = rec.op
        if op not in _KINDS:
            raise Unsupported(f"{rec.target}: no pooling generator for this op")
        self.kind, nd = _KINDS[op]
        self.nd = nd
        a = bind_args(rec)
        self.x = input_for(spec, a.get("self", rec.args[0] if rec.args else None), rec.target)
        shape = list(self.x.shape)
        if len(shape) < nd + 1:
            raise Unsupported(f"{rec.target}: input of rank {len(shape)}")
        self.lead, self.insp = shape[:-nd], shape[-nd:]
        out = list(rec.output)
        if len(out) != len(shape) or out[:-nd] != self.lead:
            raise Unsupported(f"{rec.target}: unexpected output shape {out} for input {shape}")
        self.outsp = out[-nd:]
        self.out_shape = out
        self.returns_tuple = op in _TUPLE_OPS
        self.with_indices = self.returns_tuple and _indices_used(spec, rec)
        self.divisor = None
        self.count_include_pad = True
        if self.kind in ("max", "avg"):
            self.k = _ints(a.get("kernel_size"), nd)
            self.s = _ints(a.get("stride"), nd, self.k)
            self.p = _ints(a.get("padding", 0), nd, [0] * nd)
            self.d = _ints(a.get("dilation", 1), nd, [1] * nd) if self.kind == "max" else [1] * nd
            if self.kind == "avg":
                self.count_include_pad = bool(a.get("count_include_pad", True))
                div = a.get("divisor_override")
                self.divisor = int(div) if isinstance(div, (int, float)) and div else None
            if any(v <= 0 for v in self.k + self.s + self.d) or any(v < 0 for v in self.p):
                raise Unsupported(f"{rec.target}: kernel/stride/dilation must be positive, padding >= 0")
        else:
            self.k = [max(self._aend(o, i, n) - self._astart(o, i, n) for o in range(n))
                      for i, n in zip(self.insp, self.outsp)]
            self.s, self.p, self.d = [1] * nd, [0] * nd, [1] * nd
        if any(n <= 0 for n in self.outsp + self.insp):
            raise Unsupported(f"{rec.target}: empty input or output")

    @staticmethod
    def _astart(o: int, i: int, n: int) -> int:
        return (o * i) // n

    @staticmethod
    def _aend(o: int, i: int, n: int) -> int:
        return -((-(o + 1) * i) // n)

    @property
    def is_global(self) -> bool:
        if self.with_indices or any(n != 1 for n in self.outsp):
            return False
        if self.kind in ("aavg", "amax"):
            return True
        return all(p == 0 and d == 1 and k == i for p, d, k, i in zip(self.p, self.d, self.k, self.insp))

    @property
    def is_aligned(self) -> bool:
        """Non-overlapping power-of-two windows with no padding or dilation (the common max_pool2d(2))."""
        if self.kind not in ("max", "avg") or self.with_indices:
            return False
        return all(k == s and p == 0 and d == 1 and k & (k - 1) == 0 and o * k <= i + k - 1
                   for k, s, p, d, o, i in zip(self.k, self.s, self.p, self.d, self.outsp, self.insp))

    @property
    def is_shiftable(self) -> bool:
        """Windows at a power-of-two stride that divides the input, no dilation, no indices (max_pool2d(3, 2, 1) on
        an even-sized input, 3x3/1 pools, ...): the input viewed as (rows, In0/s0, s0, ...) holds every window
        element of a block's outputs in a few shifted, tile-aligned sub-arrays (see pool_paths.generate_shifted)."""
        if self.kind not in ("max", "avg") or self.with_indices:
            return False
        if not all(d == 1 and s & (s - 1) == 0 and i % s == 0 for d, s, i in zip(self.d, self.s, self.insp)):
            return False
        # one load (and a gather fallback) per distinct shift vector: keep the kernel small
        return prod([len(shift_groups(k, s, p)) for k, s, p in zip(self.k, self.s, self.p)]) <= 27

    @property
    def rows(self) -> int:
        return prod(self.lead)

    @property
    def positions(self) -> int:
        return prod(self.outsp)


def _split(spec: KernelSpec):
    """(prologue, the pooling op, its elementwise epilogue): pooling must come first in the spec."""
    idx = [i for i, r in enumerate(spec.ops) if r.category == "pooling"]
    if len(idx) != 1:
        raise Unsupported(f"expected one pooling op, found {len(idx)}")
    if idx[0] != 0:
        raise Unsupported("a pooling kernel with a fused prologue")
    return [], spec.ops[idx[0]], spec.ops[idx[0] + 1:]


@guarded
def generate(spec: KernelSpec) -> KernelSource:
    _, anchor, epilogue = _split(spec)
    pool = PoolOp(spec, anchor)
    if pool.is_global:
        return generate_global(spec, anchor, pool, epilogue)
    if quads_fit(pool, epilogue):
        return generate_quads(spec, anchor, pool)
    if pool.is_aligned:
        return generate_aligned(spec, anchor, pool, epilogue)
    if quad_windows_fit(pool, epilogue):
        return generate_quad_windows(spec, anchor, pool)
    if pair_windows_fit(pool):
        return generate_pair_windows(spec, anchor, pool, epilogue)
    if pool.is_shiftable and MEMORY_TUNING["pool_overlap_mode"] == "shifted":
        return generate_shifted(spec, anchor, pool, epilogue)
    return generate_windowed(spec, anchor, pool, epilogue, flat_x=prod(pool.x.shape) < FLAT_LIMIT)
