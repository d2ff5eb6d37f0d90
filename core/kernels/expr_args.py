"""Op arguments and literal values for the expression compiler (expr.py).

`bind_args` names an op record's encoded arguments by the ATen schema (defaults filled in); `scalar_value` and
`float_literal` turn encoded scalars into Python numbers and then into float literals for generated code. The
dtype tables say how a value of each tensor dtype is emulated on float32 tiles.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..specs import OpRecord
from .base import Unsupported

# An argument the schema has, the op record lacks and the schema gives no default for.
MISSING = object()

# Largest finite value per dtype (nan_to_num's default posinf/neginf).
FINFO_MAX = {"float32": 3.4028234663852886e38, "float16": 65504.0, "bfloat16": 3.3895313892515355e38,
             "float64": 3.4028234663852886e38}
INT_DTYPES = {"int64", "int32", "int16", "int8", "uint8"}
LOW_FLOATS = {"float16": "ct.float16", "bfloat16": "ct.bfloat16"}


def _schema_args(target: str) -> list[Any] | None:
    """The torch schema arguments of an ATen target like "aten.add.Tensor" (None when unknown)."""
    try:
        import torch

        _, name, overload = target.split(".")
        return list(getattr(getattr(torch.ops.aten, name), overload)._schema.arguments)
    except (ValueError, AttributeError, RuntimeError, ImportError):
        return None


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
            out[a.name] = a.default_value if a.has_default_value() else rec.attrs.get(a.name, MISSING)
    return out


def is_given(v: Any) -> bool:
    """Whether an optional argument was passed (neither None nor missing from the schema)."""
    return v is not None and v is not MISSING


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


def ident(node: str) -> str:
    """A graph node name made into a Python identifier fragment."""
    return re.sub(r"\W", "_", node)
