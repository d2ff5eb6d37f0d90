"""Gather-family ops that rearrange or combine neighbouring elements: channel_shuffle, im2col (F.unfold), col2im
(F.fold: each output element sums the kh * kw column entries whose window covers it), diff (any order n, no
prepend/append) and cross (a 3-element dim). Each returns the value at the output tile's
coordinates (c: gather._Ctx) from gathers of the input(s); out-of-range window taps of im2col read the zero
padding through the gather's bounds check.
"""

from __future__ import annotations

from math import comb

from .base import Unsupported


def _dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


def channel_shuffle(c) -> str:
    """out channel k reads input channel (k % g) * (C / g) + k // g: view(N, g, C/g, ...).transpose(1, 2)."""
    x = c.tensor("self")
    g = int(c.args.get("groups"))
    if len(x.shape) < 3 or x.shape[1] % g:
        raise Unsupported("channel_shuffle needs (N, C, ...) with C a multiple of groups")
    ch = c.coords[1]
    src = c.tmp(f"({ch} % {g}) * {x.shape[1] // g} + {ch} // {g}", "cs") if ch != "0" else "0"
    return c.gather(x, [c.coords[0], src] + list(c.coords[2:]))


def im2col(c) -> str:
    """F.unfold: out[n, (ch * kh + i) * kw + j, oy * ow + ox] = x[n, ch, oy * sh - ph + i * dh, ox * sw - pw + j * dw]
    (zero outside the input)."""
    x = c.tensor("self")
    if len(x.shape) not in (3, 4):
        raise Unsupported("im2col needs a (C, H, W) or (N, C, H, W) input")
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (list(c.args.get(k)) for k in ("kernel_size", "dilation", "padding",
                                                                            "stride"))
    h, w = x.shape[-2:]
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    *lead, row, col = c.coords  # lead: the batch (if any); row: (ch, i, j); col: (oy, ox)
    ch = c.tmp(f"{row} // {kh * kw}", "uc")
    i = c.tmp(f"({row} // {kw}) % {kh}", "uc")
    j = c.tmp(f"{row} % {kw}", "uc")
    oy = c.tmp(f"{col} // {ow}", "uc")
    ox = c.tmp(f"{col} % {ow}", "uc")
    y = c.tmp(f"{oy} * {sh} + {i} * {dh} - {ph}", "uc")
    xx = c.tmp(f"{ox} * {sw} + {j} * {dw} - {pw}", "uc")
    # a negative coordinate must not wrap: the gather's bounds check reads it as padding (0)
    return c.gather(x, list(lead) + [ch, y, xx], pad="0")


def col2im(c) -> str:
    """F.fold: out[n, ch, y, x] = sum over taps (i, j) with (y + ph - i * dh) = oy * sh and (x + pw - j * dw) =
    ox * sw for a window (oy, ox) inside the (oh, ow) grid of cols[n, (ch * kh + i) * kw + j, oy * ow + ox]; float32
    sums in tap order."""
    cols = c.tensor("self")
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (list(c.args.get(k)) for k in (
        "output_size", "kernel_size", "dilation", "padding", "stride"))
    if len(cols.shape) not in (2, 3):
        raise Unsupported("col2im needs a (C * kh * kw, L) or (N, C * kh * kw, L) input")
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    *lead, ch, y, x = c.coords
    fl = cols.dtype.startswith(("float", "bfloat"))
    terms = []
    for i in range(kh):
        ty = c.tmp(f"{y} + {ph - i * dh}", "fy")
        oy = c.tmp(f"{ty} // {sh}", "fy")
        oky = f"({ty} >= 0) & ({ty} % {sh} == 0) & ({oy} < {oh})" if sh > 1 else f"({ty} >= 0) & ({ty} < {oh})"
        for j in range(kw):
            tx = c.tmp(f"{x} + {pw - j * dw}", "fx")
            ox = c.tmp(f"{tx} // {sw}", "fx")
            okx = f"({tx} >= 0) & ({tx} % {sw} == 0) & ({ox} < {ow})" if sw > 1 else f"({tx} >= 0) & ({tx} < {ow})"
            row = c.tmp(f"({ch} * {kh} + {i}) * {kw} + {j}" if ch != "0" else f"{i * kw + j}", "fr")
            ok = c.tmp(f"ct.broadcast_to({oky} & {okx}, (BR, BL))", "fm")
            idx = list(lead) + [row, c.tmp(f"{oy} * {ow} + {ox}", "fl")]
            terms.append(c.tmp(f"{c.gather(cols, idx, pad='0', mask=ok)}" + (".astype(ct.float32)" if fl else ""),
                               "fv"))
    return " + ".join(terms)


def diff(c) -> str:
    """diff of order n along dim: sum over k of (-1)^(n - k) C(n, k) x[..., i + k, ...]; float32 for floats."""
    x = c.tensor("self")
    if c.args.get("prepend") is not None or c.args.get("append") is not None:
        raise Unsupported("diff with prepend/append")
    n = int(c.args.get("n", 1))
    d = _dim(int(c.args.get("dim", -1)), len(x.shape))
    if n < 1 or not x.shape:
        raise Unsupported(f"diff of order {n} on shape {x.shape}")
    if x.dtype == "bool":
        if n != 1:
            raise Unsupported("diff of a bool tensor of order > 1")
        src = list(c.coords)
        src[d] = c.tmp(f"{c.coords[d]} + 1", "df")
        return f"{c.gather(x, c.coords)} != {c.gather(x, src)}"
    fl = x.dtype.startswith(("float", "bfloat"))
    terms = []
    for k in range(n + 1):
        src = list(c.coords)
        if k:
            src[d] = c.tmp(f"{c.coords[d]} + {k}", "df")
        v = c.gather(x, src) + (".astype(ct.float32)" if fl else "")
        coef = (-1) ** (n - k) * comb(n, k)
        terms.append(f"{coef} * {v}" if coef != 1 else v)
    return " + ".join(terms)


def cross(c) -> str:
    """The cross product along a dim of 3 elements: out[i] = a[i + 1] b[i + 2] - a[i + 2] b[i + 1] (mod 3)."""
    a, b = c.tensor("self"), c.tensor("other")
    if list(a.shape) != list(b.shape):
        raise Unsupported("cross of operands of different shapes")
    dim = c.args.get("dim")
    d = _dim(int(dim), len(a.shape)) if dim is not None else next((i for i, s in enumerate(a.shape) if s == 3), -1)
    if d < 0 or a.shape[d] != 3:
        raise Unsupported("cross needs a dim of 3 elements")
    o = c.coords[d]
    i1, i2 = c.tmp(f"({o} + 1) % 3", "cx"), c.tmp(f"({o} + 2) % 3", "cx")

    def at(t, i):
        src = list(c.coords)
        src[d] = i
        return c.tmp(f"{c.gather(t, src)}.astype(ct.float32)", "cv")
    return f"{at(a, i1)} * {at(b, i2)} - {at(a, i2)} * {at(b, i1)}"


OPS = {"channel_shuffle": channel_shuffle, "native_channel_shuffle": channel_shuffle, "im2col": im2col,
       "col2im": col2im,
       "diff": diff, "cross": cross, "linalg_cross": cross}
