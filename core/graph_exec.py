"""Execute op-graph nodes on real tensors (verify, and ground truth for per-kernel checks). Child side only."""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

from .opgraph import OpNode
from .reference_code import functional_target


def resolve_target(target: str):
    if target == "getitem":
        return operator.getitem
    parts = target.split(".")
    if parts[0] == "aten":
        packet = getattr(torch.ops.aten, parts[1])
        return getattr(packet, parts[2]) if len(parts) > 2 else packet
    if parts[0] == "tilestudio":
        from . import recurrent_ops

        return getattr(recurrent_ops, parts[1])
    raise ValueError(f"cannot execute target {target}")


def decode(arg: Any, env: dict[str, Any]) -> Any:
    if isinstance(arg, dict):
        if "ref" in arg:
            return env[arg["ref"]]
        if "dtype" in arg:
            return getattr(torch, arg["dtype"])
        if "device" in arg:
            return env.get("__device__", torch.device("cpu")) if arg["device"] == "meta" else torch.device(arg["device"])
        if "float" in arg:
            return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[arg["float"]]
        if "layout" in arg:
            return getattr(torch, arg["layout"])
        if "memory_format" in arg:
            return getattr(torch, arg["memory_format"])
        if "slice" in arg:
            return slice(*(decode(a, env) for a in arg["slice"]))
    if isinstance(arg, list):
        return [decode(a, env) for a in arg]
    return arg


def run_node(node: OpNode, env: dict[str, Any]) -> Any:
    fn = resolve_target(functional_target(node))
    args = [decode(a, env) for a in node.args]
    kwargs = {k: decode(v, env) for k, v in node.kwargs.items()}
    if node.target == "getitem":
        return args[0][args[1]]
    return fn(*args, **kwargs)
