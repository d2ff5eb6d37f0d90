"""Emission rules of the unary math ops, dtype casts, fills and tril/triu.

Each `op_<name>(args)` returns `(expression, kind)` for the expression compiler (expr_emitter.EmitterBase.op).
Casts are emulated on float32 tiles: float16/bfloat16 round-trip through the narrow type, integer dtypes
truncate, bool compares with 0. tril/triu read the int32 index tiles `env[ROW_INDEX]` / `env[COL_INDEX]`.
Unsupported: casts to unknown dtypes or of scalars, bitwise_not on floats, tril/triu without index tiles.
"""

from __future__ import annotations

from .base import Unsupported
from .expr_args import FINFO_MAX, INT_DTYPES, LOW_FLOATS, float_literal, is_given
from .expr_emitter import COL_INDEX, ROW_INDEX, expanded, is_bool_var, on_self
from .expr_math import clamp_expr
from .expr_special import SpecialFunctions
from .indexing import is_ref


class UnaryOps(SpecialFunctions):
    op_abs = on_self("ct.abs({x})")
    op_neg = on_self("-{x}")
    op_positive = on_self("{x}")
    op_exp = on_self("ct.exp({x})")
    op_exp2 = on_self("ct.exp2({x})")
    op_expm1 = expanded("expm1")
    op_log = on_self("ct.log({x})")
    op_log2 = on_self("ct.log2({x})")
    op_log10 = on_self("ct.log({x}) * 0.4342944819032518")
    op_log1p = expanded("log1p")
    op_sqrt = on_self("ct.sqrt({x})")
    op_rsqrt = on_self("ct.rsqrt({x})")
    op_reciprocal = on_self("1.0 / {x}")
    op_square = on_self("{x} * {x}")
    op_sin = on_self("ct.sin({x})")
    op_cos = on_self("ct.cos({x})")
    op_tan = on_self("ct.tan({x})")
    op_sinh = on_self("ct.sinh({x})")
    op_cosh = on_self("ct.cosh({x})")
    op_atan = on_self("ct.atan2({x}, 1.0)")
    op_asin = on_self("ct.atan2({x}, ct.sqrt((1.0 - {x}) * (1.0 + {x})))")
    op_acos = on_self("ct.atan2(ct.sqrt((1.0 - {x}) * (1.0 + {x})), {x})")
    op_acosh = on_self("ct.log({x} + ct.sqrt(({x} - 1.0) * ({x} + 1.0)))")
    op_atanh = on_self("0.5 * ct.log((1.0 + {x}) / (1.0 - {x}))")
    op_erf = expanded("erf")
    op_erfc = expanded("erfc")
    op_erfinv = expanded("erfinv")
    op_lgamma = expanded("lgamma")
    op_digamma = op_special_digamma = op_special_psi = expanded("digamma")
    op_i0 = op_special_i0 = expanded("i0")
    op_special_erfcx = expanded("erfcx")
    op_special_ndtri = expanded("ndtri")
    op_sign = op_sgn = on_self("ct.where({x} > 0.0, 1.0, ct.where({x} < 0.0, -1.0, {x} * 0.0))")
    op_floor = on_self("ct.floor({x})")
    op_ceil = on_self("ct.ceil({x})")
    op_trunc = expanded("trunc")
    op_signbit = on_self("ct.bitcast({x}, ct.int32) < 0", "b")
    op_isnan = on_self("ct.isnan({x})", "b")
    op_isinf = on_self("ct.abs({x}) == math.inf", "b")
    op_isfinite = on_self("ct.abs({x}) < math.inf", "b")

    def op_asinh(self, a):
        x = self.f(a["self"])
        ax = self.temp(f"ct.abs({x})")
        mag = self.temp(f"ct.log({ax} + ct.sqrt({ax} * {ax} + 1.0))")
        return f"ct.where({x} < 0.0, -{mag}, {mag})", "f"

    def op_frac(self, a):
        x = self.f(a["self"])
        return f"{x} - {self.temp(self.trunc(x))}", "f"

    def op_round(self, a):
        x = self.f(a["self"])
        decimals = int(self.num(a.get("decimals", 0), 0.0) or 0)
        if decimals == 0:
            return self.round_half_even(x), "f"
        scaled = self.temp(f"{x} * {float_literal(10.0 ** decimals)}")
        return f"({self.round_half_even(scaled)}) * {float_literal(10.0 ** -decimals)}", "f"

    def op_logit(self, a):
        x = self.f(a["self"])
        eps = a.get("eps")
        if is_given(eps):
            e = self.num(eps)
            x = self.temp(clamp_expr(x, float_literal(e), float_literal(1.0 - e)))
        return f"ct.log({x} / (1.0 - {x}))", "f"

    def op_logical_not(self, a):
        return f"~{self.b(a['self'])}", "b"

    def op_bitwise_not(self, a):
        if self.rec.output_dtype == "bool":
            return f"~{self.b(a['self'])}", "b"
        if self.rec.output_dtype in INT_DTYPES:
            return f"(~{self.f(a['self'])}.astype(ct.int32)).astype(ct.float32)", "f"
        raise Unsupported(f"aten.bitwise_not on {self.rec.output_dtype}")

    def op_nan_to_num(self, a):
        x = self.f(a["self"])
        big = FINFO_MAX.get(self.rec.output_dtype, FINFO_MAX["float32"])
        nan = self.num(a.get("nan"), 0.0)
        pos = self.num(a.get("posinf"), big)
        neg = self.num(a.get("neginf"), -big)
        return (f"ct.where(ct.isnan({x}), {float_literal(nan)}, ct.where({x} == math.inf, {float_literal(pos)}, "
                f"ct.where({x} == -math.inf, {float_literal(neg)}, {x})))"), "f"

    # --- dtype casts ---------------------------------------------------------------------------------------
    def cast_to(self, x: str, dtype: str | None, kind: str) -> tuple[str, str]:
        """Emulate a dtype conversion on a float32/bool value; returns (expr, kind)."""
        if dtype is None or dtype in ("float32", "float64"):
            return (f"{x}.astype(ct.float32)" if kind == "b" else x), "f"
        if dtype == "bool":
            return (x if kind == "b" else f"({x} != 0.0)"), "b"
        if kind == "b":
            return f"{x}.astype(ct.float32)", "f"
        if dtype in LOW_FLOATS:
            return f"{x}.astype({LOW_FLOATS[dtype]}).astype(ct.float32)", "f"
        if dtype in INT_DTYPES:
            return self.trunc(x), "f"
        raise Unsupported(f"{self.what}: cast to {dtype}")

    def _cast(self, a, dtype):
        v = a["self"]
        if not is_ref(v):
            raise Unsupported(f"{self.what}: cast of a scalar")
        name = self.ref(v["ref"])
        return self.cast_to(name, dtype, "b" if is_bool_var(name) else "f")

    def op__to_copy(self, a):
        dt = a.get("dtype")
        return self._cast(a, dt["dtype"] if isinstance(dt, dict) else (self.rec.output_dtype or None))

    def op_to(self, a):
        return self._cast(a, self.rec.output_dtype or None)

    op_type_as = op_to

    # --- fills and triangles -------------------------------------------------------------------------------
    def op_fill(self, a):
        x = self.ref(a["self"]["ref"])
        v = a["value"]
        if is_ref(v):
            return f"ct.zeros({x}.shape, dtype=ct.float32) + {self.f(v)}", "f"
        return self.full(x, float_literal(self.num(v))), "f"

    def op_zero(self, a):
        return f"ct.zeros({self.ref(a['self']['ref'])}.shape, dtype=ct.float32)", "f"

    def _tri(self, a, lower):
        if ROW_INDEX not in self.env or COL_INDEX not in self.env:
            raise Unsupported(f"aten.{'tril' if lower else 'triu'}: needs the element's row/column index, "
                              "which this kernel does not provide")
        x, d = self.f(a["self"]), int(self.num(a.get("diagonal"), 0.0))
        rel = f"({self.env[COL_INDEX]} - {self.env[ROW_INDEX]})"
        cond = f"{rel} <= {d}" if lower else f"{rel} >= {d}"
        return f"ct.where({cond}, {x}, 0.0)", "f"

    def op_tril(self, a):
        return self._tri(a, True)

    def op_triu(self, a):
        return self._tri(a, False)
