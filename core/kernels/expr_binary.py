"""Emission rules of the binary and ternary ops: arithmetic, powers, min/max, comparisons, logical and bitwise
ops, clamp, where/masked_fill, addcmul/addcdiv, lerp.

Each `op_<name>(args)` returns `(expression, kind)` for the expression compiler (expr_emitter.EmitterBase.op).
Operands are rendered left to right (`self`, then `other`, ...): a side input is loaded the first time an
operand names it, so the order fixes the order of the emitted loads. Unsupported: div rounding modes other than
floor/trunc, bitwise ops on floats, a scalar `where` condition.
"""

from __future__ import annotations

import math

from .base import Unsupported
from .expr_args import INT_DTYPES, float_literal, is_given, scalar_value
from .expr_emitter import on_pair
from .expr_math import MATH_TUNING, MathExpansions, clamp_expr, float32_recip
from .indexing import is_ref


def _alpha_sum(op: str, swap: bool = False):
    """The rule `self <op> other * alpha` (`other <op> self * alpha` when swapped), alpha 1 left out."""
    def rule(self, a):
        x, y, alpha = self.f(a["self"]), self.f(a["other"]), self.num(a.get("alpha"), 1.0)
        lhs, rhs = (y, x) if swap else (x, y)
        return (f"{lhs} {op} {rhs}" if alpha == 1.0 else f"{lhs} {op} {rhs} * {float_literal(alpha)}"), "f"
    return rule


def _add_product(op: str):
    """The rule `self + tensor1 <op> tensor2 * value` (addcmul, addcdiv), value 1 left out."""
    def rule(self, a):
        x, t1, t2, v = self.f(a["self"]), self.f(a["tensor1"]), self.f(a["tensor2"]), self.num(a.get("value"), 1.0)
        scale = "" if v == 1.0 else f" * {float_literal(v)}"
        return f"{x} + {t1} {op} {t2}{scale}", "f"
    return rule


def _bitwise(op: str):
    """A bitwise op: logical on bool outputs, on int32 values for integer outputs."""
    def rule(self, a):
        if self.rec.output_dtype == "bool":
            return f"{self.b(a['self'])} {op} {self.b(a['other'])}", "b"
        if self.rec.output_dtype in INT_DTYPES:
            def as_int(v):
                return f"{self.f(v)}.astype(ct.int32)" if is_ref(v) else str(int(self.num(v)))
            return f"({as_int(a['self'])} {op} {as_int(a['other'])}).astype(ct.float32)", "f"
        raise Unsupported(f"{self.what} on {self.rec.output_dtype}")
    return rule


class BinaryOps(MathExpansions):
    op_add = _alpha_sum("+")
    op_sub = _alpha_sum("-")
    op_rsub = _alpha_sum("-", swap=True)
    op_mul = on_pair("{x} * {y}")

    def op_div(self, a):
        mode = a.get("rounding_mode")
        if not is_given(mode) and not is_ref(a["other"]) and MATH_TUNING["scalar_div_recip"]:
            c = scalar_value(a["other"])
            if c is not None:  # eager's own rule for a Python-number divisor (MATH_TUNING)
                return f"{self.f(a['self'])} * {float_literal(float32_recip(c))}", "f"
        q = f"{self.f(a['self'])} / {self.f(a['other'])}"
        if not is_given(mode):
            return q, "f"
        if mode == "floor":
            return f"ct.floor({q})", "f"
        if mode == "trunc":
            return self.trunc(self.temp(q)), "f"
        raise Unsupported(f"aten.div: rounding_mode={mode!r}")

    op_true_divide = op_div

    op_floor_divide = on_pair("ct.floor({x} / {y})")
    op_remainder = on_pair("{x} - ct.floor({x} / {y}) * {y}")

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
            power = self.int_power(x, n)
            return (f"1.0 / ({power})" if e < 0 else power), "f"
        return f"ct.pow({x}, {float_literal(e)})", "f"

    op_maximum = on_pair("ct.maximum({x}, {y}, propagate_nan=True)")
    op_minimum = on_pair("ct.minimum({x}, {y}, propagate_nan=True)")
    op_fmax = on_pair("ct.maximum({x}, {y})")
    op_fmin = on_pair("ct.minimum({x}, {y})")
    op_atan2 = on_pair("ct.atan2({x}, {y})")
    op_hypot = on_pair("ct.sqrt({x} * {x} + {y} * {y})")
    op_xlogy = on_pair("ct.where({x} == 0.0, 0.0, {x} * ct.log({y}))")

    def op_logaddexp(self, a, base2: bool = False):
        """max(x, y) + log(1 + exp(-|x - y|)) (base 2: log2 / exp2); x == y (infinities of one sign included) gives
        x + log(2), NaN propagates."""
        x, y = self.temp(self.f(a["self"])), self.temp(self.f(a["other"]))
        gap = self.temp(f"-ct.abs({x} - {y})")
        m = f"ct.maximum({x}, {y}, propagate_nan=True)"
        tail = f"ct.log2(1.0 + ct.exp2({gap}))" if base2 else self.log1p(self.temp(f"ct.exp({gap})"))
        return f"ct.where({x} == {y}, {x} + {1.0 if base2 else math.log(2.0)!r}, {m} + {tail})", "f"

    def op_logaddexp2(self, a):
        return self.op_logaddexp(a, base2=True)

    def op_heaviside(self, a):
        x, v = self.temp(self.f(a["self"])), self.f(a["values"])
        return f"ct.where({x} == 0.0, {v}, ct.where({x} > 0.0, 1.0, 0.0))", "f"

    def op_copysign(self, a):
        x, y = self.f(a["self"]), self.f(a["other"])
        neg = f"ct.bitcast({y}, ct.int32) < 0" if not self.is_scalar(a["other"]) else \
            ("True" if math.copysign(1.0, self.num(a["other"])) < 0 else "False")
        ax = self.temp(f"ct.abs({x})")
        if neg in ("True", "False"):
            return (f"-{ax}" if neg == "True" else ax), "f"
        return f"ct.where({neg}, -{ax}, {ax})", "f"

    def _clamp(self, x, lo, hi):
        return clamp_expr(x, self.f(lo) if is_given(lo) else None, self.f(hi) if is_given(hi) else None), "f"

    def op_clamp(self, a):
        return self._clamp(self.f(a["self"]), a.get("min"), a.get("max"))

    def op_clamp_min(self, a):
        return self._clamp(self.f(a["self"]), a.get("min"), None)

    def op_clamp_max(self, a):
        return self._clamp(self.f(a["self"]), None, a.get("max"))

    op_eq = on_pair("{x} == {y}", "b")
    op_ne = on_pair("{x} != {y}", "b")
    op_lt = on_pair("{x} < {y}", "b")
    op_le = on_pair("{x} <= {y}", "b")
    op_gt = on_pair("{x} > {y}", "b")
    op_ge = on_pair("{x} >= {y}", "b")

    op_logical_and = on_pair("{x} & {y}", "b", "b")
    op_logical_or = on_pair("{x} | {y}", "b", "b")
    op_logical_xor = on_pair("{x} ^ {y}", "b", "b")

    op_bitwise_and = _bitwise("&")
    op_bitwise_or = _bitwise("|")
    op_bitwise_xor = _bitwise("^")
    # shifts of integer values (emulated on int32, as the other integer ops)
    op_bitwise_left_shift = op___lshift__ = _bitwise("<<")
    op_bitwise_right_shift = op___rshift__ = _bitwise(">>")
    # Python operators on tensors (`a & b`) export as aten.__and__ etc.
    op___and__ = op_bitwise_and
    op___or__ = op_bitwise_or
    op___xor__ = op_bitwise_xor

    def op_masked_fill(self, a):
        return f"ct.where({self.b(a['mask'])}, {self.f(a['value'])}, {self.f(a['self'])})", "f"

    def op_where(self, a):
        cond = self.b(a["condition"])
        x, y = self.f(a["self"]), self.f(a["other"])
        if not is_ref(a["condition"]):
            raise Unsupported("aten.where: a scalar condition")
        return f"ct.where({cond}, {x}, {y})", "f"

    op_addcmul = _add_product("*")
    op_addcdiv = _add_product("/")

    def op_lerp(self, a):
        x, end, w = self.f(a["self"]), self.f(a["end"]), self.f(a["weight"])
        return f"{x} + {w} * ({end} - {x})", "f"
