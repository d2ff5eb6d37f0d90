"""A NumPy stand-in for the part of cuda.tile that elementwise kernels use, to run generated code on the CPU.

Not a cuTile implementation: just enough semantics (tile-space loads/stores with padding and bounds, gathers,
scatters, float32 math, dtype casts) to check index math and numerics of generated elementwise kernels against
the float64 reference without a GPU. Launches run every block of the grid sequentially.
"""

from __future__ import annotations

import itertools
import math
import types
from typing import Any

import numpy as np
import torch

F32 = np.float32

# Marker dtypes: bfloat16 tiles are held as float32 and rounded when stored to a bfloat16 tensor.
_NP = {torch.float32: np.float32, torch.float16: np.float16, torch.bfloat16: np.float32, torch.float64: np.float64,
       torch.int64: np.int64, torch.int32: np.int32, torch.int16: np.int16, torch.int8: np.int8,
       torch.uint8: np.uint8, torch.bool: np.bool_}


class EmuArray:
    """A flat or ND torch tensor seen as a cuTile array."""

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor
        self.dtype = _NP[tensor.dtype]
        self.shape = tuple(tensor.shape)
        self._values: np.ndarray | None = None

    def values(self) -> np.ndarray:
        """The contents as NumPy (read once: kernels never read what they write)."""
        if self._values is None:
            t = self.tensor
            if t.dtype == torch.bfloat16:
                t = t.float()
            self._values = t.detach().cpu().numpy()
        return self._values

    def write(self, index: tuple, vals: np.ndarray) -> None:
        src = torch.from_numpy(np.ascontiguousarray(vals))
        self.tensor[index] = src.to(self.tensor.dtype)


class _Constant:
    def __class_getitem__(cls, item):
        return cls


class PaddingMode:
    UNDETERMINED, ZERO, NEG_ZERO, NAN, POS_INF, NEG_INF = "u", 0.0, -0.0, math.nan, math.inf, -math.inf


_state = {"bid": (0, 0, 0), "grid": (1, 1, 1)}


def _pad_value(mode):
    return 0.0 if mode in (None, PaddingMode.UNDETERMINED) else mode


def _f(x):
    if isinstance(x, np.ndarray) and x.dtype in (np.bool_, np.float16, np.float64):
        return x.astype(F32) if x.dtype != np.bool_ else x
    if isinstance(x, np.ndarray):
        return x
    return F32(x) if isinstance(x, float) else x


def load(array: EmuArray, index, shape, order="C", padding_mode=None, check_bounds=True, latency=None,
         allow_tma=None, **_):
    index = tuple(index) if isinstance(index, (tuple, list)) else (index,)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    src = array.values()
    out = np.full(shape, _pad_value(padding_mode), dtype=array.dtype if array.dtype != np.bool_ else np.bool_)
    starts = [int(i) * s for i, s in zip(index, shape)]
    src_sl, dst_sl = [], []
    for start, size, dim in zip(starts, shape, src.shape):
        stop = min(start + size, dim)
        if stop <= start:
            return out
        src_sl.append(slice(start, stop))
        dst_sl.append(slice(0, stop - start))
    out[tuple(dst_sl)] = src[tuple(src_sl)]
    return out


def store(array: EmuArray, index, tile, order="C", check_bounds=True, latency=None, allow_tma=None, **_):
    index = tuple(index) if isinstance(index, (tuple, list)) else (index,)
    tile = np.asarray(tile)
    sl, dst = [], []
    for i, size, dim in zip(index, tile.shape, array.shape):
        start = int(i) * size
        stop = min(start + size, dim)
        if stop <= start:
            return
        sl.append(slice(start, stop))
        dst.append(slice(0, stop - start))
    array.write(tuple(sl), tile[tuple(dst)])


def _indices(indices):
    return indices if isinstance(indices, tuple) else (indices,)


def gather(array: EmuArray, indices, mask=None, padding_value=0, check_bounds=True, latency=None):
    idx = [np.asarray(i) for i in _indices(indices)]
    idx = np.broadcast_arrays(*idx)
    src = array.values()
    ok = np.ones(idx[0].shape, dtype=bool)
    for i, dim in zip(idx, src.shape):
        ok &= (i >= 0) & (i < dim)
    if mask is not None:
        ok &= np.broadcast_to(mask, ok.shape)
    safe = [np.where(ok, i, 0) for i in idx]
    vals = src[tuple(safe)]
    return np.where(ok, vals, np.asarray(padding_value, dtype=vals.dtype)).astype(src.dtype)


def scatter(array: EmuArray, indices, value, mask=None, check_bounds=True, latency=None):
    idx = [np.asarray(i) for i in _indices(indices)]
    value = np.asarray(value)
    shape = np.broadcast_shapes(*[i.shape for i in idx], value.shape)
    idx = [np.broadcast_to(i, shape) for i in idx]
    value = np.broadcast_to(value, shape)
    ok = np.ones(shape, dtype=bool)
    for i, dim in zip(idx, array.shape):
        ok &= (i >= 0) & (i < dim)
    if mask is not None:
        ok &= np.broadcast_to(mask, shape)
    sel = tuple(torch.from_numpy(np.ascontiguousarray(i[ok]).astype(np.int64)) for i in idx)
    if len(sel[0]):
        array.tensor[sel] = torch.from_numpy(np.ascontiguousarray(value[ok])).to(array.tensor.dtype)


def bid(axis):
    return np.int32(_state["bid"][axis])


def num_blocks(axis):
    return np.int32(_state["grid"][axis])


def arange(size, dtype=np.int32, start=0, step=1):
    return (np.arange(size) * step + start).astype(dtype)


def full(shape, fill_value, dtype):
    return np.full(shape, fill_value, dtype=dtype)


def zeros(shape, dtype):
    return np.zeros(shape, dtype=dtype)


def maximum(a, b, propagate_nan=False, flush_to_zero=False):
    return (np.maximum if propagate_nan else np.fmax)(_f(a), _f(b))


def minimum(a, b, propagate_nan=False, flush_to_zero=False):
    return (np.minimum if propagate_nan else np.fmin)(_f(a), _f(b))


def where(cond, a, b):
    a, b = np.asarray(a), np.asarray(b)
    both_bool = a.dtype == np.bool_ and b.dtype == np.bool_
    out = np.where(cond, a, b)
    return out if both_bool else out.astype(F32 if out.dtype != np.int32 else np.int32)


def _unary(fn):
    def apply(x, **_):
        return fn(_f(x)).astype(F32) if not isinstance(x, (int, float)) else F32(fn(F32(x)))
    return apply


def launch(stream, grid, kernel, args):
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    args = [EmuArray(a) if isinstance(a, torch.Tensor) else a for a in args]
    _state["grid"] = grid
    with np.errstate(all="ignore"):
        for b in itertools.product(*(range(g) for g in grid)):
            _state["bid"] = b
            kernel(*args)


def kernel(fn=None, **_):
    return fn if fn is not None else (lambda f: f)


def cdiv(a, b):
    return -(-a // b)


def module() -> types.SimpleNamespace:
    """The fake `ct` namespace."""
    return types.SimpleNamespace(
        float32=np.float32, float16=np.float16, bfloat16=np.float32, float64=np.float64, int64=np.int64,
        int32=np.int32, int16=np.int16, int8=np.int8, uint8=np.uint8, bool_=np.bool_,
        Constant=_Constant, PaddingMode=PaddingMode, kernel=kernel, launch=launch, cdiv=cdiv,
        load=load, store=store, gather=gather, scatter=scatter, bid=bid, num_blocks=num_blocks, arange=arange,
        full=full, zeros=zeros, maximum=maximum, minimum=minimum, where=where,
        broadcast_to=lambda x, shape: np.broadcast_to(x, shape), reshape=lambda x, shape: np.reshape(x, shape),
        exp=_unary(np.exp), exp2=_unary(np.exp2), log=_unary(np.log), log2=_unary(np.log2), sqrt=_unary(np.sqrt),
        rsqrt=_unary(lambda v: 1.0 / np.sqrt(v)), sin=_unary(np.sin), cos=_unary(np.cos), tan=_unary(np.tan),
        tanh=_unary(np.tanh), sinh=_unary(np.sinh), cosh=_unary(np.cosh), floor=_unary(np.floor),
        ceil=_unary(np.ceil), abs=lambda x: np.abs(x), isnan=lambda x: np.isnan(x),
        atan2=lambda a, b: np.arctan2(_f(a), _f(b)).astype(F32),
        pow=lambda a, b: np.power(_f(a), _f(b)).astype(F32),
        bitcast=lambda x, dt: np.asarray(x, dtype=F32).view(np.int32),
    )


def run_source(code: str, launch_name: str, args: list[Any]):
    """Exec generated module code with the emulated `ct` and call its launch wrapper on CPU tensors."""
    ns: dict[str, Any] = {"ct": module(), "torch": _CpuTorch(), "math": math}
    exec(compile(code, "<emulated kernel>", "exec"), ns)  # noqa: S102 - generated code under test
    return ns[launch_name](*args)


class _CpuTorch:
    """torch, with cuda.current_stream stubbed and torch.empty poisoned (NaN / sentinel), like checking.py."""

    class cuda:  # noqa: N801 - mirrors torch.cuda
        @staticmethod
        def current_stream(*_a, **_k):
            return None

    def __getattr__(self, name):
        return getattr(torch, name)

    @staticmethod
    def empty(*a, **k):
        t = torch.empty(*a, **k)
        if t.is_floating_point():
            return t.fill_(math.nan)
        return t.fill_(True) if t.dtype == torch.bool else t.fill_(-7)


def check_on_cpu(spec, source, seed: int = 0):
    """Like checking.check_kernel, but runs the generated code on the emulator (CPU)."""
    from tilestudio.core.kernels.checking import TOLERANCE, random_input

    gen = torch.Generator().manual_seed(seed)
    inputs = [random_input(t, "cpu", gen) for t in spec.inputs]
    result = run_source(source.code, source.launch_name, inputs)
    actual = result if isinstance(result, tuple) else (result,)
    ref_ns: dict[str, Any] = {"torch": torch, "math": math}
    exec(compile(spec.reference, spec.reference_name, "exec"), ref_ns)  # noqa: S102
    ref_inputs = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
    expected = ref_ns[spec.reference_name](*ref_inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    problems = []
    for out_spec, a, e in zip(spec.outputs, actual, expected):
        if list(a.shape) != list(e.shape):
            problems.append(f"{out_spec.name}: shape {list(a.shape)} != {list(e.shape)}")
            continue
        if not a.is_floating_point():
            if not torch.equal(a, e.to(a.dtype)):
                problems.append(f"{out_spec.name}: integer/bool output differs")
            continue
        a64, e64 = a.double(), e.double()
        if torch.isnan(a64).any() and not torch.isnan(e64).any():
            problems.append(f"{out_spec.name}: NaN in the output")
            continue
        rtol, atol = TOLERANCE.get(out_spec.dtype, (2e-3, 2e-3))
        if not torch.allclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True):
            err = float((a64 - e64).abs().nan_to_num(0.0).max())
            problems.append(f"{out_spec.name}: max abs err {err:.3g}")
    return problems
