"""Small value helpers of the row-wise generators: dtype sets, integer arithmetic of tile sizes, literals read from
op attributes or written into generated code, and the normalised list of reduced dims."""

from __future__ import annotations

import math

from .base import TORCH_TO_CT, Unsupported

FLOAT_DTYPES = ("float32", "float16", "bfloat16")
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def pow2_floor(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def prod(values) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def decode(value):
    """An attrs/args literal as a Python value ({'float': 'inf'} → math.inf)."""
    if isinstance(value, dict) and "float" in value:
        return float(value["float"])
    if isinstance(value, dict) and "dtype" in value:
        return value["dtype"]
    return value


def flit(value: float) -> str:
    """A float literal for generated code."""
    value = float(value)
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "-math.inf"
    return repr(value)


def norm_dims(dims, rank: int) -> list[int]:
    """Reduction dims as sorted non-negative ints; None or [] means every dim."""
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    dims = [int(d) for d in dims]
    if not dims:
        return list(range(rank))
    out = sorted({d % rank if rank else 0 for d in dims})
    return out if rank else []


def ct_dtype(dtype: str) -> str:
    if dtype not in TORCH_TO_CT:
        raise Unsupported(f"dtype {dtype}")
    return TORCH_TO_CT[dtype]
