"""A small CPU emulator of the cuTile subset the gather-style generators use (tests only).

It executes a generated `@ct.kernel` block by block with PyTorch CPU tensors standing in for tiles, so the index
arithmetic, masking, padding and reductions of a generated kernel can be checked against the spec's reference on a
machine without a GPU (the real compiler is exercised separately by the AOT compile tests). It is deliberately
strict where cuTile is: tile dimensions must be powers of two, stores need the array's dtype, loads/gathers outside
the array give the requested padding (and NaN for "undetermined" padding, so relying on it fails loudly).

Use `emulated_check(spec, source, make_input=None)`: the same check as checking.check_kernel, on the CPU.
"""

from __future__ import annotations

import builtins
import contextlib
import math
import types
import torch

_state = types.SimpleNamespace(bid=(0, 0, 0), grid=(1, 1, 1))


def _pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def _check_shape(shape) -> tuple:
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    for s in shape:
        if not _pow2(s):
            raise ValueError(f"cuTile tile dims must be powers of two, got {shape}")
    return shape


def _t(x, dtype=None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x if dtype is None else x.to(dtype)
    if dtype is None:
        dtype = torch.bool if isinstance(x, bool) else (torch.int32 if isinstance(x, int) else torch.float32)
    return torch.tensor(x, dtype=dtype)


def _int(x) -> int:
    return int(x.item()) if isinstance(x, torch.Tensor) else int(x)


class _Constant:
    def __class_getitem__(cls, item):
        return cls


class _PaddingMode:
    UNDETERMINED = "undetermined"
    ZERO = "zero"
    NEG_ZERO = "neg_zero"
    NAN = "nan"
    POS_INF = "pos_inf"
    NEG_INF = "neg_inf"


def _pad_value(mode, dtype):
    if dtype.is_floating_point:
        return {"zero": 0.0, "neg_zero": -0.0, "nan": math.nan, "pos_inf": math.inf, "neg_inf": -math.inf,
                "undetermined": math.nan, None: math.nan}[mode]
    if dtype == torch.bool:
        return False
    return {"zero": 0}.get(mode, -12345)


class _Kernel:
    def __init__(self, fn, opts):
        self._pyfunc = fn
        self.opts = opts
        self.__name__ = fn.__name__


def kernel(fn=None, **opts):
    if fn is None:
        return lambda f: _Kernel(f, opts)
    return _Kernel(fn, opts)


def launch(stream, grid, k, args):
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    _state.grid = grid
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                _state.bid = (x, y, z)
                k._pyfunc(*args)


def bid(axis):
    return _state.bid[axis]


def num_blocks(axis):
    return _state.grid[axis]


def cdiv(a, b):
    return -(-a // b)


def arange(n, dtype=torch.int32, start=0, step=1):
    _check_shape(n)
    return torch.arange(n, dtype=dtype) * step + start


def full(shape, value, dtype):
    return torch.full(_check_shape(shape), value, dtype=dtype)


def zeros(shape, dtype):
    return full(shape, 0, dtype)


def ones(shape, dtype):
    return full(shape, 1, dtype)


def _order(order, ndim):
    if order is None or order == "C":
        return tuple(range(ndim))
    if order == "F":
        return tuple(reversed(range(ndim)))
    return tuple(order)


def load(array, index, shape, order="C", padding_mode=None, check_bounds=True, latency=None, allow_tma=None,
         **_):
    shape = _check_shape(shape)
    arr = array.permute(_order(order, array.dim()))
    index = (index,) if not isinstance(index, tuple) else index
    if arr.dim() == 0 or not shape:
        return arr.reshape(()).clone()
    grids, valid = [], torch.ones(shape, dtype=torch.bool)
    for d, (i, s) in enumerate(zip(index, shape)):
        idx = _int(i) * s + torch.arange(s)
        view = [1] * len(shape)
        view[d] = s
        idx = idx.view(view)
        valid = valid & (idx < arr.shape[d]) & (idx >= 0)
        grids.append(idx.clamp(0, arr.shape[d] - 1))
    vals = arr[tuple(grids)]
    return torch.where(valid, vals, torch.tensor(_pad_value(padding_mode, arr.dtype), dtype=arr.dtype))


def store(array, index, tile, order="C", **_):
    arr = array.permute(_order(order, array.dim()))
    index = (index,) if not isinstance(index, tuple) else index
    tile = _t(tile)
    if tile.dtype != array.dtype:
        raise TypeError(f"store of a {tile.dtype} tile into a {array.dtype} array")
    if tile.dim() == 0:
        tile = tile.reshape((1,) * arr.dim())
    shape = tuple(tile.shape)
    if len(shape) != arr.dim():
        raise ValueError(f"store: tile rank {len(shape)} != array rank {arr.dim()}")
    _check_shape(shape)
    grids, valid = [], torch.ones(shape, dtype=torch.bool)
    for d, (i, s) in enumerate(zip(index, shape)):
        idx = _int(i) * s + torch.arange(s)
        view = [1] * len(shape)
        view[d] = s
        idx = idx.view(view).expand(shape)
        valid = valid & (idx < arr.shape[d]) & (idx >= 0)
        grids.append(idx)
    arr[tuple(g[valid] for g in grids)] = tile[valid]


def gather(array, indices, mask=None, padding_value=0, check_bounds=True, latency=None):
    if not isinstance(indices, tuple):
        indices = (indices,)
    if len(indices) != array.dim():
        raise ValueError(f"gather: {len(indices)} indices for a rank-{array.dim()} array")
    idx = [_t(i) for i in indices]
    for i in idx:
        if i.dtype.is_floating_point or i.dtype == torch.bool:
            raise TypeError("gather indices must be integers")
    shape = torch.broadcast_shapes(*[i.shape for i in idx])
    idx = [torch.broadcast_to(i, shape).to(torch.int64) for i in idx]
    valid = torch.ones(shape, dtype=torch.bool)
    for d, i in enumerate(idx):
        valid = valid & (i >= 0) & (i < array.shape[d])
    if mask is not None:
        mask = _t(mask)
        if torch.broadcast_shapes(mask.shape, shape) != shape:
            raise ValueError(f"gather mask shape {tuple(mask.shape)} does not broadcast to the index shape {shape}")
        valid = valid & torch.broadcast_to(mask, shape)
    safe = [i.clamp(0, builtins.max(array.shape[d] - 1, 0)) for d, i in enumerate(idx)]
    vals = array[tuple(safe)]
    pad = torch.broadcast_to(_t(padding_value).to(array.dtype), shape)
    return torch.where(valid, vals, pad)


class Slice:
    def __init__(self, start, length):
        self.start, self.length = start, length


def load_advanced_indexing(array, indices, padding_mode=None, latency=None, allow_tma=None):
    if len(indices) != array.dim():
        raise ValueError("load_advanced_indexing: one entry per array dim")
    sparse = [i for i, e in enumerate(indices) if not isinstance(e, Slice)]
    if len(sparse) != 1 or _t(indices[sparse[0]]).dim() != 1:
        raise ValueError("load_advanced_indexing needs exactly one 1-D index tile")
    shape = []
    grids = []
    for d, e in enumerate(indices):
        if isinstance(e, Slice):
            n = int(e.length)
            idx = _int(e.start) + torch.arange(n)
        else:
            idx = _t(e).to(torch.int64)
            n = idx.shape[0]
        _check_shape(n)
        shape.append(n)
        grids.append(idx)
    views = []
    for d, g in enumerate(grids):
        v = [1] * len(shape)
        v[d] = shape[d]
        views.append(g.view(v).expand(shape))
    return gather(array, tuple(views), padding_value=_pad_value(padding_mode, array.dtype))


def where(cond, x, y):
    cond = _t(cond)
    if not isinstance(x, torch.Tensor) and not isinstance(y, torch.Tensor):
        x = _t(x)
    return torch.where(cond, x, y)


def _pair(x, y):
    if not isinstance(x, torch.Tensor) and not isinstance(y, torch.Tensor):
        x = _t(x)
    if not isinstance(x, torch.Tensor):
        x = torch.tensor(x, dtype=y.dtype)
    if not isinstance(y, torch.Tensor):
        y = torch.tensor(y, dtype=x.dtype)
    return x, y


def maximum(x, y, propagate_nan=False, **_):
    x, y = _pair(x, y)
    return torch.maximum(x, y) if propagate_nan else torch.fmax(x, y)


def minimum(x, y, propagate_nan=False, **_):
    x, y = _pair(x, y)
    return torch.minimum(x, y) if propagate_nan else torch.fmin(x, y)


def _axes(x, axis):
    if axis is None:
        return tuple(range(x.dim()))
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(a % x.dim() for a in axis)


def sum(x, axis=None, keepdims=False, **_):  # noqa: A001
    return torch.sum(x, dim=_axes(x, axis), keepdim=keepdims)


def max(x, axis=None, keepdims=False, propagate_nan=False, **_):  # noqa: A001
    if not propagate_nan and x.dtype.is_floating_point:
        x = torch.where(torch.isnan(x), torch.tensor(-math.inf, dtype=x.dtype), x)
    return torch.amax(x, dim=_axes(x, axis), keepdim=keepdims)


def min(x, axis=None, keepdims=False, propagate_nan=False, **_):  # noqa: A001
    if not propagate_nan and x.dtype.is_floating_point:
        x = torch.where(torch.isnan(x), torch.tensor(math.inf, dtype=x.dtype), x)
    return torch.amin(x, dim=_axes(x, axis), keepdim=keepdims)


def argmax(x, axis=None, keepdims=False, **_):
    return torch.argmax(x, dim=axis, keepdim=keepdims).to(torch.int32)


def argmin(x, axis=None, keepdims=False, **_):
    return torch.argmin(x, dim=axis, keepdim=keepdims).to(torch.int32)


def _unary(fn):
    def f(x, **_):
        return fn(_t(x))
    return f


exp = _unary(torch.exp)
exp2 = _unary(torch.exp2)
log = _unary(torch.log)
log2 = _unary(torch.log2)
sqrt = _unary(torch.sqrt)
rsqrt = _unary(torch.rsqrt)
abs = _unary(torch.abs)  # noqa: A001
floor = _unary(torch.floor)
ceil = _unary(torch.ceil)
isnan = _unary(torch.isnan)
tanh = _unary(torch.tanh)
sin = _unary(torch.sin)
cos = _unary(torch.cos)
negative = _unary(torch.neg)


def pow(x, y, **_):  # noqa: A001
    return torch.pow(_t(x), y)


def truediv(x, y, **_):
    return x / y


def atan2(x, y):
    return torch.atan2(x, y)


def broadcast_to(x, shape):
    return torch.broadcast_to(_t(x), _check_shape(shape)).clone()


def reshape(x, shape):
    return _t(x).reshape(shape)


def astype(x, dtype):
    return _t(x).to(dtype)


def permute(x, axes):
    return x.permute(axes)


def transpose(x, axis0=-2, axis1=-1):
    return x.transpose(axis0, axis1)


def expand_dims(x, axis):
    return x.unsqueeze(axis)


def cat(tiles, axis):
    return torch.cat(tiles, dim=axis)


def mma(a, b, acc, **_):
    return (torch.matmul(a.double(), b.double()) + acc.double()).to(acc.dtype)


def static_iter(it):
    return iter(it)


def bitcast(x, dtype):
    return x.view(dtype)


class _RoundingMode:
    RN = "rn"
    RZ = "rz"
    APPROX = "approx"
    FULL = "full"


def _array_slice(array, axis, start, stop):
    """Array.slice: a view of `array` restricted to [start, stop) along `axis` (0 <= start < N, start <= stop <= N,
    as cuTile requires; loads from the view pad past its end)."""
    n = array.shape[axis]
    start, stop = _int(start), _int(stop)
    if not (0 <= start < n and start <= stop <= n):
        raise ValueError(f"Array.slice(axis={axis}, start={start}, stop={stop}) out of range for size {n}")
    return array.narrow(axis, start, stop - start)


def extract(x, index, shape):
    """Sub-tile `index` (tile space) of shape `shape`."""
    shape = _check_shape(shape)
    index = (index,) if not isinstance(index, tuple) else index
    x = _t(x)
    if len(shape) != x.dim() or builtins.any(n % s for n, s in zip(x.shape, shape)):
        raise ValueError(f"extract: shape {shape} does not divide the tile shape {tuple(x.shape)}")
    return x[tuple(slice(_int(i) * s, _int(i) * s + s) for i, s in zip(index, shape))]


def build_module() -> types.ModuleType:
    m = types.ModuleType("cutile_emu_ct")
    g = globals()
    for name in ["kernel", "launch", "bid", "num_blocks", "cdiv", "arange", "full", "zeros", "ones", "load", "store",
                 "gather", "where", "maximum", "minimum", "sum", "max", "min", "argmax", "argmin", "exp", "exp2",
                 "log", "log2", "sqrt", "rsqrt", "abs", "floor", "ceil", "isnan", "tanh", "sin", "cos", "negative",
                 "pow", "truediv", "atan2", "broadcast_to", "reshape", "astype", "permute", "transpose",
                 "expand_dims", "cat", "mma", "static_iter", "bitcast", "load_advanced_indexing", "Slice",
                 "extract"]:
        setattr(m, name, g[name])
    m.Constant = _Constant
    m.PaddingMode = _PaddingMode
    m.RoundingMode = _RoundingMode
    m.float32, m.float16, m.bfloat16, m.float64 = torch.float32, torch.float16, torch.bfloat16, torch.float64
    m.int64, m.int32, m.int16, m.int8, m.uint8, m.bool_ = (torch.int64, torch.int32, torch.int16, torch.int8,
                                                           torch.uint8, torch.bool)
    m.tfloat32 = torch.float32
    return m


@contextlib.contextmanager
def emulated():
    """Patch torch.Tensor with cuTile tile methods and torch.cuda.current_stream for the duration."""
    had = hasattr(torch.Tensor, "astype")
    had_slice = hasattr(torch.Tensor, "slice")
    real_stream = torch.cuda.current_stream
    torch.Tensor.astype = lambda self, dtype: self.to(dtype)
    torch.Tensor.slice = _array_slice
    torch.cuda.current_stream = lambda *a, **k: None
    try:
        yield build_module()
    finally:
        torch.cuda.current_stream = real_stream
        if not had:
            del torch.Tensor.astype
        if not had_slice:
            del torch.Tensor.slice


def emulated_check(spec, source, make_input=None, seed: int = 0):
    """checking.check_kernel on the CPU, with the kernel executed by this emulator."""
    from tilestudio.core.kernels import checking

    real_load = checking.load_source
    with emulated() as fake_ct:
        def load_source(src):
            ns = {"ct": fake_ct, "torch": torch, "math": math, "__name__": f"emu_{src.spec_id}"}
            exec(compile(src.code, f"<emulated kernel {src.spec_id}>", "exec"), ns)  # noqa: S102
            return ns

        checking.load_source = load_source
        try:
            return checking.check_kernel(spec, source, device="cpu", seed=seed, make_input=make_input)
        finally:
            checking.load_source = real_load
