"""Elementwise ops → cuTile tile expressions (shared by every generator that fuses prologues/epilogues).

Two entry points:

`emit_elementwise(ops, env, load_side, lines, indent)` appends one assignment per op (plus a few temporaries for
the longer ones: erf, gelu, log1p, round) to `lines` and returns `env` extended with each op's node → tile
variable. All arithmetic is float32; comparisons and logical ops give bool tiles. Variables this module creates are
named `ev_<node>` (float32) or `eb_<node>` (bool), so a later call can tell their kind from the name; any other
variable (the caller's accumulator, side loads) is taken to be a float32 tile. The caller casts at store
(`var.astype(out.dtype)` works for both kinds).

`broadcast_load_lines(...)` emits the load of a side input (bias, residual, mask, per-row scale) for one output
tile, broadcast to the tile shape and cast to float32: the helper an anchor generator's `load_side` callback uses.

Ops needing the element's position (tril/triu) read int32 index tiles, already broadcast to the output tile shape,
from `env[ROW_INDEX]` / `env[COL_INDEX]` (the last two output dims); without them they raise Unsupported.
Scalars are inlined as float literals; a spec-level scalar input is whatever name `load_side` returns for it.

Every elementwise op of the catalog translates. Functions cuTile lacks are built from what it has: erf/erfc (Taylor
series near 0, a Chebyshev erfc fit elsewhere; exact GELU uses erfc on the negative side to avoid cancellation),
erfinv (Giles' fit), log1p/expm1 (compensated / Taylor), round (half to even from floor), trunc, sign, asin/acos/
atan (atan2), asinh/acosh/atanh. Unsupported: rrelu in training mode, prelu with a per-channel weight on >2-D
outputs (not right-aligned broadcasting), tril/triu without index tiles, bitwise ops on floats, casts to
unknown dtypes, gelu approximations other than 'none'/'tanh'.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Sequence

from ..catalog import base_op
from ..specs import OpRecord
from .base import Unsupported

ROW_INDEX = "__row_index__"
COL_INDEX = "__col_index__"

# Largest finite value per dtype (nan_to_num's default posinf/neginf).
_FINFO_MAX = {"float32": 3.4028234663852886e38, "float16": 65504.0, "bfloat16": 3.3895313892515355e38,
              "float64": 3.4028234663852886e38}
_INT_DTYPES = {"int64", "int32", "int16", "int8", "uint8"}
_LOW_FLOATS = {"float16": "ct.float16", "bfloat16": "ct.bfloat16"}

# erf(z) = z * P(z^2) for |z| < 0.5 (Taylor series, relative error < 2e-7 in float32).
_ERF_SMALL = [2.0 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(7)]
# erfc(z) = t * exp(-z^2 + Q(t)), t = 1 / (1 + z / 2), z >= 0: a Chebyshev fit with relative error ~1e-7
# (float64); about 1e-5 in float32 at z ~ 9 where erfc underflows anyway.
_ERFC_Q = [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
           -0.82215223, 0.17087277]
# erfinv(x) = x * P(w), w = -log(1 - x^2): Giles' single-precision fit, two branches split at w = 5.
_ERFINV_CENTRAL = [1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                   -3.5233877e-06, 3.43273939e-07, 2.81022636e-08]
_ERFINV_TAIL = [2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
                0.00134934322, 0.000100950558, -0.000200214257]
# expm1(x) for |x| < 0.5: Taylor series to x^9 (error < 1e-9).
_EXPM1_SMALL = [1.0 / math.factorial(n) for n in range(1, 10)]

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _schema_args(target: str) -> list[Any] | None:
    """The torch schema arguments of an ATen target like "aten.add.Tensor" (None when unknown)."""
    try:
        import torch

        _, name, overload = target.split(".")
        return list(getattr(getattr(torch.ops.aten, name), overload)._schema.arguments)
    except (ValueError, AttributeError, RuntimeError, ImportError):
        return None


_MISSING = object()


def bind_args(rec: OpRecord) -> dict[str, Any]:
    """The op's arguments by schema name, defaults filled in (encoded values: {"ref":..}, literals, ...)."""
    schema = _schema_args(rec.target)
    out: dict[str, Any] = {}
    if schema is None:
        # Unknown overload: positional args in order under generic names, then kwargs, then attrs.
        out.update(rec.attrs)
        for i, a in enumerate(rec.args):
            out[f"arg{i}"] = a
        out.update(rec.kwargs)
        if rec.args:
            out.setdefault("self", rec.args[0])
        return out
    positional = [a for a in schema if not a.kwarg_only]
    for a, v in zip(positional, rec.args):
        out[a.name] = v
    out.update(rec.kwargs)
    for a in schema:
        if a.name not in out:
            out[a.name] = a.default_value if a.has_default_value() else rec.attrs.get(a.name, _MISSING)
    return out


def _is_ref(v: Any) -> bool:
    return isinstance(v, dict) and "ref" in v


def scalar_value(v: Any) -> float | bool | None:
    """A Python number for an encoded scalar literal; None for None. Raises Unsupported on anything else."""
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, dict) and "float" in v:
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v["float"]]
    raise Unsupported(f"scalar argument {v!r}")


def float_literal(x: float | int | bool) -> str:
    """A float literal for generated code (`math` is imported in generated modules)."""
    x = float(x)
    if math.isnan(x):
        return "math.nan"
    if math.isinf(x):
        return "math.inf" if x > 0 else "-math.inf"
    text = repr(x)
    return f"({text})" if x < 0 else text


def _ident(node: str) -> str:
    return re.sub(r"\W", "_", node)


def is_bool_var(name: str) -> bool:
    return name.startswith("eb_")


class _Emitter:
    def __init__(self, env: dict[str, str], load_side: Callable[[str], str], lines: list[str], indent: str,
                 shapes: dict[str, Sequence[int]] | None):
        self.env = env
        self.load_side = load_side
        self.lines = lines
        self.indent = indent
        self.shapes = shapes or {}
        self.tmp = 0
        self.rec: OpRecord | None = None

    # --- operands ------------------------------------------------------------------------------------------
    def ref(self, value: str) -> str:
        if value not in self.env:
            self.env[value] = self.load_side(value)
        return self.env[value]

    def f(self, v: Any) -> str:
        """A float32 operand: a tile variable or an inlined literal."""
        if _is_ref(v):
            name = self.ref(v["ref"])
            return f"{name}.astype(ct.float32)" if is_bool_var(name) else name
        s = scalar_value(v)
        if s is None:
            raise Unsupported(f"{self.what}: missing operand")
        return float_literal(s)

    def b(self, v: Any) -> str:
        """A bool operand."""
        if _is_ref(v):
            name = self.ref(v["ref"])
            return name if is_bool_var(name) else f"({name} != 0.0)"
        s = scalar_value(v)
        return "True" if s else "False"

    def is_scalar(self, v: Any) -> bool:
        return not _is_ref(v)

    def num(self, v: Any, default: float | None = None) -> float:
        s = scalar_value(v) if v is not _MISSING else None
        if s is None:
            if default is None:
                raise Unsupported(f"{self.what}: expected a scalar argument, got {v!r}")
            return default
        return float(s)

    @property
    def what(self) -> str:
        return self.rec.target if self.rec is not None else "elementwise op"

    # --- emission ------------------------------------------------------------------------------------------
    def temp(self, expr: str) -> str:
        self.tmp += 1
        name = f"ev_{_ident(self.rec.node)}_t{self.tmp}"
        self.lines.append(f"{self.indent}{name} = {expr}")
        return name

    def result(self, expr: str, kind: str = "f") -> str:
        name = f"{'eb' if kind == 'b' else 'ev'}_{_ident(self.rec.node)}"
        self.lines.append(f"{self.indent}{name} = {expr}")
        return name

    def full(self, like: str, value: str) -> str:
        return f"ct.full({like}.shape, {value}, dtype=ct.float32)"

    # --- math building blocks (each returns an expression or a temp name) ------------------------------------
    def horner(self, coeffs: Sequence[float], var: str) -> str:
        """c0 + v*(c1 + v*(c2 + ...)) as one expression."""
        expr = float_literal(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            expr = f"{float_literal(c)} + {var} * ({expr})"
        return expr

    def erfc_pos(self, az: str) -> str:
        """erfc(az) for az >= 0 (a temp)."""
        t = self.temp(f"1.0 / (1.0 + 0.5 * {az})")
        q = self.horner(_ERFC_Q, t)
        return self.temp(f"{t} * ct.exp({q} - {az} * {az})")

    def erf_small(self, z: str) -> str:
        z2 = self.temp(f"{z} * {z}")
        return self.temp(f"{z} * ({self.horner(_ERF_SMALL, z2)})")

    def erf(self, z: str) -> str:
        az = self.temp(f"ct.abs({z})")
        ec = self.erfc_pos(az)
        small = self.erf_small(z)
        return f"ct.where({az} < 0.5, {small}, ct.where({z} < 0.0, {ec} - 1.0, 1.0 - {ec}))"

    def erfc(self, z: str) -> str:
        az = self.temp(f"ct.abs({z})")
        ec = self.erfc_pos(az)
        small = self.erf_small(z)
        return f"ct.where({az} < 0.5, 1.0 - {small}, ct.where({z} < 0.0, 2.0 - {ec}, {ec}))"

    def log1p(self, x: str) -> str:
        # log(u) * x / (u - 1) with u = 1 + x cancels the rounding error of u (exact to a few ulp).
        u = self.temp(f"1.0 + {x}")
        return f"ct.where({u} == 1.0, {x}, ct.log({u}) * ({x} / ({u} - 1.0)))"

    def expm1(self, x: str) -> str:
        p = self.horner(_EXPM1_SMALL, x)
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

    def cast_to(self, x: str, dtype: str | None, kind: str) -> tuple[str, str]:
        """Emulate a dtype conversion on a float32/bool value; returns (expr, kind)."""
        if dtype is None or dtype in ("float32", "float64"):
            return (f"{x}.astype(ct.float32)" if kind == "b" else x), "f"
        if dtype == "bool":
            return (x if kind == "b" else f"({x} != 0.0)"), "b"
        if kind == "b":
            return f"{x}.astype(ct.float32)", "f"
        if dtype in _LOW_FLOATS:
            return f"{x}.astype({_LOW_FLOATS[dtype]}).astype(ct.float32)", "f"
        if dtype in _INT_DTYPES:
            return self.trunc(x), "f"
        raise Unsupported(f"{self.what}: cast to {dtype}")

    # --- one op --------------------------------------------------------------------------------------------
    def op(self, rec: OpRecord) -> None:
        self.rec = rec
        self.tmp = 0
        name = base_op(rec.op)
        handler = getattr(self, f"op_{name}", None)
        if handler is None:
            raise Unsupported(f"aten.{name}: no cuTile translation for this elementwise op")
        a = bind_args(rec)
        expr, kind = handler(a)
        out_dtype = rec.output_dtype
        if out_dtype == "bool" and kind == "f":
            expr, kind = f"({expr}) != 0.0", "b"
        self.env[rec.node] = self.result(expr, kind)

    # unary activations
    def op_relu(self, a):
        return f"ct.maximum({self.f(a['self'])}, 0.0)", "f"

    def op_relu6(self, a):
        return f"ct.minimum(ct.maximum({self.f(a['self'])}, 0.0), 6.0)", "f"

    def op_hardtanh(self, a):
        lo, hi = self.num(a.get("min_val"), -1.0), self.num(a.get("max_val"), 1.0)
        return f"ct.minimum(ct.maximum({self.f(a['self'])}, {float_literal(lo)}), {float_literal(hi)})", "f"

    def op_leaky_relu(self, a):
        x, s = self.f(a["self"]), self.num(a.get("negative_slope"), 0.01)
        return f"ct.where({x} > 0.0, {x}, {x} * {float_literal(s)})", "f"

    def op_rrelu(self, a):
        if a.get("training") is True:
            raise Unsupported("aten.rrelu: training mode draws random slopes")
        lo, hi = self.num(a.get("lower"), 0.125), self.num(a.get("upper"), 1.0 / 3.0)
        x = self.f(a["self"])
        return f"ct.where({x} >= 0.0, {x}, {x} * {float_literal((lo + hi) / 2.0)})", "f"

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
        az = self.temp(f"ct.abs({x}) * 0.7071067811865476")
        ec = self.erfc_pos(az)
        return f"0.5 * {x} * ct.where({x} < 0.0, {ec}, 2.0 - {ec})", "f"

    def op_silu(self, a):
        x = self.f(a["self"])
        return f"{x} / (1.0 + ct.exp(-{x}))", "f"

    def op_sigmoid(self, a):
        return f"1.0 / (1.0 + ct.exp(-{self.f(a['self'])}))", "f"

    def op_tanh(self, a):
        return f"ct.tanh({self.f(a['self'])})", "f"

    def op_softplus(self, a):
        x = self.f(a["self"])
        return self.softplus(x, self.num(a.get("beta"), 1.0), self.num(a.get("threshold"), 20.0)), "f"

    def op_mish(self, a):
        x = self.f(a["self"])
        sp = self.temp(self.softplus(x, 1.0, 20.0))
        return f"{x} * ct.tanh({sp})", "f"

    def op_hardswish(self, a):
        x = self.f(a["self"])
        return f"{x} * ct.minimum(ct.maximum({x} + 3.0, 0.0), 6.0) * {float_literal(1 / 6)}", "f"

    def op_hardsigmoid(self, a):
        return f"ct.minimum(ct.maximum({self.f(a['self'])} + 3.0, 0.0), 6.0) * {float_literal(1 / 6)}", "f"

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

    def op_prelu(self, a):
        x, w = self.f(a["self"]), a["weight"]
        if _is_ref(w):
            wshape = self.shapes.get(w["ref"])
            numel = math.prod(wshape) if wshape is not None else None
            if numel != 1 and len(self.rec.output) > 2:
                raise Unsupported("aten.prelu: a per-channel weight broadcasts along dim 1, not right-aligned")
        return f"ct.where({x} > 0.0, {x}, {x} * {self.f(w)})", "f"

    # unary math
    def op_abs(self, a):
        return f"ct.abs({self.f(a['self'])})", "f"

    def op_neg(self, a):
        return f"-{self.f(a['self'])}", "f"

    def op_positive(self, a):
        return self.f(a["self"]), "f"

    def op_exp(self, a):
        return f"ct.exp({self.f(a['self'])})", "f"

    def op_exp2(self, a):
        return f"ct.exp2({self.f(a['self'])})", "f"

    def op_expm1(self, a):
        return self.expm1(self.f(a["self"])), "f"

    def op_log(self, a):
        return f"ct.log({self.f(a['self'])})", "f"

    def op_log2(self, a):
        return f"ct.log2({self.f(a['self'])})", "f"

    def op_log10(self, a):
        return f"ct.log({self.f(a['self'])}) * 0.4342944819032518", "f"

    def op_log1p(self, a):
        return self.log1p(self.f(a["self"])), "f"

    def op_sqrt(self, a):
        return f"ct.sqrt({self.f(a['self'])})", "f"

    def op_rsqrt(self, a):
        return f"ct.rsqrt({self.f(a['self'])})", "f"

    def op_reciprocal(self, a):
        return f"1.0 / {self.f(a['self'])}", "f"

    def op_square(self, a):
        x = self.f(a["self"])
        return f"{x} * {x}", "f"

    def op_sin(self, a):
        return f"ct.sin({self.f(a['self'])})", "f"

    def op_cos(self, a):
        return f"ct.cos({self.f(a['self'])})", "f"

    def op_tan(self, a):
        return f"ct.tan({self.f(a['self'])})", "f"

    def op_sinh(self, a):
        return f"ct.sinh({self.f(a['self'])})", "f"

    def op_cosh(self, a):
        return f"ct.cosh({self.f(a['self'])})", "f"

    def op_atan(self, a):
        return f"ct.atan2({self.f(a['self'])}, 1.0)", "f"

    def op_asin(self, a):
        x = self.f(a["self"])
        return f"ct.atan2({x}, ct.sqrt((1.0 - {x}) * (1.0 + {x})))", "f"

    def op_acos(self, a):
        x = self.f(a["self"])
        return f"ct.atan2(ct.sqrt((1.0 - {x}) * (1.0 + {x})), {x})", "f"

    def op_asinh(self, a):
        x = self.f(a["self"])
        ax = self.temp(f"ct.abs({x})")
        mag = self.temp(f"ct.log({ax} + ct.sqrt({ax} * {ax} + 1.0))")
        return f"ct.where({x} < 0.0, -{mag}, {mag})", "f"

    def op_acosh(self, a):
        x = self.f(a["self"])
        return f"ct.log({x} + ct.sqrt(({x} - 1.0) * ({x} + 1.0)))", "f"

    def op_atanh(self, a):
        x = self.f(a["self"])
        return f"0.5 * ct.log((1.0 + {x}) / (1.0 - {x}))", "f"

    def op_erf(self, a):
        return self.erf(self.f(a["self"])), "f"

    def op_erfc(self, a):
        return self.erfc(self.f(a["self"])), "f"

    def op_erfinv(self, a):
        x = self.f(a["self"])
        w = self.temp(f"-ct.log((1.0 - {x}) * (1.0 + {x}))")
        wc = self.temp(f"{w} - 2.5")
        wt = self.temp(f"ct.sqrt({w}) - 3.0")
        central = self.horner(_ERFINV_CENTRAL, wc)
        tail = self.horner(_ERFINV_TAIL, wt)
        return f"{x} * ct.where({w} < 5.0, {central}, {tail})", "f"

    def op_sign(self, a):
        x = self.f(a["self"])
        return f"ct.where({x} > 0.0, 1.0, ct.where({x} < 0.0, -1.0, {x} * 0.0))", "f"

    op_sgn = op_sign

    def op_floor(self, a):
        return f"ct.floor({self.f(a['self'])})", "f"

    def op_ceil(self, a):
        return f"ct.ceil({self.f(a['self'])})", "f"

    def op_trunc(self, a):
        return self.trunc(self.f(a["self"])), "f"

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
        if eps is not None and eps is not _MISSING:
            e = self.num(eps)
            x = self.temp(f"ct.minimum(ct.maximum({x}, {float_literal(e)}), {float_literal(1.0 - e)})")
        return f"ct.log({x} / (1.0 - {x}))", "f"

    def op_signbit(self, a):
        return f"ct.bitcast({self.f(a['self'])}, ct.int32) < 0", "b"

    def op_isnan(self, a):
        return f"ct.isnan({self.f(a['self'])})", "b"

    def op_isinf(self, a):
        return f"ct.abs({self.f(a['self'])}) == math.inf", "b"

    def op_isfinite(self, a):
        return f"ct.abs({self.f(a['self'])}) < math.inf", "b"

    def op_logical_not(self, a):
        return f"~{self.b(a['self'])}", "b"

    def op_bitwise_not(self, a):
        if self.rec.output_dtype == "bool":
            return f"~{self.b(a['self'])}", "b"
        if self.rec.output_dtype in _INT_DTYPES:
            return f"(~{self.f(a['self'])}.astype(ct.int32)).astype(ct.float32)", "f"
        raise Unsupported(f"aten.bitwise_not on {self.rec.output_dtype}")

    def op_nan_to_num(self, a):
        x = self.f(a["self"])
        big = _FINFO_MAX.get(self.rec.output_dtype, _FINFO_MAX["float32"])
        nan = self.num(a.get("nan"), 0.0)
        pos = self.num(a.get("posinf"), big)
        neg = self.num(a.get("neginf"), -big)
        return (f"ct.where(ct.isnan({x}), {float_literal(nan)}, ct.where({x} == math.inf, {float_literal(pos)}, "
                f"ct.where({x} == -math.inf, {float_literal(neg)}, {x})))"), "f"

    def _clamp(self, x, lo, hi):
        expr = x
        if lo is not None and lo is not _MISSING:
            expr = f"ct.maximum({expr}, {self.f(lo)})"
        if hi is not None and hi is not _MISSING:
            expr = f"ct.minimum({expr}, {self.f(hi)})"
        return expr, "f"

    def op_clamp(self, a):
        return self._clamp(self.f(a["self"]), a.get("min"), a.get("max"))

    def op_clamp_min(self, a):
        return self._clamp(self.f(a["self"]), a.get("min"), None)

    def op_clamp_max(self, a):
        return self._clamp(self.f(a["self"]), None, a.get("max"))

    def _cast(self, a, dtype):
        v = a["self"]
        if not _is_ref(v):
            raise Unsupported(f"{self.what}: cast of a scalar")
        name = self.ref(v["ref"])
        return self.cast_to(name, dtype, "b" if is_bool_var(name) else "f")

    def op__to_copy(self, a):
        dt = a.get("dtype")
        return self._cast(a, dt["dtype"] if isinstance(dt, dict) else (self.rec.output_dtype or None))

    def op_to(self, a):
        return self._cast(a, self.rec.output_dtype or None)

    def op_type_as(self, a):
        return self._cast(a, self.rec.output_dtype or None)

    def op_fill(self, a):
        x = self.ref(a["self"]["ref"])
        v = a["value"]
        if _is_ref(v):
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

    # binary
    def op_add(self, a):
        x, y, alpha = self.f(a["self"]), self.f(a["other"]), self.num(a.get("alpha"), 1.0)
        return (f"{x} + {y}" if alpha == 1.0 else f"{x} + {y} * {float_literal(alpha)}"), "f"

    def op_sub(self, a):
        x, y, alpha = self.f(a["self"]), self.f(a["other"]), self.num(a.get("alpha"), 1.0)
        return (f"{x} - {y}" if alpha == 1.0 else f"{x} - {y} * {float_literal(alpha)}"), "f"

    def op_rsub(self, a):
        x, y, alpha = self.f(a["self"]), self.f(a["other"]), self.num(a.get("alpha"), 1.0)
        return (f"{y} - {x}" if alpha == 1.0 else f"{y} - {x} * {float_literal(alpha)}"), "f"

    def op_mul(self, a):
        return f"{self.f(a['self'])} * {self.f(a['other'])}", "f"

    def op_div(self, a):
        q = f"{self.f(a['self'])} / {self.f(a['other'])}"
        mode = a.get("rounding_mode")
        if mode is None or mode is _MISSING:
            return q, "f"
        if mode == "floor":
            return f"ct.floor({q})", "f"
        if mode == "trunc":
            return self.trunc(self.temp(q)), "f"
        raise Unsupported(f"aten.div: rounding_mode={mode!r}")

    op_true_divide = op_div

    def op_floor_divide(self, a):
        return f"ct.floor({self.f(a['self'])} / {self.f(a['other'])})", "f"

    def op_remainder(self, a):
        x, y = self.f(a["self"]), self.f(a["other"])
        return f"{x} - ct.floor({x} / {y}) * {y}", "f"

    def op_fmod(self, a):
        x, y = self.f(a["self"]), self.f(a["other"])
        q = self.temp(f"{x} / {y}")
        return f"{x} - ({self.trunc(q)}) * {y}", "f"

    def op_pow(self, a):
        base, exp = a["self"], a["exponent"]
        if self.is_scalar(base):
            s = self.num(base)
            e = self.f(exp)
            if s == 2.0:
                return f"ct.exp2({e})", "f"
            if s > 0.0:
                return f"ct.exp2({e} * {float_literal(math.log2(s))})", "f"
            return f"ct.pow({self.full(e, float_literal(s))}, {e})", "f"
        x = self.f(base)
        if not self.is_scalar(exp):
            return f"ct.pow({x}, {self.f(exp)})", "f"
        e = self.num(exp)
        if e == 0.5:
            return f"ct.sqrt({x})", "f"
        if e == -0.5:
            return f"ct.rsqrt({x})", "f"
        if e == int(e) and abs(e) <= 16:
            n = int(abs(e))
            if n == 0:
                return self.full(x, "1.0"), "f"
            power = self._int_power(x, n)
            return (f"1.0 / ({power})" if e < 0 else power), "f"
        return f"ct.pow({x}, {float_literal(e)})", "f"

    def _int_power(self, x: str, n: int) -> str:
        """x**n by squaring (n >= 1), with temps for the squares."""
        result, square = None, x
        while True:
            if n & 1:
                result = square if result is None else self.temp(f"{result} * {square}")
            n >>= 1
            if not n:
                return result
            square = self.temp(f"{square} * {square}")

    def op_maximum(self, a):
        return f"ct.maximum({self.f(a['self'])}, {self.f(a['other'])}, propagate_nan=True)", "f"

    def op_minimum(self, a):
        return f"ct.minimum({self.f(a['self'])}, {self.f(a['other'])}, propagate_nan=True)", "f"

    def op_fmax(self, a):
        return f"ct.maximum({self.f(a['self'])}, {self.f(a['other'])})", "f"

    def op_fmin(self, a):
        return f"ct.minimum({self.f(a['self'])}, {self.f(a['other'])})", "f"

    def op_atan2(self, a):
        return f"ct.atan2({self.f(a['self'])}, {self.f(a['other'])})", "f"

    def op_hypot(self, a):
        x, y = self.f(a["self"]), self.f(a["other"])
        return f"ct.sqrt({x} * {x} + {y} * {y})", "f"

    def op_copysign(self, a):
        x, y = self.f(a["self"]), self.f(a["other"])
        neg = f"ct.bitcast({y}, ct.int32) < 0" if not self.is_scalar(a["other"]) else \
            ("True" if math.copysign(1.0, self.num(a["other"])) < 0 else "False")
        ax = self.temp(f"ct.abs({x})")
        if neg in ("True", "False"):
            return (f"-{ax}" if neg == "True" else ax), "f"
        return f"ct.where({neg}, -{ax}, {ax})", "f"

    def op_xlogy(self, a):
        x, y = self.f(a["self"]), self.f(a["other"])
        return f"ct.where({x} == 0.0, 0.0, {x} * ct.log({y}))", "f"

    def _cmp(self, a, op):
        return f"{self.f(a['self'])} {op} {self.f(a['other'])}", "b"

    def op_eq(self, a):
        return self._cmp(a, "==")

    def op_ne(self, a):
        return self._cmp(a, "!=")

    def op_lt(self, a):
        return self._cmp(a, "<")

    def op_le(self, a):
        return self._cmp(a, "<=")

    def op_gt(self, a):
        return self._cmp(a, ">")

    def op_ge(self, a):
        return self._cmp(a, ">=")

    def op_logical_and(self, a):
        return f"{self.b(a['self'])} & {self.b(a['other'])}", "b"

    def op_logical_or(self, a):
        return f"{self.b(a['self'])} | {self.b(a['other'])}", "b"

    def op_logical_xor(self, a):
        return f"{self.b(a['self'])} ^ {self.b(a['other'])}", "b"

    def _bitwise(self, a, op):
        if self.rec.output_dtype == "bool":
            return f"{self.b(a['self'])} {op} {self.b(a['other'])}", "b"
        if self.rec.output_dtype in _INT_DTYPES:
            def as_int(v):
                return f"{self.f(v)}.astype(ct.int32)" if _is_ref(v) else str(int(self.num(v)))
            return f"({as_int(a['self'])} {op} {as_int(a['other'])}).astype(ct.float32)", "f"
        raise Unsupported(f"{self.what} on {self.rec.output_dtype}")

    def op_bitwise_and(self, a):
        return self._bitwise(a, "&")

    def op_bitwise_or(self, a):
        return self._bitwise(a, "|")

    def op_bitwise_xor(self, a):
        return self._bitwise(a, "^")

    # Python operators on tensors (`a & b`) export as aten.__and__ etc.
    op___and__ = op_bitwise_and
    op___or__ = op_bitwise_or
    op___xor__ = op_bitwise_xor

    def op_masked_fill(self, a):
        return f"ct.where({self.b(a['mask'])}, {self.f(a['value'])}, {self.f(a['self'])})", "f"

    # ternary
    def op_where(self, a):
        cond = self.b(a["condition"])
        x, y = self.f(a["self"]), self.f(a["other"])
        if not _is_ref(a["condition"]):
            raise Unsupported("aten.where: a scalar condition")
        return f"ct.where({cond}, {x}, {y})", "f"

    def op_addcmul(self, a):
        x, t1, t2, v = self.f(a["self"]), self.f(a["tensor1"]), self.f(a["tensor2"]), self.num(a.get("value"), 1.0)
        scale = "" if v == 1.0 else f" * {float_literal(v)}"
        return f"{x} + {t1} * {t2}{scale}", "f"

    def op_addcdiv(self, a):
        x, t1, t2, v = self.f(a["self"]), self.f(a["tensor1"]), self.f(a["tensor2"]), self.num(a.get("value"), 1.0)
        scale = "" if v == 1.0 else f" * {float_literal(v)}"
        return f"{x} + {t1} / {t2}{scale}", "f"

    def op_lerp(self, a):
        x, end, w = self.f(a["self"]), self.f(a["end"]), self.f(a["weight"])
        return f"{x} + {w} * ({end} - {x})", "f"


def emit_elementwise(ops: list[OpRecord], env: dict[str, str], load_side: Callable[[str], str],
                     lines: list[str], indent: str = "    ",
                     shapes: dict[str, Sequence[int]] | None = None) -> dict[str, str]:
    """Append cuTile code computing `ops` (in order) to `lines`; returns `env` with each op's node → its tile var.

    `env` maps graph values already in the kernel to float32 tile variables (plus optional ROW_INDEX/COL_INDEX
    int32 index tiles for tril/triu). An operand not in `env` is requested once through `load_side(value)`,
    which must append its load (broadcast to the output tile, float32) to `lines` and return the variable name.
    `shapes` (optional: graph value → shape) lets ops whose broadcasting is not right-aligned (prelu) check
    their operands. Raises Unsupported("aten.<op>: reason") for ops with no translation.
    """
    emitter = _Emitter(env, load_side, lines, indent, shapes)
    for rec in ops:
        emitter.op(rec)
    return env


def broadcast_load_lines(var: str, array: str, array_shape: Sequence[int], out_shape: Sequence[int],
                         out_tile: Sequence[tuple[str, int]], lines: list[str], indent: str = "    ",
                         padding: str = "ct.PaddingMode.ZERO", dtype: str = "ct.float32") -> str:
    """Emit `var = <array's values for the current output tile>`, broadcast to the tile shape; returns `var`.

    Args:
      var: name of the tile variable to define.
      array: the kernel parameter holding the side input (an ND cuTile array; 0-d tensors must be passed
        reshaped to (1,) by the launch wrapper: cuTile has no 0-d array loads).
      array_shape: the side input's shape as the kernel sees it (rank <= len(out_shape)).
      out_shape: the output's shape in the view the kernel tiles (same rank as `out_tile`).
      out_tile: per output dim, (block-index expression, tile size): the current tile covers elements
        [idx * size, (idx + 1) * size) of that dim, exactly as `ct.load(out, index=(idx, ...), shape=(size, ...))`.
      lines / indent: where the code goes.
      padding: padding mode for out-of-bounds tile elements (zero by default; they are never stored anyway).
      dtype: the tile dtype after the load (float32 by default; pass "ct.bool_" to keep a mask as bool, and
        then give `var` the prefix "eb_" so emit_elementwise knows it holds a bool tile).

    Broadcasting is right-aligned as in PyTorch: input dim i maps to output dim i + (out_rank - in_rank). Where
    the input has size 1 (or no dim at all) the load uses tile size 1 at index 0; elsewhere it uses the output
    tile's index and size. The loaded tile (input rank) is then reshaped to the output rank and broadcast to the
    output tile shape, so `var` can be combined directly with the output tile. Example (matmul epilogue, output
    tile (BM, BN) at (pid_m, pid_n), bias of shape (N,)):

        broadcast_load_lines("bias_t", "bias", [N], [M, N], [("pid_m", "BM"), ("pid_n", "BN")], lines)
        # bias_t = ct.broadcast_to(ct.reshape(ct.load(bias, index=(pid_n,), shape=(BN,), ...)
        #          .astype(ct.float32), (1, BN)), (BM, BN))

    Tile sizes may be ints or names of ct.Constant parameters (strings). The input and output must describe
    the same view: if the kernel tiles a reshaped output (e.g. (B*T, N) for a (B, T, N) result), pass the side
    input reshaped consistently (a (B, T, N) residual as (B*T, N); a (N,) bias stays (N,)); broadcasts that the
    view cannot express (a (T, N) input against a (B*T, N) tile) need a gather instead.
    """
    out_rank, in_rank = len(out_shape), len(array_shape)
    if in_rank > out_rank:
        raise Unsupported(f"side input {array}: shape {list(array_shape)} has more dims than the output "
                          f"{list(out_shape)}")
    if len(out_tile) != out_rank:
        raise ValueError("out_tile needs one (index, size) pair per output dim")
    shape = list(array_shape) or [1]
    in_rank = len(shape)
    offset = out_rank - in_rank
    index, tile = [], []
    for i, size in enumerate(shape):
        od = i + offset
        if size == 1:
            index.append("0")
            tile.append("1")
        elif size != out_shape[od]:
            raise Unsupported(f"side input {array}: shape {list(array_shape)} does not broadcast to "
                              f"{list(out_shape)}")
        else:
            index.append(str(out_tile[od][0]))
            tile.append(str(out_tile[od][1]))
    full_tile = [str(t) for _, t in out_tile]

    def tup(items):
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    expr = f"ct.load({array}, index={tup(index)}, shape={tup(tile)}, padding_mode={padding})"
    if dtype:
        expr += f".astype({dtype})"
    rank_tile = ["1"] * (out_rank - in_rank) + tile if out_rank >= in_rank else tile
    if rank_tile != tile:
        expr = f"ct.reshape({expr}, {tup(rank_tile)})"
    if rank_tile != full_tile:
        expr = f"ct.broadcast_to({expr}, {tup(full_tile)})"
    lines.append(f"{indent}{var} = {expr}")
    return var
