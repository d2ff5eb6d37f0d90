"""A CPU emulator of the cuTile subset the generated kernels use, for checking kernel *logic* without a GPU.

Generated code is executed with `ct` bound to this module's `EMULATED_CT` namespace: tiles are CPU torch tensors,
`ct.launch` runs the kernel body once per block of the grid in Python. It follows the documented semantics
(tile-space indexing of `load`/`store`, partial tiles padded per `padding_mode` — with NaN for
UNDETERMINED so that relying on unspecified padding shows up —, bounds-checked `gather`/`scatter`, reductions
with `keepdims`, `scan` with a combine function, power-of-two tile shapes enforced). It is not cuTile: compile
errors, performance and compiler-specific numerics are only caught by the AOT compile and the GPU tests.
"""

from __future__ import annotations

import builtins
import contextlib
import enum
import math
import types
from typing import Any

import torch

_BID = [(0, 0, 0)]
_GRID = [(1, 1, 1)]


class PaddingMode(enum.Enum):
    UNDETERMINED = "undetermined"
    ZERO = "zero"
    NEG_ZERO = "neg_zero"
    NAN = "nan"
    POS_INF = "pos_inf"
    NEG_INF = "neg_inf"


_PAD = {PaddingMode.UNDETERMINED: math.nan, PaddingMode.ZERO: 0.0, PaddingMode.NEG_ZERO: -0.0,
        PaddingMode.NAN: math.nan, PaddingMode.POS_INF: math.inf, PaddingMode.NEG_INF: -math.inf}


class _Constant:
    def __class_getitem__(cls, item):
        return item


class RoundingMode(enum.Enum):
    RN = "rn"
    RZ = "rz"
    APPROX = "approx"
    FULL = "full"


def _is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def _check_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    for s in shape:
        if not _is_pow2(s):
            raise ValueError(f"tile dimension {s} is not a power of two (shape {shape})")
    return shape


def _t(x, like: torch.Tensor | None = None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, bool):
        return torch.tensor(x)
    if isinstance(x, int):
        return torch.tensor(x, dtype=torch.int32 if like is None or not like.is_floating_point() else like.dtype)
    return torch.tensor(float(x), dtype=torch.float32 if like is None or not like.is_floating_point()
                        else like.dtype)


class _Kernel:
    def __init__(self, fn, **opts):
        self._pyfunc = fn
        self.opts = opts

    def __call__(self, *a, **k):
        raise RuntimeError("kernels run through ct.launch")


def kernel(fn=None, **opts):
    if fn is None:
        return lambda f: _Kernel(f, **opts)
    return _Kernel(fn)


def function(fn=None, **opts):
    return fn if fn is not None else (lambda f: f)


def bid(axis: int) -> int:
    return _BID[0][axis]


def num_blocks(axis: int) -> int:
    return _GRID[0][axis]


def cdiv(a, b):
    return -(-a // b)


def launch(stream, grid, kern, args):
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    fn = kern._pyfunc
    _GRID[0] = grid
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                _BID[0] = (x, y, z)
                fn(*args)


def arange(size, dtype=None, start=0, step=1):
    _check_shape((size,))
    return torch.arange(size, dtype=torch.int64).mul(step).add(start).to(dtype or torch.int32)


def full(shape, fill_value, dtype):
    return torch.full(_check_shape(shape), fill_value, dtype=dtype)


def zeros(shape, dtype):
    return full(shape, 0, dtype)


def ones(shape, dtype):
    return full(shape, 1, dtype)


def _order(order, rank):
    if order == "C" or order is None:
        return tuple(range(rank))
    if order == "F":
        return tuple(reversed(range(rank)))
    return tuple(order)


def load(array, index, shape, order="C", padding_mode=PaddingMode.UNDETERMINED, **_):
    shape = _check_shape(shape) if shape != () else ()
    index = tuple(int(i) for i in (index if isinstance(index, (tuple, list)) else (index,)))
    arr = array.permute(*_order(order, array.dim())) if array.dim() else array
    if shape == ():
        return arr[index].clone()
    if len(shape) != arr.dim() or len(index) != arr.dim():
        raise ValueError(f"load: tile rank {len(shape)} / index {index} vs array rank {arr.dim()}")
    out = torch.full(shape, _PAD[padding_mode] if array.is_floating_point() else 0, dtype=array.dtype)
    src, dst = [], []
    for i, s, n in zip(index, shape, arr.shape):
        lo, hi = i * s, builtins.min(i * s + s, n)
        if lo >= n or i < 0:
            raise IndexError(f"load: tile {index} of shape {shape} lies outside the array {tuple(arr.shape)}")
        src.append(slice(lo, hi))
        dst.append(slice(0, hi - lo))
    out[tuple(dst)] = arr[tuple(src)]
    return out


def store(array, index, tile, order="C", **_):
    index = tuple(int(i) for i in (index if isinstance(index, (tuple, list)) else (index,)))
    arr = array.permute(*_order(order, array.dim())) if array.dim() else array
    tile = _t(tile)
    if tile.dtype != array.dtype:
        raise TypeError(f"store: tile dtype {tile.dtype} != array dtype {array.dtype}")
    if tile.dim() == 0:
        tile = tile.reshape((1,) * arr.dim())
    if tile.dim() != arr.dim():
        raise ValueError(f"store: tile rank {tile.dim()} vs array rank {arr.dim()}")
    src, dst = [], []
    for i, s, n in zip(index, tile.shape, arr.shape):
        lo, hi = i * s, builtins.min(i * s + s, n)
        if lo >= n or i < 0:
            raise IndexError(f"store: tile {index} of shape {tuple(tile.shape)} lies outside {tuple(arr.shape)}")
        dst.append(slice(lo, hi))
        src.append(slice(0, hi - lo))
    arr[tuple(dst)] = tile[tuple(src)]


def _gather_index(array, indices):
    if not isinstance(indices, (tuple, list)):
        indices = (indices,)
    if len(indices) != array.dim():
        raise ValueError(f"gather: {len(indices)} indices for a rank-{array.dim()} array")
    idx = [_t(i).to(torch.int64) for i in indices]
    shape = torch.broadcast_shapes(*[i.shape for i in idx])
    idx = [i.broadcast_to(shape) for i in idx]
    ok = torch.ones(shape, dtype=torch.bool)
    for i, n in zip(idx, array.shape):
        ok &= (i >= 0) & (i < n)
    safe = [torch.where(ok, i, torch.zeros_like(i)) for i in idx]
    return shape, ok, safe


def gather(array, indices, mask=None, padding_value=0, check_bounds=True, **_):
    shape, ok, safe = _gather_index(array, indices)
    if mask is not None:
        ok = ok & _t(mask).broadcast_to(shape)
    vals = array[tuple(safe)] if array.dim() else array.expand(shape)
    pad = _t(padding_value, vals).to(vals.dtype).broadcast_to(shape)
    return torch.where(ok, vals, pad)


def scatter(array, indices, value, mask=None, check_bounds=True, **_):
    shape, ok, safe = _gather_index(array, indices)
    if mask is not None:
        ok = ok & _t(mask).broadcast_to(shape)
    value = _t(value).to(array.dtype).broadcast_to(shape)
    array[tuple(s[ok] for s in safe)] = value[ok]


class _TF32:
    """cuTile's tfloat32: stored here as float32 rounded (to nearest, ties to even) to a 10-bit mantissa."""

    def __repr__(self):
        return "tfloat32"


TFLOAT32 = _TF32()


def _round_tf32(x: torch.Tensor) -> torch.Tensor:
    bits = x.to(torch.float32).contiguous().view(torch.int32)
    lsb = (bits >> 13) & 1
    rounded = ((bits + 0xFFF + lsb) & ~0x1FFF).view(torch.float32)
    return torch.where(torch.isfinite(x), rounded, x.to(torch.float32))


def astype(x, dtype):
    if dtype is TFLOAT32:
        return _round_tf32(_t(x))
    return _t(x).to(dtype)


def reshape(x, shape):
    return _t(x).reshape(tuple(shape))


def broadcast_to(x, shape):
    return _t(x).broadcast_to(tuple(shape)).clone()


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
    x = _t(x)
    sl = tuple(slice(i * s, i * s + s) for i, s in zip(index, shape))
    return x[sl].clone()


def _axes(axis, rank):
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, int):
        return (axis % rank,)
    return tuple(a % rank for a in axis)


def _reducer(fn):
    def reduce_(x, axis=None, keepdims=False, **_):
        x = _t(x)
        axes = _axes(axis, x.dim())
        out = x
        for a in sorted(axes, reverse=True):
            out = fn(out, a)
        if keepdims:
            for a in sorted(axes):
                out = out.unsqueeze(a)
        return out
    return reduce_


def _acc(x):
    return x.to(torch.float64) if x.is_floating_point() else x


sum = _reducer(lambda x, a: _acc(x).sum(dim=a).to(x.dtype if x.is_floating_point() else x.dtype))  # noqa: A001
prod = _reducer(lambda x, a: _acc(x).prod(dim=a).to(x.dtype))
max = _reducer(lambda x, a: x.amax(dim=a))  # noqa: A001
min = _reducer(lambda x, a: x.amin(dim=a))  # noqa: A001


def argmax(x, axis=None, keepdims=False, **_):
    x = _t(x)
    if axis is None:
        return x.reshape(-1).argmax().to(torch.int32)
    return x.argmax(dim=axis, keepdim=keepdims).to(torch.int32)


def argmin(x, axis=None, keepdims=False, **_):
    x = _t(x)
    if axis is None:
        return x.reshape(-1).argmin().to(torch.int32)
    return x.argmin(dim=axis, keepdim=keepdims).to(torch.int32)


def _scan_generic(xs, axis, func, identity, reverse):
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
    return _scan_generic(x, axis, func, identity, reverse)


def cumsum(x, axis=0, reverse=False, **_):
    x = _t(x)
    if reverse:
        return _acc(x).flip(axis).cumsum(axis).flip(axis).to(x.dtype)
    return _acc(x).cumsum(axis).to(x.dtype)


def cumprod(x, axis=0, reverse=False, **_):
    x = _t(x)
    if reverse:
        return _acc(x).flip(axis).cumprod(axis).flip(axis).to(x.dtype)
    return _acc(x).cumprod(axis).to(x.dtype)


def reduce(x, axis, func, identity, keepdims=False):
    single = not isinstance(x, (tuple, list))
    res = _scan_generic(x, axis, func, identity, False)
    res = [res] if single else list(res)
    n = res[0].shape[axis]
    out = [r.select(axis, n - 1) for r in res]
    if keepdims:
        out = [o.unsqueeze(axis) for o in out]
    return out[0] if single else tuple(out)


def where(cond, x, y):
    cond = _t(cond)
    like = x if isinstance(x, torch.Tensor) else (y if isinstance(y, torch.Tensor) else None)
    return torch.where(cond, _t(x, like), _t(y, like))


def _binary(fn):
    def op(a, b, **_):
        like = a if isinstance(a, torch.Tensor) else (b if isinstance(b, torch.Tensor) else None)
        return fn(_t(a, like), _t(b, like))
    return op


maximum = _binary(torch.maximum)
minimum = _binary(torch.minimum)
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


def bitcast(x, dtype):
    return _t(x).view(dtype)


def static_assert(cond, msg=""):
    assert cond, msg


def assume_divisible_by(x, n):
    return x


def mma(a, b, acc):
    return (a.to(torch.float64) @ b.to(torch.float64)).to(acc.dtype) + acc


def matmul(a, b):
    return (a.to(torch.float64) @ b.to(torch.float64)).to(a.dtype)


def _build() -> types.SimpleNamespace:
    ns = types.SimpleNamespace()
    g = globals()
    for name in ("PaddingMode", "RoundingMode", "kernel", "function", "bid", "num_blocks", "cdiv", "launch",
                 "arange", "full", "zeros", "ones", "load", "store", "gather", "scatter", "astype", "reshape",
                 "broadcast_to", "expand_dims", "permute", "transpose", "cat", "extract", "sum", "prod", "max",
                 "min", "argmax", "argmin", "scan", "cumsum", "cumprod", "reduce", "where", "maximum", "minimum",
                 "add", "sub", "mul", "truediv", "floordiv", "mod", "atan2", "equal", "not_equal", "greater",
                 "greater_equal", "less", "less_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "pow", "exp",
                 "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sin", "cos", "tan", "sinh", "cosh", "tanh",
                 "floor", "ceil", "negative", "isnan", "bitwise_not", "bitcast", "static_assert",
                 "assume_divisible_by", "mma", "matmul"):
        setattr(ns, name, g[name])
    ns.Constant = _Constant
    ns.float32, ns.float16, ns.bfloat16, ns.float64 = torch.float32, torch.float16, torch.bfloat16, torch.float64
    ns.int64, ns.int32, ns.int16, ns.int8, ns.uint8 = torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8
    ns.bool_ = torch.bool
    ns.tfloat32 = TFLOAT32
    return ns


EMULATED_CT = _build()


@contextlib.contextmanager
def emulation():
    """Tensors get `.astype` (cuTile's tile method) and torch.cuda.current_stream works without CUDA."""
    had = hasattr(torch.Tensor, "astype")
    real_stream = torch.cuda.current_stream
    if not had:
        torch.Tensor.astype = astype
    torch.cuda.current_stream = lambda *a, **k: None
    try:
        yield
    finally:
        torch.cuda.current_stream = real_stream
        if not had:
            del torch.Tensor.astype


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
