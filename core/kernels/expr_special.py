"""Special functions for the expression compiler, in float32 from cuTile's elementary functions.

- lgamma: the argument shifted to z >= 8 (lgamma(z) = lgamma(z + 8) - log(z (z + 1) ... (z + 7))), Stirling's
  series there; reflection for x < 0.5 (log(pi / |sin(pi x)|) - lgamma(1 - x), sin(pi x) from x - round(x) so
  large |x| keep their fraction); +inf at the poles (non-positive integers) and at +-inf, as PyTorch.
- digamma: the same shift (psi(z) = psi(z + 8) - sum 1 / (z + k)) and the asymptotic series; reflection psi(x) =
  psi(1 - x) - pi / tan(pi x); -inf at +0 (+inf at -0), NaN at negative integers and -inf, as PyTorch.
- i0 (special.i0): Abramowitz & Stegun 9.8.1 / 9.8.2 (relative error < 2e-7), the large-|x| branch as
  exp(|x|) / sqrt(|x|) * P(3.75 / |x|).
- erfcx (special.erfcx): exp(x^2) erfc(x) from the erfc fit of expr_math without forming exp(x^2) for x >= 0
  (t exp(Q(t)): no overflow at large x); 2 exp(x^2) - erfcx(-x) below 0.
- ndtri (special.ndtri): sqrt(2) erfinv(2p - 1) with Giles' fit, its w = -log((1 - x)(1 + x)) taken as
  -log(4 p (1 - p)) so that small p keep their precision; below 2^-24 (the fit's end) a rational start (A&S
  26.2.23) refined by two Newton steps on log Phi, written with erfcx so nothing underflows.
Each method returns an expression after emitting its temporaries (the expr_math convention).
"""

from __future__ import annotations

import math

from .expr_args import float_literal
from .expr_math import ERFC_Q, ERFINV_CENTRAL, ERFINV_TAIL, MathExpansions, horner

SHIFT = 8  # arguments below this are shifted up before the asymptotic series
# Stirling: lgamma(z) = (z - 1/2) log z - z + log(2 pi) / 2 + sum B_2k / (2k (2k - 1) z^(2k - 1))
STIRLING = [1 / 12, -1 / 360, 1 / 1260, -1 / 1680]
# psi(z) = log z - 1 / (2z) - sum B_2k / (2k z^2k)
DIGAMMA_ASYM = [-1 / 12, 1 / 120, -1 / 252, 1 / 240, -1 / 132]
I0_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813]
I0_LARGE = [0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537, -0.01647633,
            0.00392377]
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class SpecialFunctions(MathExpansions):
    def _sin_pi_abs(self, x: str) -> str:
        """|sin(pi x)| from the fraction r = x - round(x) in [-1/2, 1/2] (exact for any float32 x)."""
        r = self.temp(f"{x} - ct.floor({x} + 0.5)")
        return self.temp(f"ct.abs(ct.sin({r} * {math.pi!r}))")

    def _shifted(self, x: str) -> tuple[str, str]:
        """(z, zs): z = x for x >= 1/2 else 1 - x (the reflected argument, >= 1/2); zs = z shifted to >= SHIFT
        where z < SHIFT (z itself elsewhere)."""
        z = self.temp(f"ct.where({x} < 0.5, 1.0 - {x}, {x})")
        small = self.temp(f"{z} < {float(SHIFT)!r}")
        zs = self.temp(f"ct.where({small}, {z} + {float(SHIFT)!r}, {z})")
        return z, zs

    def lgamma(self, x: str) -> str:
        z, zs = self._shifted(x)
        inv = self.temp(f"1.0 / {zs}")
        inv2 = self.temp(f"{inv} * {inv}")
        series = self.temp(f"({zs} - 0.5) * ct.log({zs}) - {zs} + {HALF_LOG_2PI!r} + {inv} * "
                           f"({horner(STIRLING, inv2)})")
        # the shift's product z (z + 1) ... (z + 7), 1 where no shift is taken (z < 8 keeps it finite)
        zc = self.temp(f"ct.minimum({z}, {float(SHIFT)!r})")
        prod = " * ".join(f"({zc} + {float(k)!r})" if k else zc for k in range(SHIFT))
        lg = self.temp(f"ct.where({z} < {float(SHIFT)!r}, {series} - ct.log({prod}), {series})")
        s = self._sin_pi_abs(x)
        refl = f"ct.log({math.pi!r} / {s}) - {lg}"
        # poles (s == 0 at non-positive integers) and +-inf: +inf; NaN propagates through the series
        return (f"ct.where(ct.abs({x}) == math.inf, math.inf, ct.where({x} < 0.5, ct.where({s} == 0.0, math.inf, "
                f"{refl}), {lg}))")

    def digamma(self, x: str) -> str:
        z, zs = self._shifted(x)
        inv = self.temp(f"1.0 / {zs}")
        inv2 = self.temp(f"{inv} * {inv}")
        series = self.temp(f"ct.log({zs}) - 0.5 * {inv} + {inv2} * ({horner(DIGAMMA_ASYM, inv2)})")
        zc = self.temp(f"ct.minimum({z}, {float(SHIFT)!r})")
        recips = " + ".join(f"1.0 / ({zc} + {float(k)!r})" if k else f"1.0 / {zc}" for k in range(SHIFT))
        psi = self.temp(f"ct.where({z} < {float(SHIFT)!r}, {series} - ({recips}), {series})")
        r = self.temp(f"{x} - ct.floor({x} + 0.5)")
        refl = f"{psi} - {math.pi!r} / ct.tan({r} * {math.pi!r})"
        # at zero: copysign(inf, -x), as PyTorch (-0.0 gives +inf); NaN at the negative integers
        pole = f"ct.where({x} == 0.0, ct.where(ct.bitcast({x}, ct.int32) < 0, math.inf, -math.inf), math.nan)"
        return (f"ct.where({x} == math.inf, math.inf, ct.where({x} < 0.5, ct.where({r} == 0.0, {pole}, {refl}), "
                f"{psi}))")

    def i0(self, x: str) -> str:
        ax = self.temp(f"ct.abs({x})")
        t2 = self.temp(f"({ax} * {float_literal(1 / 3.75)}) * ({ax} * {float_literal(1 / 3.75)})")
        small = horner(I0_SMALL, t2)
        u = self.temp(f"{float_literal(3.75)} / ct.maximum({ax}, {float_literal(3.75)})")
        large = f"ct.exp({ax}) * ct.rsqrt(ct.maximum({ax}, {float_literal(3.75)})) * ({horner(I0_LARGE, u)})"
        return f"ct.where({ax} < 3.75, {small}, {large})"  # +-inf: NaN (inf * 0), as PyTorch

    def erfcx(self, x: str) -> str:
        ax = self.temp(f"ct.abs({x})")
        t = self.temp(f"1.0 / (1.0 + 0.5 * {ax})")
        pos = self.temp(f"{t} * ct.exp({horner(ERFC_Q, t)})")  # erfc(|x|) exp(x^2), exactly the fit's form
        return f"ct.where({x} < 0.0, 2.0 * ct.exp({x} * {x}) - {pos}, {pos})"

    def _erfcx_pos(self, z: str) -> str:
        """erfcx(z) for z >= 0: the erfc fit's t exp(Q(t))."""
        t = self.temp(f"1.0 / (1.0 + 0.5 * {z})")
        return self.temp(f"{t} * ct.exp({horner(ERFC_Q, t)})")

    def ndtri(self, p: str) -> str:
        x = self.temp(f"2.0 * {p} - 1.0")
        w = self.temp(f"-ct.log(4.0 * {p} * (1.0 - {p}))")
        wc = self.temp(f"{w} - 2.5")
        wt = self.temp(f"ct.sqrt({w}) - 3.0")
        core = self.temp(f"{math.sqrt(2.0)!r} * {x} * ct.where({w} < 5.0, {horner(ERFINV_CENTRAL, wc)}, "
                         f"{horner(ERFINV_TAIL, wt)})")
        # Giles' fit covers 1 - |2p - 1| >= 2^-24 (w < 16); deeper tails: A&S 26.2.23 for the start, then Newton
        # steps on log Phi(-|x|) = log(erfcx(z) / 2) - z^2, z = |x| / sqrt(2), whose step is (log Phi - log q) *
        # Phi / phi = ... * sqrt(pi / 2) erfcx(z): no underflow down to the smallest normal q
        q = self.temp(f"ct.minimum({p}, 1.0 - {p})")
        lq = self.temp(f"ct.log(ct.maximum({q}, 1e-38))")
        t = self.temp(f"ct.sqrt(-2.0 * {lq})")
        xt = self.temp(f"{t} - (2.515517 + {t} * (0.802853 + {t} * 0.010328)) / "
                       f"(1.0 + {t} * (1.432788 + {t} * (0.189269 + {t} * 0.001308)))")
        for _ in range(2):
            z = self.temp(f"{xt} * {math.sqrt(0.5)!r}")
            ex = self._erfcx_pos(z)
            xt = self.temp(f"{xt} + (ct.log(0.5 * {ex}) - {z} * {z} - {lq}) * {math.sqrt(math.pi / 2)!r} * {ex}")
        tail = f"ct.where({p} < 0.5, -{xt}, {xt})"
        edge = f"ct.where({p} == 0.0, -math.inf, ct.where({p} == 1.0, math.inf, math.nan))"
        return (f"ct.where(({p} > 0.0) & ({p} < 1.0), ct.where({w} < 16.0, {core}, {tail}), {edge})")
