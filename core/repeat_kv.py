"""Grouped-query attention's repeat_kv (fusion rule R8 and the flash kernel it leads to).

Llama, Mistral, Qwen and Gemma give each group of n query heads one key/value head and repeat it before attention
as Hugging Face writes it:

    x[:, :, None, :, :].expand(batch, kv_heads, n, seq, head_dim).reshape(batch, kv_heads * n, seq, head_dim)

which the op graph holds as unsqueeze(x, 2), expand, reshape (plus, for the keys, the transpose(-2, -1) that makes
k^T). Glue would copy x n times; the flash kernel instead reads key/value head h // n for query head h. `match`
recognises the chain from the value the attention's matmul reads, through a lookup of the values it names, so fusion
(over op-graph nodes) and the kernel library (over a spec's op records) share one definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .op_values import Value
from .op_values import ref as _ref


@dataclass(frozen=True)
class RepeatKV:
    nodes: tuple[str, ...]  # the chain's values, from x's consumer to the operand
    x: str  # the key/value tensor with kv_heads heads, (batch, kv_heads, seq, head_dim)
    n_rep: int  # query heads per key/value head
    transposed: bool  # the operand is the repeated tensor's transpose(-2, -1)


def _is_last_two_transpose(v: Value) -> bool:
    if v.op not in ("transpose", "transpose_") or len(v.args) < 3 or len(v.shape) != 4:
        return False
    dims = sorted(d % 4 for d in v.args[1:3] if isinstance(d, int))
    return dims == [2, 3]


def match(operand: str, lookup: Callable[[str], Value | None]) -> RepeatKV | None:
    """The repeat_kv chain ending at `operand` (optionally through a last-two-dims transpose), or None."""
    top = lookup(operand)
    if top is None:
        return None
    nodes = [operand]
    transposed = _is_last_two_transpose(top)
    if transposed:
        operand = _ref(top.args[0]) or ""
        top = lookup(operand)
        nodes.insert(0, operand)
    if top is None or top.op not in ("reshape", "view", "_unsafe_view") or len(top.shape) != 4 or not top.args:
        return None
    exp_name = _ref(top.args[0])
    exp = lookup(exp_name) if exp_name else None
    if exp is None or exp.op != "expand" or len(exp.shape) != 5 or not exp.args:
        return None
    uns_name = _ref(exp.args[0])
    uns = lookup(uns_name) if uns_name else None
    if uns is None or uns.op != "unsqueeze" or len(uns.args) < 2 or not isinstance(uns.args[1], int):
        return None
    x_name = _ref(uns.args[0])
    x = lookup(x_name) if x_name else None
    if x is None or len(x.shape) != 4 or uns.args[1] % 5 != 2:
        return None
    b, kv, s, d = x.shape
    n = exp.shape[2]
    if list(exp.shape) != [b, kv, n, s, d] or list(top.shape) != [b, kv * n, s, d] or n < 1:
        return None
    return RepeatKV(nodes=(uns_name, exp_name, *nodes), x=x_name, n_rep=n, transposed=transposed)
