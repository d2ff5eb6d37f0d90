"""Rotary embeddings' rotate_half (fusion rule R9 and the elementwise kernel it leads to).

Llama, GPT-NeoX, Mistral, Qwen and most Hugging Face decoders rotate q and k as `x * cos + rotate_half(x) * sin`
with

    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)

which the op graph holds as slice(x, -1, 0, H), slice(x, -1, H, end), neg, cat([neg, lo], -1) over x with a last
dim of 2H. `match` recognises those four ops from a cat's arguments through a lookup of the values they name, so
fusion (over op-graph nodes) and the kernel library (over a spec's op records) share one definition: element j of
the result is -x[..., j + H] for j < H and x[..., j - H] otherwise, a rotated read of x in the kernel that also
reads x, and the halves, the negation and the concatenation are never written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .op_values import Value
from .op_values import ref as _ref

INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class RotateHalf:
    cat: str  # the result: rotate_half(x)
    neg: str  # -x[..., H:]
    lo: str  # x[..., :H]
    hi: str  # x[..., H:]
    x: str  # the rotated value
    half: int  # H: the rotated (last) dim has 2H elements


def _last_dim_slice(v: Value) -> tuple[str, int, int] | None:
    """(x, start, end) of slice(x, dim, start, end, step) along the last dim with step 1, else None."""
    if v.op != "slice" or not v.args or len(v.args) > 5 or not v.shape:
        return None
    src, dim, start, end, step = list(v.args) + [0, None, None, 1][len(v.args) - 1:]
    rank = len(v.shape)
    if _ref(src) is None or not isinstance(dim, int) or dim % rank != rank - 1 or step not in (1, None):
        return None
    return _ref(src), 0 if start is None else start, INT64_MAX if end is None else end


def match(cat: str, cat_args: list[Any], lookup: Callable[[str], Value | None]) -> RotateHalf | None:
    """The rotate_half that `cat` (aten.cat with these arguments) closes, or None. `lookup(name)` describes a value
    (None: unknown)."""
    if not cat_args or not isinstance(cat_args[0], (list, tuple)) or len(cat_args[0]) != 2:
        return None
    dim = cat_args[1] if len(cat_args) > 1 else 0
    neg_name, lo_name = (_ref(a) for a in cat_args[0])
    if neg_name is None or lo_name is None or not isinstance(dim, int):
        return None
    neg, lo = lookup(neg_name), lookup(lo_name)
    if neg is None or lo is None or neg.op != "neg" or not neg.args or _ref(neg.args[0]) is None:
        return None
    hi_name = _ref(neg.args[0])
    hi = lookup(hi_name)
    if hi is None or not lo.shape or dim % len(lo.shape) != len(lo.shape) - 1:
        return None
    lo_s, hi_s = _last_dim_slice(lo), _last_dim_slice(hi)
    if lo_s is None or hi_s is None or lo_s[0] != hi_s[0]:
        return None
    x = lookup(lo_s[0])
    half = lo.shape[-1]
    if x is None or half < 1 or list(x.shape) != list(lo.shape[:-1]) + [2 * half] or hi.shape != lo.shape:
        return None
    if lo_s[1:] != (0, half) or hi_s[1] != half or hi_s[2] < 2 * half:
        return None
    return RotateHalf(cat=cat, neg=neg_name, lo=lo_name, hi=hi_name, x=lo_s[0], half=half)
