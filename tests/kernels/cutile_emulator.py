"""A CPU emulator of the cuTile subset the generated kernels use, for checking kernel *logic* without a GPU.

Generated code is executed with `ct` bound to `EMULATED_CT`: tiles are CPU torch tensors, `ct.launch` runs the
kernel body once per block of the grid in Python. It follows the documented semantics and is strict where cuTile
is, so that a kernel that only works by accident fails here:
- tile shapes (loads, stores, `full`, `arange`, `reshape`, `broadcast_to`, `extract`, tiled views) must be powers
  of two; stores need the array's dtype (so a bfloat16 output is rounded by the kernel's own cast);
- partial tiles are padded per `padding_mode`, UNDETERMINED with NaN, +big and -big in turn (integers with a
  sentinel) so that relying on unspecified padding shows up, through sums, maxima and minima alike; a tile
  lying entirely outside its array raises;
- `gather` / `scatter` take integer indices and are bounds-checked (out-of-range lanes give the padding value /
  are dropped); `Array.slice` checks its range; `extract` needs a shape that divides the tile;
- min/max ignore NaN unless `propagate_nan=True`, as documented; `astype(ct.tfloat32)` rounds to a 10-bit
  mantissa; sums and products accumulate in float64;
- blocks run one after another, or (`CONCURRENT_BLOCKS` = N; `TICKET_BLOCKS` for a kernel that takes a
  `*_ticket`) as up to N threads started in block order, so kernels whose blocks wait on later blocks through
  atomics (split_rows.py) really wait; a launch whose running blocks all wait for longer than `DEADLOCK_S`
  raises. Atomics are sequentially consistent here.
It is not cuTile: compile errors, performance and compiler-specific numerics are only caught by the AOT compile
and the GPU tests.

Use `check_emulated(spec, source, make_input=None)` (checking.check_kernel on the CPU), or run emitted lines
directly with `ct` bound to `EMULATED_CT` inside `with emulation():`.
"""

from __future__ import annotations

import builtins
import contextlib
import enum
import math
import sys
import threading
import time
import types
from typing import Any

import torch


class _BlockState(threading.local):
    """The running block's coordinates and grid (per thread: blocks may run concurrently, CONCURRENT_BLOCKS)."""

    def __init__(self):
        self.bid, self.grid = (0, 0, 0), (1, 1, 1)


_state = _BlockState()
_atomic_lock = threading.RLock()


class PaddingMode(enum.Enum):
    UNDETERMINED = "undetermined"
    ZERO = "zero"
    NEG_ZERO = "neg_zero"
    NAN = "nan"
    POS_INF = "pos_inf"
    NEG_INF = "neg_inf"


class RoundingMode(enum.Enum):
    RN = "rn"
    RZ = "rz"
    APPROX = "approx"
    FULL = "full"


_FLOAT_PAD = {PaddingMode.UNDETERMINED: math.nan, PaddingMode.ZERO: 0.0, PaddingMode.NEG_ZERO: -0.0,
              PaddingMode.NAN: math.nan, PaddingMode.POS_INF: math.inf, PaddingMode.NEG_INF: -math.inf}
_INT_SENTINEL = -12345  # "undetermined" integer padding: a value no index or count computation expects


def pad_value(mode, dtype: torch.dtype):
    """The value a load with `padding_mode=mode` puts in the padded lanes of a `dtype` tile."""
    mode = PaddingMode.UNDETERMINED if mode is None else mode
    if dtype.is_floating_point:
        return _FLOAT_PAD[mode]
    if dtype == torch.bool:
        return False
    info = torch.iinfo(dtype)
    return {PaddingMode.ZERO: 0, PaddingMode.NEG_ZERO: 0, PaddingMode.POS_INF: info.max,
            PaddingMode.NEG_INF: info.min}.get(mode, _INT_SENTINEL)


class _Constant:
    def __class_getitem__(cls, item):
        return item


def _is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def check_shape(shape) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    for s in shape:
        if not _is_pow2(s):
            raise ValueError(f"tile dimension {s} is not a power of two (shape {shape})")
    return shape


def _t(x, like: torch.Tensor | None = None) -> torch.Tensor:
    """A tile from a tile or a Python scalar (a scalar takes the float dtype of `like`, an int the int64 of an
    int64 `like`, else float32 / int32)."""
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, bool):
        return torch.tensor(x)
    floating = like is not None and like.is_floating_point()
    if isinstance(x, int):
        wide = like is not None and like.dtype == torch.int64
        return torch.tensor(x, dtype=like.dtype if floating or wide else torch.int32)
    return torch.tensor(float(x), dtype=like.dtype if floating else torch.float32)


def _int(x) -> int:
    return int(x.item()) if isinstance(x, torch.Tensor) else int(x)


def _index(index) -> tuple[int, ...]:
    return tuple(_int(i) for i in (index if isinstance(index, (tuple, list)) else (index,)))


# --- kernels and launches -------------------------------------------------------------------------------------

class _Kernel:
    def __init__(self, fn, opts):
        self._pyfunc = fn
        self.opts = opts
        self.__name__ = fn.__name__

    def __call__(self, *a, **k):
        raise RuntimeError("kernels run through ct.launch")


def kernel(fn=None, **opts):
    if fn is None:
        return lambda f: _Kernel(f, opts)
    return _Kernel(fn, opts)


def function(fn=None, **opts):
    return fn if fn is not None else (lambda f: f)


# Atomic exchanges that raise a 64-bit look-back word from flag 1 (a chunk total) to flag 2 (a running prefix)
# take effect only after this many later blocks have run (0: at once). Blocks still run one at a time, but a
# look-back then meets chunks that have published only their totals and must walk past them, as on a GPU.
DEFER_PREFIX_BLOCKS = 0
_deferred: list = []  # (blocks left, array, index tuple, lanes raised, their new words)


def _flush_deferred(all_of_them: bool = False) -> None:
    keep = []
    for left, array, where, raised, words in _deferred:
        if all_of_them or left <= 0:
            array[where] = torch.where(raised, words, array[where])
        else:
            keep.append((left - 1, array, where, raised, words))
    _deferred[:] = keep


# Blocks run one after another (0), or up to this many at once in threads, started in block order as on a GPU
# (a new one when one finishes): kernels whose blocks wait on blocks that start after them (norm_split.py's rows
# split over cooperating blocks) need this; a launch whose running blocks all wait forever raises.
CONCURRENT_BLOCKS = 0
# ... a kernel that takes an atomic ticket (a `*_ticket` parameter: split rows, look-back scans) runs with this
# many concurrent blocks when CONCURRENT_BLOCKS is 0 (more than split_rows' TUNING["split_max_segments"])
TICKET_BLOCKS = 64
DEADLOCK_S = 60.0
_abandon = threading.Event()  # set on a deadlock: every running block's next atomic raises, so its thread ends


class _Abandoned(Exception):
    pass


def _takes_ticket(kern) -> bool:
    code = kern._pyfunc.__code__
    return any(name.endswith("_ticket") for name in code.co_varnames[:code.co_argcount])


def _launch_concurrent(grid, kern, args, slots_n: int) -> None:
    order = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    errors: list[BaseException] = []
    slots = threading.Semaphore(slots_n)
    done = [0]
    grad = torch.is_grad_enabled()  # autograd's mode is per thread: the blocks run in the launcher's

    def run(b):
        try:
            _state.bid, _state.grid = b, grid
            with torch.set_grad_enabled(grad):
                kern._pyfunc(*args)
        except _Abandoned:
            pass
        except BaseException as e:  # noqa: BLE001 - re-raised in the launching thread
            errors.append(e)
        finally:
            with _atomic_lock:
                done[0] += 1
            slots.release()

    threads: list[threading.Thread] = []
    _abandon.clear()
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # spinning blocks hand the interpreter over quickly
    try:
        last, seen = time.monotonic(), 0
        for b in order:
            while not slots.acquire(timeout=0.5):
                if errors:
                    raise errors[0]
                if done[0] != seen:
                    last, seen = time.monotonic(), done[0]
                elif time.monotonic() - last > DEADLOCK_S:
                    _stop(threads)
                    raise RuntimeError(f"emulated blocks deadlocked: {len(threads) - done[0]} running, none "
                                       f"finished in {DEADLOCK_S:.0f} s")
            t = threading.Thread(target=run, args=(b,), daemon=True)
            threads.append(t)
            t.start()
        for t in threads:
            t.join(timeout=DEADLOCK_S)
            if t.is_alive():
                _stop(threads)
                raise RuntimeError("emulated blocks deadlocked: a block never finished")
    finally:
        sys.setswitchinterval(switch)
    if errors:
        raise errors[0]


def _stop(threads: list[threading.Thread]) -> None:
    """End the threads of an abandoned launch (their next atomic raises) before reporting it."""
    _abandon.set()
    for t in threads:
        t.join(timeout=5.0)
    _abandon.clear()  # (later launches in this process run normally)


def launch(stream, grid, kern, args):
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    _state.grid = grid
    _abandon.clear()
    if CONCURRENT_BLOCKS or _takes_ticket(kern):
        _launch_concurrent(grid, kern, args, CONCURRENT_BLOCKS or TICKET_BLOCKS)
        return
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                _flush_deferred()
                _state.bid = (x, y, z)
                kern._pyfunc(*args)
    _flush_deferred(all_of_them=True)


def bid(axis: int) -> int:
    return _state.bid[axis]


def num_blocks(axis: int) -> int:
    return _state.grid[axis]


def cdiv(a, b):
    return -(-a // b)


def static_iter(it):
    return iter(it)


def static_assert(cond, msg=""):
    assert cond, msg


def assume_divisible_by(x, n):
    return x


# --- tile construction ----------------------------------------------------------------------------------------

def arange(size, dtype=None, start=0, step=1):
    check_shape((size,))
    return torch.arange(size, dtype=torch.int64).mul(step).add(start).to(dtype or torch.int32)


def full(shape, fill_value, dtype):
    return torch.full(check_shape(shape), fill_value, dtype=dtype)


def zeros(shape, dtype):
    return full(shape, 0, dtype)


def ones(shape, dtype):
    return full(shape, 1, dtype)


# --- memory: tile-space load/store, gather/scatter, Array.slice, tiled views ----------------------------------

def _order(order, rank):
    if order == "C" or order is None:
        return tuple(range(rank))
    if order == "F":
        return tuple(reversed(range(rank)))
    return tuple(order)


def _tile_window(what, index, shape, arr_shape, steps=None):
    """(source slices, tile slices) of tile `index`; a tile starting outside the array raises."""
    src, dst = [], []
    for i, s, st, n in zip(index, shape, steps or shape, arr_shape):
        lo = i * st
        if i < 0 or lo >= n:
            raise IndexError(f"{what}: tile {index} of shape {tuple(shape)} lies outside the array {tuple(arr_shape)}")
        hi = builtins.min(lo + s, n)
        src.append(slice(lo, hi))
        dst.append(slice(0, hi - lo))
    return tuple(src), tuple(dst)


def load(array, index, shape, order="C", padding_mode=PaddingMode.UNDETERMINED, check_bounds=True, **_):
    shape = check_shape(shape) if shape != () else ()
    index = _index(index)
    arr = array.permute(*_order(order, array.dim())) if array.dim() else array
    if arr.dim() == 0:
        return arr.clone()
    if shape == ():
        return arr[index].clone()
    if len(shape) != arr.dim() or len(index) != arr.dim():
        raise ValueError(f"load: tile rank {len(shape)} / index {index} vs array rank {arr.dim()}")
    src, dst = _tile_window("load", index, shape, arr.shape)
    if not check_bounds and any((d.stop - d.start) != n for d, n in zip(dst, shape)):
        raise IndexError(f"load(check_bounds=False): tile {index} of shape {shape} leaves the array {tuple(arr.shape)}"
                         " (undefined behaviour on the GPU)")
    if arr.dtype.is_floating_point and padding_mode in (None, PaddingMode.UNDETERMINED):
        out = undetermined_fill(shape, arr.dtype)
    else:
        out = torch.full(shape, pad_value(padding_mode, arr.dtype), dtype=arr.dtype)
    out[dst] = arr[src]
    return out


def undetermined_fill(shape, dtype: torch.dtype) -> torch.Tensor:
    """Padding of an UNDETERMINED float load: NaN, +big, -big in turn, so that a kernel relying on the padding
    fails whether it sums (NaN), takes a max (+big, which a NaN-ignoring max would not expose) or a min (-big)."""
    big = torch.finfo(dtype).max / 4
    k = torch.arange(math.prod(shape)).reshape(shape) % 3
    return torch.where(k == 0, math.nan, torch.where(k == 1, big, -big)).to(dtype)


def store(array, index, tile, order="C", **_):
    index = _index(index)
    arr = array.permute(*_order(order, array.dim())) if array.dim() else array
    tile = _t(tile)
    if tile.dtype != array.dtype:
        raise TypeError(f"store: tile dtype {tile.dtype} != array dtype {array.dtype}")
    if tile.dim() == 0:
        tile = tile.reshape((1,) * arr.dim())
    if tile.dim() != arr.dim():
        raise ValueError(f"store: tile rank {tile.dim()} vs array rank {arr.dim()}")
    check_shape(tile.shape)
    dst, src = _tile_window("store", index, tuple(tile.shape), arr.shape)
    arr[dst] = tile[src]


def _gather_index(array, indices):
    if not isinstance(indices, (tuple, list)):
        indices = (indices,)
    if len(indices) != array.dim():
        raise ValueError(f"gather/scatter: {len(indices)} indices for a rank-{array.dim()} array")
    idx = [_t(i) for i in indices]
    for i in idx:
        if i.is_floating_point() or i.dtype == torch.bool:
            raise TypeError(f"gather/scatter indices must be integers, got {i.dtype}")
    shape = torch.broadcast_shapes(*[i.shape for i in idx])
    idx = [i.to(torch.int64).broadcast_to(shape) for i in idx]
    ok = torch.ones(shape, dtype=torch.bool)
    for i, n in zip(idx, array.shape):
        ok &= (i >= 0) & (i < n)
    safe = [torch.where(ok, i, torch.zeros_like(i)) for i in idx]
    return shape, ok, safe


def _with_mask(ok, mask, shape, what):
    if mask is None:
        return ok
    mask = _t(mask)
    if torch.broadcast_shapes(mask.shape, shape) != shape:
        raise ValueError(f"{what} mask shape {tuple(mask.shape)} does not broadcast to the index shape {tuple(shape)}")
    return ok & mask.broadcast_to(shape)


def gather(array, indices, mask=None, padding_value=0, check_bounds=True, **_):
    shape, ok, safe = _gather_index(array, indices)
    ok = _with_mask(ok, mask, shape, "gather")
    vals = array[tuple(safe)] if array.dim() else array.expand(shape)
    pad = _t(padding_value, vals).to(vals.dtype).broadcast_to(shape)
    return torch.where(ok, vals, pad)


def scatter(array, indices, value, mask=None, check_bounds=True, **_):
    shape, ok, safe = _gather_index(array, indices)
    ok = _with_mask(ok, mask, shape, "scatter")
    value = _t(value).to(array.dtype).broadcast_to(shape)
    array[tuple(s[ok] for s in safe)] = value[ok]


class MemoryOrder(enum.Enum):
    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"


class MemoryScope(enum.Enum):
    BLOCK = "block"
    DEVICE = "device"
    SYS = "sys"


def _atomic(update_fn, accumulate=None, check_bounds_drops=False):
    """An atomic read-modify-write over the gathered elements, returning the old values (under one lock, for
    blocks running concurrently). What this checks is the arithmetic, the indexing and, with concurrent blocks,
    the waiting protocol; not the memory model (each atomic here is sequentially consistent)."""

    def op(array, indices, *values, check_bounds=True, memory_order=None, memory_scope=None):
        if _abandon.is_set():
            raise _Abandoned("launch abandoned")
        with _atomic_lock:
            return _apply(array, indices, *values)

    def _apply(array, indices, *values):
        shape, ok, safe = _gather_index(array, indices)
        vals = [_t(v).to(array.dtype).broadcast_to(shape) for v in values]
        if not bool(ok.all()):
            if not check_bounds_drops:
                raise IndexError("atomic: index out of bounds")
            # (bounds-checked, out-of-range lanes do nothing: a scatter-add's padded lanes)
            old = torch.zeros(shape, dtype=array.dtype)
            inner = _apply(array, tuple(s[ok] for s in safe), *[v[ok] for v in vals]) if bool(ok.any()) else None
            if inner is not None:
                old[ok] = inner
            return old if shape else old.reshape(())
        where = tuple(safe)
        old = array[where].clone() if array.dim() else array.clone().expand(shape)
        new = update_fn(old, *vals)
        if len(set(zip(*[s.reshape(-1).tolist() for s in safe]))) != old.numel() and not bool((new == old).all()):
            if accumulate is None:
                # (lanes that only read, e.g. an add of 0, may repeat an index: every lane sees the same old value)
                raise NotImplementedError("atomic: repeated indices in one call")
            # every lane's update lands (each returned old value is the one before the call: lanes hitting one
            # element see no order among themselves)
            array.index_put_(tuple(s.reshape(-1) for s in safe), accumulate(vals).reshape(-1), accumulate=True)
            return old if shape else old.reshape(())
        array[where] = new
        return old if shape else old.reshape(())
    return op


atomic_add = _atomic(lambda old, v: old + v, accumulate=lambda vals: vals[0], check_bounds_drops=True)
_atomic_xchg_now = _atomic(lambda old, v: v)


def atomic_xchg(array, indices, update, **kw):
    """Exchange; with DEFER_PREFIX_BLOCKS, a flag 1 -> 2 raise of an int64 look-back word is applied later."""
    old = _atomic_xchg_now(array, indices, update, **kw)
    if DEFER_PREFIX_BLOCKS and array.dtype == torch.int64:
        _, _, safe = _gather_index(array, indices)
        where = tuple(safe)
        new = array[where].clone()
        raised = ((old >> 32) == 1) & ((new >> 32) == 2)
        if bool(raised.any()):
            array[where] = torch.where(raised, old, new)  # still the chunk total, for now
            _deferred.append((DEFER_PREFIX_BLOCKS, array, where, raised, new))
    return old
atomic_max = _atomic(lambda old, v: torch.maximum(old, v))
atomic_min = _atomic(lambda old, v: torch.minimum(old, v))
atomic_cas = _atomic(lambda old, expected, desired: torch.where(old == expected, desired, old))


class Slice:
    def __init__(self, start, length):
        self.start, self.length = start, length


def load_advanced_indexing(array, indices, padding_mode=PaddingMode.UNDETERMINED, **_):
    """One 1-D index tile on one axis, `Slice(start, length)` ranges on the others."""
    if len(indices) != array.dim():
        raise ValueError("load_advanced_indexing: one entry per array dim")
    sparse = [d for d, e in enumerate(indices) if not isinstance(e, Slice)]
    if len(sparse) != 1 or _t(indices[sparse[0]]).dim() != 1:
        raise ValueError("load_advanced_indexing needs exactly one 1-D index tile")
    grids = [_int(e.start) + torch.arange(int(e.length)) if isinstance(e, Slice) else _t(e).to(torch.int64)
             for e in indices]
    shape = check_shape([g.shape[0] for g in grids])
    views = []
    for d, g in enumerate(grids):
        v = [1] * len(shape)
        v[d] = shape[d]
        views.append(g.view(v).expand(shape))
    return gather(array, tuple(views), padding_value=pad_value(padding_mode, array.dtype))


def _array_slice(array, axis, start, stop):
    """Array.slice: `array` restricted to [start, stop) along `axis` (0 <= start < N, start <= stop <= N, as cuTile
    requires; loads from the view pad past its end)."""
    n = array.shape[axis]
    start, stop = _int(start), _int(stop)
    if not (0 <= start < n and start <= stop <= n):
        raise ValueError(f"Array.slice(axis={axis}, start={start}, stop={stop}) out of range for size {n}")
    return array.narrow(axis, start, stop - start)


class _TiledView:
    """Array.tiled_view: tile i starts at element i * step; partial tiles are padded, a tile entirely outside the
    array (undefined behaviour in cuTile) raises."""

    def __init__(self, array, tile_shape, padding_mode=None, traversal_steps=None):
        self.array = array
        self.shape = check_shape(tile_shape)
        self.steps = tuple(traversal_steps) if traversal_steps is not None else self.shape
        self.padding_mode = padding_mode

    def load(self, index, **_):
        index = _index(index)
        arr = self.array
        if len(index) != arr.dim():
            raise ValueError(f"tiled view load: index {index} for a rank-{arr.dim()} array")
        src, dst = _tile_window("tiled view load", index, self.shape, arr.shape, self.steps)
        out = torch.full(self.shape, pad_value(self.padding_mode, arr.dtype), dtype=arr.dtype)
        out[dst] = arr[src]
        return out


def _tiled_view(array, tile_shape, padding_mode=None, traversal_steps=None):
    return _TiledView(array, tile_shape, padding_mode, traversal_steps)


# --- shapes and dtypes ----------------------------------------------------------------------------------------

class _TF32:
    """cuTile's tfloat32: held as float32 rounded (to nearest, ties to even) to a 10-bit mantissa."""

    def __repr__(self):
        return "tfloat32"


TFLOAT32 = _TF32()


def _round_tf32(x: torch.Tensor) -> torch.Tensor:
    bits = x.to(torch.float32).contiguous().view(torch.int32)
    lsb = (bits >> 13) & 1
    rounded = ((bits + 0xFFF + lsb) & ~0x1FFF).view(torch.float32)
    return torch.where(torch.isfinite(x), rounded, x.to(torch.float32))


def astype(x, dtype, **_):
    if dtype is TFLOAT32:
        return _round_tf32(_t(x))
    return _t(x).to(dtype)


def bitcast(x, dtype):
    return _t(x).view(dtype)


def reshape(x, shape):
    return _t(x).reshape(check_shape(shape) if tuple(shape) != () else ())


def broadcast_to(x, shape):
    return _t(x).broadcast_to(check_shape(shape)).clone()


def expand_dims(x, axis):
    return _t(x).unsqueeze(axis)


def permute(x, axes):
    return _t(x).permute(*axes)


def transpose(x, axis0=None, axis1=None):
    x = _t(x)
    if axis0 is None:
        return x.transpose(-1, -2)
    return x.transpose(axis0, axis1)


def cat(tiles, axis):
    return torch.cat([_t(t) for t in tiles], dim=axis)


def extract(x, index, shape):
    """Sub-tile `index` (tile space) of shape `shape`, which must divide the tile's shape."""
    shape = check_shape(shape)
    index = _index(index)
    x = _t(x)
    if len(shape) != x.dim() or builtins.any(n % s for n, s in zip(x.shape, shape)):
        raise ValueError(f"extract: shape {shape} does not divide the tile shape {tuple(x.shape)}")
    return x[tuple(slice(i * s, i * s + s) for i, s in zip(index, shape))].clone()


# --- reductions and scans -------------------------------------------------------------------------------------

def _axes(axis, rank):
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, int):
        return (axis % rank,)
    return tuple(a % rank for a in axis)


def _reducer(fn):
    def reduce_(x, axis=None, keepdims=False, **kw):
        x = _t(x)
        axes = _axes(axis, x.dim())
        out = fn(x, **kw)
        for a in sorted(axes, reverse=True):
            out = fn.step(out, a)
        if keepdims:
            for a in sorted(axes):
                out = out.unsqueeze(a)
        return out
    return reduce_


def _acc(x):
    return x.to(torch.float64) if x.is_floating_point() else x


def _drop_nan(x, fill, propagate_nan=False):
    """min/max ignore NaN unless asked to propagate it (cuTile's default, unlike torch)."""
    if propagate_nan or not x.is_floating_point():
        return x
    return torch.where(torch.isnan(x), torch.tensor(fill, dtype=x.dtype), x)


def _reduction(prepare, step):
    prepare.step = step
    return _reducer(prepare)


sum = _reduction(lambda x, **_: x, lambda x, a: _acc(x).sum(dim=a).to(x.dtype))  # noqa: A001
prod = _reduction(lambda x, **_: x, lambda x, a: _acc(x).prod(dim=a).to(x.dtype))
max = _reduction(lambda x, propagate_nan=False, **_: _drop_nan(x, -math.inf, propagate_nan),  # noqa: A001
                 lambda x, a: x.amax(dim=a))
min = _reduction(lambda x, propagate_nan=False, **_: _drop_nan(x, math.inf, propagate_nan),  # noqa: A001
                 lambda x, a: x.amin(dim=a))


def _arg(fn, fill):
    def arg(x, axis=None, keepdims=False, propagate_nan=False, **_):
        x = _drop_nan(_t(x), fill, propagate_nan)
        if axis is None:
            return fn(x.reshape(-1)).to(torch.int32)
        return fn(x, dim=axis, keepdim=keepdims).to(torch.int32)
    return arg


argmax = _arg(torch.argmax, -math.inf)
argmin = _arg(torch.argmin, math.inf)


def _scan_generic(xs, axis, func, reverse):
    single = not isinstance(xs, (tuple, list))
    xs = [_t(x) for x in ([xs] if single else xs)]
    shape = torch.broadcast_shapes(*[x.shape for x in xs])
    xs = [x.broadcast_to(shape) for x in xs]
    n = shape[axis]
    order = range(n - 1, -1, -1) if reverse else range(n)
    outs = [torch.empty(shape, dtype=x.dtype) for x in xs]
    acc = None
    for i in order:
        cur = [x.select(axis, i) for x in xs]
        if acc is None:
            acc = cur
        else:
            res = func(*acc, *cur)
            acc = [_t(r).broadcast_to(cur[0].shape).to(c.dtype) for r, c in
                   zip(res if isinstance(res, (tuple, list)) else (res,), cur)]
        for o, a in zip(outs, acc):
            o.select(axis, i).copy_(a)
    return outs[0] if single else tuple(outs)


def scan(x, axis, func, identity=None, reverse=False):
    return _scan_generic(x, axis, func, reverse)


def reduce(x, axis, func, identity, keepdims=False):
    single = not isinstance(x, (tuple, list))
    res = _scan_generic(x, axis, func, False)
    res = [res] if single else list(res)
    n = res[0].shape[axis]
    out = [r.select(axis, n - 1) for r in res]
    if keepdims:
        out = [o.unsqueeze(axis) for o in out]
    return out[0] if single else tuple(out)


def _cumulative(op):
    def cum(x, axis=0, reverse=False, **_):
        x = _t(x)
        if reverse:
            return op(_acc(x).flip(axis), axis).flip(axis).to(x.dtype)
        return op(_acc(x), axis).to(x.dtype)
    return cum


cumsum = _cumulative(torch.cumsum)
cumprod = _cumulative(torch.cumprod)


# --- elementwise ----------------------------------------------------------------------------------------------

def where(cond, x, y):
    like = x if isinstance(x, torch.Tensor) else (y if isinstance(y, torch.Tensor) else None)
    return torch.where(_t(cond), _t(x, like), _t(y, like))


def _binary(fn):
    def op(a, b, **_):
        like = a if isinstance(a, torch.Tensor) else (b if isinstance(b, torch.Tensor) else None)
        return fn(_t(a, like), _t(b, like))
    return op


def _min_max(ignoring_nan, propagating_nan):
    def op(a, b, propagate_nan=False, **_):
        like = a if isinstance(a, torch.Tensor) else (b if isinstance(b, torch.Tensor) else None)
        return (propagating_nan if propagate_nan else ignoring_nan)(_t(a, like), _t(b, like))
    return op


maximum = _min_max(torch.fmax, torch.maximum)
minimum = _min_max(torch.fmin, torch.minimum)
add = _binary(torch.add)
sub = _binary(torch.sub)
mul = _binary(torch.mul)
truediv = _binary(torch.true_divide)
floordiv = _binary(torch.floor_divide)
mod = _binary(torch.remainder)
atan2 = _binary(torch.atan2)
equal = _binary(torch.eq)
not_equal = _binary(torch.ne)
greater = _binary(torch.gt)
greater_equal = _binary(torch.ge)
less = _binary(torch.lt)
less_equal = _binary(torch.le)
bitwise_and = _binary(torch.bitwise_and)
bitwise_or = _binary(torch.bitwise_or)
bitwise_xor = _binary(torch.bitwise_xor)


def pow(a, b, **_):  # noqa: A001
    like = a if isinstance(a, torch.Tensor) else None
    return torch.pow(_t(a, like), _t(b, like) if isinstance(b, torch.Tensor) else b)


def _unary(fn):
    def op(x, **_):
        return fn(_t(x))
    return op


exp = _unary(torch.exp)
exp2 = _unary(torch.exp2)
log = _unary(torch.log)
log2 = _unary(torch.log2)
sqrt = _unary(torch.sqrt)
rsqrt = _unary(torch.rsqrt)
abs = _unary(torch.abs)  # noqa: A001
sin, cos, tan = _unary(torch.sin), _unary(torch.cos), _unary(torch.tan)
sinh, cosh, tanh = _unary(torch.sinh), _unary(torch.cosh), _unary(torch.tanh)
floor, ceil = _unary(torch.floor), _unary(torch.ceil)
negative = _unary(torch.neg)
isnan = _unary(torch.isnan)
bitwise_not = _unary(torch.bitwise_not)


def mma(a, b, acc, **_):
    return (a.to(torch.float64) @ b.to(torch.float64)).to(acc.dtype) + acc


def matmul(a, b):
    return (a.to(torch.float64) @ b.to(torch.float64)).to(a.dtype)


# --- the `ct` namespace and the check ------------------------------------------------------------------------

_EXPORTED = (
    "PaddingMode", "RoundingMode", "MemoryOrder", "MemoryScope", "atomic_add", "atomic_xchg", "atomic_max",
    "atomic_min", "atomic_cas", "Slice", "kernel", "function", "launch", "bid", "num_blocks", "cdiv",
    "static_iter", "static_assert", "assume_divisible_by", "arange", "full", "zeros", "ones", "load", "store",
    "gather", "scatter", "load_advanced_indexing", "astype", "bitcast", "reshape", "broadcast_to", "expand_dims",
    "permute", "transpose", "cat", "extract", "sum", "prod", "max", "min", "argmax", "argmin", "scan", "reduce",
    "cumsum", "cumprod", "where", "maximum", "minimum", "add", "sub", "mul", "truediv", "floordiv", "mod", "atan2",
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "bitwise_and", "bitwise_or",
    "bitwise_xor", "pow", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sin", "cos", "tan", "sinh",
    "cosh", "tanh", "floor", "ceil", "negative", "isnan", "bitwise_not", "mma", "matmul",
)


def _build() -> types.SimpleNamespace:
    g = globals()
    ns = types.SimpleNamespace(**{name: g[name] for name in _EXPORTED})
    ns.Constant = _Constant
    ns.float32, ns.float16, ns.bfloat16, ns.float64 = torch.float32, torch.float16, torch.bfloat16, torch.float64
    ns.int64, ns.int32, ns.int16, ns.int8, ns.uint8 = torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8
    ns.bool_ = torch.bool
    ns.tfloat32 = TFLOAT32
    return ns


EMULATED_CT = _build()

# cuTile methods of arrays and tiles, patched onto torch.Tensor while emulating
_TENSOR_METHODS = {"astype": astype, "slice": _array_slice, "tiled_view": _tiled_view}


@contextlib.contextmanager
def emulation():
    """Tensors get cuTile's array/tile methods and torch.cuda.current_stream works without CUDA."""
    added = [name for name in _TENSOR_METHODS if not hasattr(torch.Tensor, name)]
    real_stream = torch.cuda.current_stream
    for name in added:
        setattr(torch.Tensor, name, _TENSOR_METHODS[name])
    torch.cuda.current_stream = lambda *a, **k: None
    try:
        yield EMULATED_CT
    finally:
        torch.cuda.current_stream = real_stream
        for name in added:
            delattr(torch.Tensor, name)


def load_emulated(source) -> dict[str, Any]:
    namespace: dict[str, Any] = {"ct": EMULATED_CT, "torch": torch, "math": math,
                                 "__name__": f"tilestudio_emu_{source.spec_id}"}
    exec(compile(source.code, f"<emulated {source.spec_id}>", "exec"), namespace)  # noqa: S102
    return namespace


def check_emulated(spec, source, seed: int = 0, make_input=None):
    """`checking.check_kernel` on the CPU with the emulator in place of cuTile."""
    from tilestudio.core.kernels import checking

    real = checking.load_source
    checking.load_source = load_emulated
    try:
        with emulation():
            return checking.check_kernel(spec, source, device="cpu", seed=seed, make_input=make_input)
    finally:
        checking.load_source = real
