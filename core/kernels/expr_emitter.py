"""The expression compiler's core: operands, emitted assignments and the dispatch of one op to its rule.

`EmitterBase.op(rec)` binds the record's arguments, calls the rule `op_<name>(args)` (defined by the op-table
mixins: expr_activations, expr_unary, expr_binary), which returns `(expression, kind)` with kind "f" (a float32
tile) or "b" (a bool tile), and assigns the result to `ev_<node>` / `eb_<node>`; rules may first emit
temporaries `ev_<node>_t<i>`. The prefix records the kind, so a later op (or a later call) can tell it from the
name. The rule builders below write the one-line rules: a template over the operands, or one math expansion.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..catalog import base_op
from ..specs import OpRecord
from .base import Unsupported
from .expr_args import MISSING, bind_args, float_literal, ident, scalar_value
from .indexing import is_ref

# env keys of the int32 row/column index tiles (the last two output dims) that tril/triu read
ROW_INDEX = "__row_index__"
COL_INDEX = "__col_index__"


def is_bool_var(name: str) -> bool:
    return name.startswith("eb_")


class EmitterBase:
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
        if is_ref(v):
            name = self.ref(v["ref"])
            return f"{name}.astype(ct.float32)" if is_bool_var(name) else name
        s = scalar_value(v)
        if s is None:
            raise Unsupported(f"{self.what}: missing operand")
        return float_literal(s)

    def b(self, v: Any) -> str:
        """A bool operand."""
        if is_ref(v):
            name = self.ref(v["ref"])
            return name if is_bool_var(name) else f"({name} != 0.0)"
        s = scalar_value(v)
        return "True" if s else "False"

    def is_scalar(self, v: Any) -> bool:
        return not is_ref(v)

    def num(self, v: Any, default: float | None = None) -> float:
        s = scalar_value(v) if v is not MISSING else None
        if s is None:
            if default is None:
                raise Unsupported(f"{self.what}: expected a scalar argument, got {v!r}")
            return default
        return float(s)

    @property
    def what(self) -> str:
        return self.rec.target if self.rec is not None else "elementwise op"

    # --- emission ------------------------------------------------------------------------------------------
    def _assign(self, name: str, expr: str) -> str:
        self.lines.append(f"{self.indent}{name} = {expr}")
        return name

    def temp(self, expr: str) -> str:
        self.tmp += 1
        return self._assign(f"ev_{ident(self.rec.node)}_t{self.tmp}", expr)

    def result(self, expr: str, kind: str = "f") -> str:
        return self._assign(f"{'eb' if kind == 'b' else 'ev'}_{ident(self.rec.node)}", expr)

    def full(self, like: str, value: str) -> str:
        return f"ct.full({like}.shape, {value}, dtype=ct.float32)"

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


# --- rule builders (each returns an `op_<name>` method) ------------------------------------------------------
def on_self(template: str, kind: str = "f"):
    """The rule `template` with {x} = the float operand `self`."""
    def rule(self, a):
        return template.format(x=self.f(a["self"])), kind
    return rule


def on_pair(template: str, kind: str = "f", operand: str = "f"):
    """The rule `template` with {x}, {y} = the operands `self`, `other`, float (operand "f") or bool ("b")."""
    def rule(self, a):
        get = getattr(self, operand)
        x = get(a["self"])
        return template.format(x=x, y=get(a["other"])), kind
    return rule


def expanded(method: str):
    """The rule `self.<method>(x)`: a math expansion (expr_math) of the float operand `self`."""
    def rule(self, a):
        return getattr(self, method)(self.f(a["self"])), "f"
    return rule
