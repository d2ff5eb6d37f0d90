"""The matmuls attention is written with (fusion rule R8 and the flash kernel it leads to): matmul, bmm, baddbmm with
beta=0, and two-operand einsum equations that are a batched matmul over the last two dims. "b i j, b j d -> b i d" is
a @ b (the probabilities @ v, or the scores with k^T given), "b i d, b j d -> b i j" is a @ b^T (the scores with k as
stored, latent diffusion's attention). Batch subscripts lead every term in the same order; an ellipsis is taken only
as that common batch prefix."""

from __future__ import annotations

A_B, A_BT = "a @ b", "a @ b^T"


def batched_matmul_form(equation: str) -> str | None:
    """A_B, A_BT, or None when the equation is neither."""
    eq = equation.replace(" ", "")
    if eq.count("->") != 1:
        return None
    lhs, out = eq.split("->")
    terms = lhs.split(",")
    if len(terms) != 2:
        return None
    a, b = terms
    if any("..." in t for t in (a, b, out)):
        if not all(t.startswith("...") and "..." not in t[3:] for t in (a, b, out)):
            return None
        a, b, out = ("." + t[3:] for t in (a, b, out))  # one batch "subscript" standing for the ellipsis
    if not (len(a) == len(b) == len(out) >= 3) or not (a[:-2] == b[:-2] == out[:-2]):
        return None
    (i, k), (x, y), (o1, o2) = a[-2:], b[-2:], out[-2:]
    if len(set(a[:-2]) | {i, k, x, y}) != len(a) + 1:
        return None  # three distinct subscripts after the batch ones, none of them a batch one
    if x == k and (o1, o2) == (i, y):
        return A_B
    if y == k and (o1, o2) == (i, x):
        return A_BT
    return None


def attention_matmul_form(op: str, attrs: dict) -> str | None:
    """A_B / A_BT of a matmul R8 takes, from its base op name and attributes: matmul, bmm, baddbmm with beta=0 (its
    input ignored, alpha scaling the product), an einsum of either form; None for the others."""
    if op in ("matmul", "bmm") or op == "baddbmm" and attrs.get("beta") == 0:
        return A_B
    if op == "einsum" and isinstance(attrs.get("equation"), str):
        return batched_matmul_form(attrs["equation"])
    return None
