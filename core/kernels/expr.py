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

Every elementwise op of the catalog translates. The parts:
  expr_args         op arguments by schema name, scalar literals, dtype tables
  expr_emitter      operands, emitted assignments, one op → its rule; the builders of one-line rules
  expr_math         functions cuTile lacks: erf/erfc/erfinv fits, log1p/expm1, trunc/round, softplus, powers
  expr_activations  activation rules;  expr_unary: unary math, casts, fills, tril/triu;
  expr_binary       arithmetic, comparison, logical/bitwise, clamp, where and the ternary ops
  expr_loads        broadcast_load_lines
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..specs import OpRecord
from .expr_activations import SELU_ALPHA, SELU_SCALE, ActivationOps
from .expr_args import bind_args, float_literal, scalar_value
from .expr_binary import BinaryOps
from .expr_emitter import COL_INDEX, ROW_INDEX, is_bool_var
from .expr_loads import broadcast_load_lines
from .expr_unary import UnaryOps

__all__ = ["COL_INDEX", "ROW_INDEX", "SELU_ALPHA", "SELU_SCALE", "bind_args", "broadcast_load_lines",
           "emit_elementwise", "float_literal", "is_bool_var", "scalar_value"]


class ExprEmitter(ActivationOps, UnaryOps, BinaryOps):
    """Every op rule on one emitter (the op tables are mixins of EmitterBase)."""


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
    emitter = ExprEmitter(env, load_side, lines, indent, shapes)
    for rec in ops:
        emitter.op(rec)
    return env
