"""Emission rules of the activation functions (relu family, elu family, gelu, silu, softplus, shrinks, prelu).

Each `op_<name>(args)` returns `(expression, kind)` for the expression compiler (expr_emitter.EmitterBase.op).
Unsupported: rrelu in training mode (random slopes), gelu approximations other than 'none'/'tanh', prelu with
a per-channel weight on >2-D outputs (it broadcasts along dim 1, not right-aligned).
"""

from __future__ import annotations

import math

from .base import Unsupported
from .expr_args import float_literal
from .expr_emitter import on_self
from .expr_math import MathExpansions, clamp_expr, hard_sigmoid
from .indexing import is_ref

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _slope_where(x: str, negative: str, cmp: str = ">") -> str:
    """x where x passes `cmp 0`, else x * negative (the leaky relu shape)."""
    return f"ct.where({x} {cmp} 0.0, {x}, {x} * {negative})"


class ActivationOps(MathExpansions):
    op_relu = on_self("ct.maximum({x}, 0.0)")

    def op_relu6(self, a):
        return clamp_expr(self.f(a["self"]), "0.0", "6.0"), "f"

    def op_hardtanh(self, a):
        lo, hi = self.num(a.get("min_val"), -1.0), self.num(a.get("max_val"), 1.0)
        return clamp_expr(self.f(a["self"]), float_literal(lo), float_literal(hi)), "f"

    def op_leaky_relu(self, a):
        x, s = self.f(a["self"]), self.num(a.get("negative_slope"), 0.01)
        return _slope_where(x, float_literal(s)), "f"

    def op_rrelu(self, a):
        if a.get("training") is True:
            raise Unsupported("aten.rrelu: training mode draws random slopes")
        lo, hi = self.num(a.get("lower"), 0.125), self.num(a.get("upper"), 1.0 / 3.0)
        return _slope_where(self.f(a["self"]), float_literal((lo + hi) / 2.0), ">="), "f"

    def op_prelu(self, a):
        x, w = self.f(a["self"]), a["weight"]
        if is_ref(w):
            wshape = self.shapes.get(w["ref"])
            numel = math.prod(wshape) if wshape is not None else None
            if numel != 1 and len(self.rec.output) > 2:
                raise Unsupported("aten.prelu: a per-channel weight broadcasts along dim 1, not right-aligned")
        return _slope_where(x, self.f(w)), "f"

    def _elu(self, x, alpha, scale, input_scale):
        xs = x if input_scale == 1.0 else f"{x} * {float_literal(input_scale)}"
        neg = f"(ct.exp({xs}) - 1.0) * {float_literal(alpha * scale)}"
        pos = x if scale == 1.0 else f"{x} * {float_literal(scale)}"
        return f"ct.where({x} > 0.0, {pos}, {neg})", "f"

    def op_elu(self, a):
        return self._elu(self.f(a["self"]), self.num(a.get("alpha"), 1.0), self.num(a.get("scale"), 1.0),
                         self.num(a.get("input_scale"), 1.0))

    def op_selu(self, a):
        return self._elu(self.f(a["self"]), SELU_ALPHA, SELU_SCALE, 1.0)

    def op_celu(self, a):
        alpha = self.num(a.get("alpha"), 1.0)
        return self._elu(self.f(a["self"]), alpha, 1.0, 1.0 / alpha)

    def op_gelu(self, a):
        x = self.f(a["self"])
        approx = a.get("approximate") or "none"
        if approx == "tanh":
            inner = self.temp(f"0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x})")
            return f"0.5 * {x} * (1.0 + ct.tanh({inner}))", "f"
        if approx != "none":
            raise Unsupported(f"aten.gelu: approximate={approx!r}")
        # 1 + erf(z) = erfc(-z): erfc(|z|) for z < 0 (no cancellation of 1 - 1 on the negative side), 2 - erfc(z)
        # otherwise. The erfc fit has ~1e-7 relative error on all of z >= 0 and 1 + erf(z) >= 1 for z >= 0, so,
        # unlike erf itself, no small-|z| series branch is needed: one exp, one reciprocal and a degree-9 poly.
        # h = erfc(|x| / sqrt(2)) / 2 with both scales folded into the fit's constants: x * (h or 1 - h).
        h = self.erfc_pos(self.temp(f"ct.abs({x})"), scale=0.7071067811865476, out_scale=0.5)
        return f"{x} * ct.where({x} < 0.0, {h}, 1.0 - {h})", "f"

    def op_silu(self, a):
        x = self.f(a["self"])
        return f"{x} * {self.sigmoid(x)}", "f"

    def op_sigmoid(self, a):
        return self.sigmoid(self.f(a["self"])), "f"
    op_tanh = on_self("ct.tanh({x})")

    def op_softplus(self, a):
        x = self.f(a["self"])
        return self.softplus(x, self.num(a.get("beta"), 1.0), self.num(a.get("threshold"), 20.0)), "f"

    def op_mish(self, a):
        x = self.f(a["self"])
        sp = self.temp(self.softplus(x, 1.0, 20.0))
        return f"{x} * ct.tanh({sp})", "f"

    def op_hardswish(self, a):
        x = self.f(a["self"])
        return f"{x} * {hard_sigmoid(x)}", "f"

    def op_hardsigmoid(self, a):
        return hard_sigmoid(self.f(a["self"])), "f"

    def op_log_sigmoid(self, a):
        x = self.f(a["self"])
        e = self.temp(f"ct.exp(-ct.abs({x}))")
        return f"ct.minimum({x}, 0.0) - ({self.log1p(e)})", "f"

    def op_softshrink(self, a):
        x, lam = self.f(a["self"]), self.num(a.get("lambd"), 0.5)
        l_ = float_literal(lam)
        return f"ct.where({x} > {l_}, {x} - {l_}, ct.where({x} < -{l_}, {x} + {l_}, 0.0))", "f"

    def op_hardshrink(self, a):
        x, lam = self.f(a["self"]), self.num(a.get("lambd"), 0.5)
        return f"ct.where(ct.abs({x}) > {float_literal(lam)}, {x}, 0.0)", "f"

    def op_threshold(self, a):
        x = self.f(a["self"])
        th, val = self.num(a.get("threshold")), self.num(a.get("value"))
        return f"ct.where({x} > {float_literal(th)}, {x}, {float_literal(val)})", "f"
