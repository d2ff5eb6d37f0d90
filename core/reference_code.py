"""Python source for op-graph nodes: the per-kernel PyTorch references and the end-to-end reference chain.

References call ATen ops by their exact overload (`aten.conv2d.default(...)`), so a reference is bit-for-bit the
captured computation, needs nothing but `import torch`, and reads like the op graph it came from. In-place ops are
emitted in their functional form so that a reference never mutates the tensors it is given.
"""

from __future__ import annotations

import keyword
import math
from typing import Any

from .catalog import base_op, is_inplace
from .opgraph import OpNode

RESERVED = {"torch", "aten", "F", "nn", "math", "np", "ct", "operator", "self"} | set(dir(__builtins__)
                                                                                     if isinstance(__builtins__, dict)
                                                                                     else dir(__import__("builtins")))


def py_name(name: str) -> str:
    """A safe Python identifier for a graph value or module path."""
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    if not out or out[0].isdigit():
        out = "v_" + out
    if keyword.iskeyword(out) or out in RESERVED:
        out += "_"
    return out


def literal(arg: Any, names: dict[str, str]) -> str:
    """Source text for an encoded argument; refs become the local names in `names`."""
    if isinstance(arg, dict):
        if "ref" in arg:
            return names[arg["ref"]]
        if "dtype" in arg:
            return f"torch.{arg['dtype']}"
        if "device" in arg:
            # Captured on the meta device: a reference allocates wherever its inputs live.
            return names.get("__device__", "torch.get_default_device()") if arg["device"] == "meta" \
                else f"torch.device({arg['device']!r})"
        if "float" in arg:
            return {"nan": "math.nan", "inf": "math.inf", "-inf": "-math.inf"}[arg["float"]]
        if "layout" in arg:
            return f"torch.{arg['layout']}"
        if "memory_format" in arg:
            return f"torch.{arg['memory_format']}"
        if "slice" in arg:
            parts = [literal(a, names) for a in arg["slice"]]
            return f"slice({', '.join(parts)})"
        raise ValueError(f"unknown encoded argument {arg!r}")
    if isinstance(arg, list):
        return "[" + ", ".join(literal(a, names) for a in arg) + "]"
    if isinstance(arg, float):
        return repr(arg) if math.isfinite(arg) else ("math.nan" if math.isnan(arg) else
                                                     ("math.inf" if arg > 0 else "-math.inf"))
    return repr(arg)


def functional_target(node: OpNode) -> str:
    """`aten.add.Tensor` for `aten.add_.Tensor`: references never mutate their arguments."""
    if is_inplace(node):
        parts = node.target.split(".")
        parts[1] = base_op(node.op)
        return ".".join(parts)
    return node.target


def call_source(node: OpNode, names: dict[str, str]) -> str:
    """The right-hand side computing `node`."""
    if node.target == "getitem":
        src, idx = node.args
        return f"{literal(src, names)}[{literal(idx, names)}]"
    target = functional_target(node)
    if target.startswith("aten."):
        fn = target
    elif target.startswith("tilestudio."):
        fn = target.split(".", 1)[1]
    else:
        raise ValueError(f"cannot emit a call to {target}")
    args = [literal(a, names) for a in node.args]
    args += [f"{k}={literal(v, names)}" for k, v in node.kwargs.items()]
    return f"{fn}({', '.join(args)})"


# Shape glue the composed forward calls as a Tensor method instead of its ATen overload: the same op through the
# same dispatcher, without OpOverload.__call__'s Python layer (CPython 3.11, torch 2.13: aten.view.default 3.8 us,
# x.view 1.5 us). Only these overloads, with exactly their positional arguments.
GLUE_METHODS = {
    "aten.view.default": ("view", 2), "aten.reshape.default": ("reshape", 2),
    "aten.transpose.int": ("transpose", 3), "aten.permute.default": ("permute", 2),
    "aten.unsqueeze.default": ("unsqueeze", 2), "aten.squeeze.dim": ("squeeze", 2),
    "aten.expand.default": ("expand", 2), "aten.contiguous.default": ("contiguous", 1),
    "aten.t.default": ("t", 1), "aten.select.int": ("select", 3), "aten.flatten.using_ints": ("flatten", 3),
}


def glue_source(node: OpNode, names: dict[str, str], output: list[int] | None = None) -> str:
    """The right-hand side computing a glue node in the composed forward: a method of a local tensor for
    GLUE_METHODS' overloads (positional arguments only) and for a unit-step slice whose output shape is known
    (`x.narrow(dim, start, length)`, ~1 us against ~5 for aten.slice.Tensor's OpOverload call), else
    call_source's ATen call."""
    narrow = _narrow_args(node, output)
    if narrow is not None and literal(node.args[0], names).isidentifier():
        return f"{literal(node.args[0], names)}.narrow({narrow[0]}, {narrow[1]}, {narrow[2]})"
    method = GLUE_METHODS.get(node.target)
    if method and not node.kwargs and len(node.args) == method[1] and isinstance(node.args[0], dict) \
            and "ref" in node.args[0]:
        receiver = literal(node.args[0], names)
        if receiver.isidentifier():  # a local (a parameter, `m.w`, keeps the call form the purity check reads)
            return f"{receiver}.{method[0]}({', '.join(literal(a, names) for a in node.args[1:])})"
    return call_source(node, names)


def _narrow_args(node: OpNode, output: list[int] | None) -> tuple[int, int, int] | None:
    """(dim, start, length) of aten.slice.Tensor(x, dim, start, end[, 1]) on a local x with literal non-negative
    start, the length read from the traced output shape; None for any other form."""
    if node.target != "aten.slice.Tensor" or node.kwargs or not output or not 3 <= len(node.args) <= 5:
        return None
    x, dim, start, *rest = node.args
    step = rest[1] if len(rest) == 2 else 1
    if not (isinstance(x, dict) and "ref" in x) or step != 1:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (dim, start)) or start < 0:
        return None
    if not -len(output) <= dim < len(output) or not output[dim]:  # (an empty slice may start past the end)
        return None
    return dim, start, output[dim]


def uses_math(text: str) -> bool:
    return "math." in text
