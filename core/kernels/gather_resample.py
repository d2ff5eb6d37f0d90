"""Resampling ops of the gather family (F.interpolate / nn.Upsample): nearest and nearest-exact over 1-3 spatial
dims, linear / bilinear / trilinear (2, 4 or 8 gathers blended in float32) and bicubic (16 gathers, PyTorch's cubic
convolution with A = -0.75), both corner modes, from scale factors or sizes; and F.grid_sample over 2-d inputs
(bilinear or nearest, zeros / border / reflection padding, both corner modes).

Per spatial dim the source coordinate follows PyTorch's area_pixel_compute_source_index: scale = (in - 1) /
(out - 1) with align_corners, else 1 / scale_factor when one is given, else in / out, rounded to float32 as the
device computes it; source = o * scale (align_corners) or (o + 0.5) * scale - 0.5, clamped at 0 for linear modes
(not for cubic). Neighbours are clamped into the input, as PyTorch reads them.
"""

from __future__ import annotations

import itertools
import struct

from .base import Unsupported

CUBIC_A = -0.75


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def _f32_div(a: int, b: int) -> float:
    """a / b rounded once to float32, as the device computes it."""
    import torch

    return float(torch.tensor(float(a), dtype=torch.float32) / torch.tensor(float(b), dtype=torch.float32))


def _setup(c, what: str, dims: int):
    x = c.tensor("input" if "input" in c.args else "self")
    if len(x.shape) != dims + 2:
        raise Unsupported(f"{what} needs an (N, C, {'D, ' if dims == 3 else ''}{'H, ' if dims >= 2 else ''}W) input")
    scales = c.args.get("scale_factors") or [c.args.get(k) for k in ("scales_d", "scales_h", "scales_w")[3 - dims:]]
    return x, scales


def _scale(n_in: int, n_out: int, sc, align: bool) -> float:
    if align:
        return _f32_div(n_in - 1, n_out - 1) if n_out > 1 else 0.0
    return _f32(1.0 / float(sc)) if sc else _f32_div(n_in, n_out)


def nearest(c, dims: int, exact: bool = False) -> str:
    """PyTorch's nearest source index per spatial dim: min(floor(o * scale), in - 1) with a float32 scale
    (nearest-exact: floor((o + 0.5) * scale))."""
    x, scales = _setup(c, "nearest upsampling", dims)
    src = list(c.coords[:2])
    for i in range(dims):
        n_in, n_out = x.shape[2 + i], c.out_shape[2 + i]
        o = c.coords[2 + i]
        sc = scales[i] if scales else None
        scale = _scale(n_in, n_out, sc, False)
        if n_in == n_out and not sc:
            src.append(o)
        elif exact:
            fl = c.tmp(f"ct.floor(({o}.astype(ct.float32) + 0.5) * {scale!r}).astype(ct.int32)", "un")
            src.append(c.tmp(f"ct.minimum({fl}, {n_in - 1})", "un"))
        else:
            fl = c.tmp(f"ct.floor({o}.astype(ct.float32) * {scale!r}).astype(ct.int32)", "un")
            src.append(c.tmp(f"ct.minimum({fl}, {n_in - 1})", "un"))
    return c.gather(x, src)


def linear(c, dims: int) -> str:
    """Linear interpolation over `dims` spatial dims: per dim the neighbours floor(source) and min(floor + 1,
    in - 1) and the fractional part; 2 ** dims gathers blended dim by dim, float32 weights."""
    x, scales = _setup(c, "linear upsampling", dims)
    align = bool(c.args.get("align_corners"))
    taps, frac = [], []
    for i in range(dims):
        n_in, n_out, o = x.shape[2 + i], c.out_shape[2 + i], c.coords[2 + i]
        scale = _scale(n_in, n_out, scales[i] if scales else None, align)
        of = "0.0" if o == "0" else f"{o}.astype(ct.float32)"
        src = c.tmp(f"{of} * {scale!r}" if align else f"ct.maximum(({of} + 0.5) * {scale!r} - 0.5, 0.0)", "us")
        i0 = c.tmp(f"ct.floor({src}).astype(ct.int32)", "ui")
        taps.append((i0, c.tmp(f"ct.minimum({i0} + 1, {n_in - 1})", "ui")))
        frac.append(c.tmp(f"{src} - {i0}.astype(ct.float32)", "ul"))
    lead = list(c.coords[:2])
    g = {k: c.tmp(f"{c.gather(x, lead + [taps[d][k[d]] for d in range(dims)])}.astype(ct.float32)", "uv")
         for k in itertools.product((0, 1), repeat=dims)}

    def blend(prefix: tuple[int, ...]) -> str:
        d = len(prefix)
        lo, hi = (g[prefix + (b,)] if d == dims - 1 else f"({blend(prefix + (b,))})" for b in (0, 1))
        return f"(1.0 - {frac[d]}) * {lo} + {frac[d]} * {hi}"
    return blend(())


def bicubic(c) -> str:
    """PyTorch's bicubic upsampling (upsample_bicubic2d): source = o * scale or (o + 0.5) * scale - 0.5 (not
    clamped), taps floor(source) - 1 .. + 2 clamped into the input, cubic-convolution weights of the fractional
    part t with A = -0.75; 16 gathers, float32."""
    x, scales = _setup(c, "bicubic upsampling", 2)
    align = bool(c.args.get("align_corners"))
    a = CUBIC_A
    taps, weights = [], []
    for i in range(2):
        n_in, n_out, o = x.shape[2 + i], c.out_shape[2 + i], c.coords[2 + i]
        scale = _scale(n_in, n_out, scales[i] if scales else None, align)
        of = "0.0" if o == "0" else f"{o}.astype(ct.float32)"
        src = c.tmp(f"{of} * {scale!r}" if align else f"({of} + 0.5) * {scale!r} - 0.5", "us")
        i0 = c.tmp(f"ct.floor({src}).astype(ct.int32)", "ui")
        t = c.tmp(f"{src} - {i0}.astype(ct.float32)", "ut")
        taps.append([c.tmp(f"ct.minimum(ct.maximum({i0} + {k - 1}, 0), {n_in - 1})", "ui") for k in range(4)])
        near = "(({a2} * {u} - {a3}) * {u} * {u} + 1.0)".format(a2=a + 2, a3=a + 3, u="{u}")
        far = "((({a} * {u} - {a5}) * {u} + {a8}) * {u} - {a4})".format(a=a, a5=5 * a, a8=8 * a, a4=4 * a, u="{u}")
        weights.append([c.tmp(far.format(u=f"({t} + 1.0)"), "uw"), c.tmp(near.format(u=t), "uw"),
                        c.tmp(near.format(u=f"(1.0 - {t})"), "uw"), c.tmp(far.format(u=f"(2.0 - {t})"), "uw")])
    lead = list(c.coords[:2])
    rows = []
    for r in range(4):
        g = [c.tmp(f"{c.gather(x, lead + [taps[0][r], taps[1][k]])}.astype(ct.float32)", "uv") for k in range(4)]
        rows.append(c.tmp(" + ".join(f"{weights[1][k]} * {g[k]}" for k in range(4)), "ur"))
    return " + ".join(f"{weights[0][r]} * {rows[r]}" for r in range(4))


def _reflect(c, x: str, low2: int, high2: int) -> str:
    """PyTorch's reflect_coordinates(x, twice_low, twice_high): x mirrored into [low2 / 2, high2 / 2]."""
    if low2 == high2:
        return "0.0"
    lo, span = low2 / 2, (high2 - low2) / 2
    d = c.tmp(f"ct.abs({x} - {lo!r})", "gr")
    flips = c.tmp(f"ct.floor({d} / {span!r})", "gr")
    extra = c.tmp(f"{d} - {flips} * {span!r}", "gr")
    even = f"({flips} * 0.5 == ct.floor({flips} * 0.5))"
    return c.tmp(f"ct.where({even}, {extra} + {lo!r}, {span!r} - {extra} + {lo!r})", "gr")


def grid_sample(c) -> str:
    """F.grid_sample of an (N, C, H, W) input at an (N, Ho, Wo, 2) grid of normalized (x, y): unnormalized per
    corner mode, border/reflection padding clipping (and mirroring) the source coordinate, zeros padding reading 0
    outside (the gathers' bounds check); bilinear blends the four neighbours with PyTorch's weights in its order,
    nearest rounds half to even."""
    x, grid = c.tensor("input"), c.tensor("grid")
    mode, pad = int(c.args.get("interpolation_mode", 0)), int(c.args.get("padding_mode", 0))
    align = bool(c.args.get("align_corners"))
    if len(x.shape) != 4 or len(grid.shape) != 4 or mode not in (0, 1) or pad not in (0, 1, 2):
        raise Unsupported("grid_sampler: a 4-d input, bilinear or nearest (bicubic is not generated)")
    n, ch, oy, ox = c.coords
    src = []
    for k, size in ((0, x.shape[3]), (1, x.shape[2])):
        g = c.tmp(f"{c.gather(grid, [n, oy, ox, str(k)])}.astype(ct.float32)", "gg")
        v = c.tmp(f"(({g} + 1.0) * 0.5) * {float(size - 1)!r}" if align else
                  f"(({g} + 1.0) * {float(size)!r} - 1.0) * 0.5", "gu")
        if pad == 2:
            v = _reflect(c, v, 0, 2 * (size - 1)) if align else _reflect(c, v, -1, 2 * size - 1)
        if pad in (1, 2):
            v = c.tmp(f"ct.minimum(ct.maximum({v}, 0.0), {float(size - 1)!r})", "gc")
        src.append(v)
    ix, iy = src
    if mode == 1:
        def rnd(v: str) -> str:
            fl = c.tmp(f"ct.floor({v})", "gn")
            d = c.tmp(f"{v} - {fl}", "gn")
            odd = f"({fl} * 0.5 != ct.floor({fl} * 0.5))"
            return c.tmp(f"ct.where(({d} > 0.5) | (({d} == 0.5) & {odd}), {fl} + 1.0, {fl}).astype(ct.int32)", "gn")
        return c.gather(x, [n, ch, rnd(iy), rnd(ix)], pad="0")
    x0 = c.tmp(f"ct.floor({ix})", "gf")
    y0 = c.tmp(f"ct.floor({iy})", "gf")
    xi = [c.tmp(f"{x0}.astype(ct.int32)", "gi")]
    xi.append(c.tmp(f"{xi[0]} + 1", "gi"))
    yi = [c.tmp(f"{y0}.astype(ct.int32)", "gi")]
    yi.append(c.tmp(f"{yi[0]} + 1", "gi"))
    wx = [c.tmp(f"{x0} + 1.0 - {ix}", "gw"), c.tmp(f"{ix} - {x0}", "gw")]
    wy = [c.tmp(f"{y0} + 1.0 - {iy}", "gw"), c.tmp(f"{iy} - {y0}", "gw")]
    terms = []
    for a, b in ((0, 0), (0, 1), (1, 0), (1, 1)):  # nw, ne, sw, se
        v = c.tmp(f"{c.gather(x, [n, ch, yi[a], xi[b]], pad='0')}.astype(ct.float32)", "gv")
        terms.append(f"{v} * ({wx[b]} * {wy[a]})")
    return " + ".join(terms)


OPS = {
    "upsample_nearest1d": lambda c: nearest(c, 1), "upsample_nearest2d": lambda c: nearest(c, 2),
    "upsample_nearest3d": lambda c: nearest(c, 3), "_upsample_nearest_exact1d": lambda c: nearest(c, 1, True),
    "_upsample_nearest_exact2d": lambda c: nearest(c, 2, True),
    "_upsample_nearest_exact3d": lambda c: nearest(c, 3, True),
    "upsample_linear1d": lambda c: linear(c, 1), "upsample_bilinear2d": lambda c: linear(c, 2),
    "upsample_trilinear3d": lambda c: linear(c, 3), "upsample_bicubic2d": bicubic,
    "grid_sampler": grid_sample, "grid_sampler_2d": grid_sample,
}
