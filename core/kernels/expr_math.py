"""Math functions cuTile lacks, built from what it has (the expression compiler's building blocks).

erf/erfc: a Taylor series near 0 and a Chebyshev erfc fit elsewhere; erfinv: Giles' single-precision fit;
log1p (compensated) and expm1 (Taylor near 0); trunc and round half to even from floor/ceil; softplus; integer
powers by squaring; clamps. Each method returns an expression string, after emitting any temporaries it needs
through `temp` (so the caller's line order is: temporaries, then the op's own assignment).
"""

from __future__ import annotations

import math
from typing import Sequence

from .expr_args import float_literal
from .expr_emitter import EmitterBase

# erf(z) = z * P(z^2) for |z| < 0.5 (Taylor series, relative error < 2e-7 in float32).
ERF_SMALL = [2.0 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(7)]
# erfc(z) = t * exp(-z^2 + Q(t)), t = 1 / (1 + z / 2), z >= 0: a Chebyshev fit with relative error ~1e-7
# (float64); about 1e-5 in float32 at z ~ 9 where erfc underflows anyway.
ERFC_Q = [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
          -0.82215223, 0.17087277]
# erfinv(x) = x * P(w), w = -log(1 - x^2): Giles' single-precision fit, two branches split at w = 5.
ERFINV_CENTRAL = [1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                  -3.5233877e-06, 3.43273939e-07, 2.81022636e-08]
ERFINV_TAIL = [2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
               0.00134934322, 0.000100950558, -0.000200214257]
# How the transcendental building blocks are emitted (bench/variants_memory.py times the alternatives):
#   approx_recip: 1/d as ct.truediv(..., rounding_mode=APPROX, flush_to_zero=True) (one MUFU rcp, <= 1 ulp) instead
#                 of the IEEE division sequence, where d is known to be >= 1 or +inf (sigmoid, silu, the erfc fit);
#   exp2:         exp(x) as ct.exp2(x * log2(e), flush_to_zero=True) (one MUFU ex2 and a multiply) in those same
#                 activations; relative error ~|x| * 2^-24 from rounding the product, i.e. < 1e-5 wherever the result
#                 is a normal float32;
#   erfc_folded:  with exp2, the erfc fit's argument scale, log2(e) and any output scale are folded into its
#                 constants at generation time (gelu: 0.5 * erfc(|x| / sqrt(2)) costs one multiply less per constant
#                 folded); rounding moves from the product into the constants, same error bound as exp2's.
#   scalar_div_recip: x / c for a Python-number divisor c as x * r, r = float32(1) / float32(c), which is what
#                 PyTorch's CUDA true division does for a CPU scalar divisor (BinaryDivTrueKernel.cu: "compute a *
#                 reciprocal(b)"), so the result matches eager bit for bit instead of paying the IEEE division
#                 sequence per element (attention's `scores / math.sqrt(d)`: one multiply per score)
MATH_TUNING: dict[str, bool] = {"approx_recip": True, "exp2": True, "erfc_folded": True, "scalar_div_recip": True}
LOG2E = 1.4426950408889634

# expm1(x) for |x| < 0.5: Taylor series to x^9 (error < 1e-9).
EXPM1_SMALL = [1.0 / math.factorial(n) for n in range(1, 10)]


def clamp_expr(x: str, lo: str | None, hi: str | None) -> str:
    """min(max(x, lo), hi), either bound optional (operands already rendered)."""
    expr = x
    if lo is not None:
        expr = f"ct.maximum({expr}, {lo})"
    if hi is not None:
        expr = f"ct.minimum({expr}, {hi})"
    return expr


def hard_sigmoid(x: str) -> str:
    return f"{clamp_expr(f'{x} + 3.0', '0.0', '6.0')} * {float_literal(1 / 6)}"


def horner(coeffs: Sequence[float], var: str) -> str:
    """c0 + v*(c1 + v*(c2 + ...)) as one expression."""
    expr = float_literal(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        expr = f"{float_literal(c)} + {var} * ({expr})"
    return expr


def float32_recip(c: float) -> float:
    """float32(1) / float32(c), IEEE-rounded in float32 (as PyTorch computes a CPU scalar divisor's reciprocal)."""
    import torch

    return float(torch.tensor(1.0, dtype=torch.float32) / torch.tensor(float(c), dtype=torch.float32))


def fast_recip(d: str, approx: bool | None = None) -> str:
    """1 / d for d >= 1 or +inf: one MUFU rcp when `approx` (default: MATH_TUNING["approx_recip"]), else the IEEE
    division."""
    if MATH_TUNING["approx_recip"] if approx is None else approx:
        return f"ct.truediv(1.0, {d}, rounding_mode=ct.RoundingMode.APPROX, flush_to_zero=True)"
    return f"(1.0 / ({d}))"


def fast_exp(x: str, exp2: bool | None = None) -> str:
    """exp(x) where results below the normal float32 range may flush to zero: ct.exp2 of x * log2(e) when `exp2`
    (default: MATH_TUNING["exp2"]), else ct.exp."""
    if MATH_TUNING["exp2"] if exp2 is None else exp2:
        return f"ct.exp2(({x}) * {LOG2E!r}, flush_to_zero=True)"
    return f"ct.exp({x})"


class MathExpansions(EmitterBase):
    def sigmoid(self, x: str) -> str:
        """1 / (1 + exp(-x)): exp overflows to +inf for x < -88 and the reciprocal gives the exact 0."""
        return fast_recip(f"1.0 + {fast_exp(f'-{x}')}")

    def erfc_pos(self, az: str, scale: float = 1.0, out_scale: float = 1.0) -> str:
        """out_scale * erfc(scale * az) for az >= 0 (a temp). Folded (MATH_TUNING): t = 1 / (1 + scale/2 * az),
        out_scale * t * 2^(Q'(t) - log2(e) scale^2 az^2) with Q' = log2(e) Q + log2(out_scale): one FMA per
        folded constant fewer than scaling az, multiplying by log2(e) and scaling the result at run time."""
        if MATH_TUNING["exp2"] and MATH_TUNING["erfc_folded"]:
            t = self.temp(fast_recip(f"1.0 + {float_literal(0.5 * scale)} * {az}"))
            q = horner([ERFC_Q[0] * LOG2E + math.log2(out_scale)] + [c * LOG2E for c in ERFC_Q[1:]], t)
            return self.temp(f"{t} * ct.exp2({q} - {az} * ({az} * {float_literal(LOG2E * scale * scale)}), "
                             f"flush_to_zero=True)")
        if scale != 1.0:
            az = self.temp(f"{az} * {float_literal(scale)}")
        t = self.temp(fast_recip(f"1.0 + 0.5 * {az}"))
        q = horner(ERFC_Q, t)
        ec = f"{t} * {fast_exp(f'{q} - {az} * {az}')}"
        return self.temp(ec if out_scale == 1.0 else f"({ec}) * {float_literal(out_scale)}")

    def erf_parts(self, z: str) -> tuple[str, str, str]:
        """(|z|, erfc(|z|), erf(z) by the small-|z| series) as temps: erf and erfc pick between them."""
        az = self.temp(f"ct.abs({z})")
        ec = self.erfc_pos(az)
        z2 = self.temp(f"{z} * {z}")
        return az, ec, self.temp(f"{z} * ({horner(ERF_SMALL, z2)})")

    def erf(self, z: str) -> str:
        az, ec, small = self.erf_parts(z)
        return f"ct.where({az} < 0.5, {small}, ct.where({z} < 0.0, {ec} - 1.0, 1.0 - {ec}))"

    def erfc(self, z: str) -> str:
        az, ec, small = self.erf_parts(z)
        return f"ct.where({az} < 0.5, 1.0 - {small}, ct.where({z} < 0.0, 2.0 - {ec}, {ec}))"

    def erfinv(self, x: str) -> str:
        w = self.temp(f"-ct.log((1.0 - {x}) * (1.0 + {x}))")
        wc = self.temp(f"{w} - 2.5")
        wt = self.temp(f"ct.sqrt({w}) - 3.0")
        return f"{x} * ct.where({w} < 5.0, {horner(ERFINV_CENTRAL, wc)}, {horner(ERFINV_TAIL, wt)})"

    def log1p(self, x: str) -> str:
        # log(u) * x / (u - 1) with u = 1 + x cancels the rounding error of u (exact to a few ulp).
        u = self.temp(f"1.0 + {x}")
        return f"ct.where({u} == 1.0, {x}, ct.log({u}) * ({x} / ({u} - 1.0)))"

    def expm1(self, x: str) -> str:
        p = horner(EXPM1_SMALL, x)
        return f"ct.where(ct.abs({x}) < 0.5, {x} * ({p}), ct.exp({x}) - 1.0)"

    def trunc(self, x: str) -> str:
        return f"ct.where({x} < 0.0, ct.ceil({x}), ct.floor({x}))"

    def round_half_even(self, x: str) -> str:
        fl = self.temp(f"ct.floor({x})")
        d = self.temp(f"{x} - {fl}")
        odd = f"({fl} * 0.5 != ct.floor({fl} * 0.5))"
        return f"ct.where(({d} > 0.5) | (({d} == 0.5) & {odd}), {fl} + 1.0, {fl})"

    def softplus(self, x: str, beta: float, threshold: float) -> str:
        bx = x if beta == 1.0 else self.temp(f"{x} * {float_literal(beta)}")
        e = self.temp(f"ct.exp({bx})")
        lp = self.log1p(e)
        if beta != 1.0:
            lp = f"({lp}) * {float_literal(1.0 / beta)}"
        return f"ct.where({bx} > {float_literal(threshold)}, {x}, {lp})"

    def int_power(self, x: str, n: int) -> str:
        """x**n by squaring (n >= 1), with temps for the squares."""
        result, square = None, x
        while True:
            if n & 1:
                result = square if result is None else self.temp(f"{result} * {square}")
            n >>= 1
            if not n:
                return result
            square = self.temp(f"{square} * {square}")
