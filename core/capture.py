"""Capture a model's forward pass as an `OpGraph` (runs in the child process; imports torch).

Why torch.export (non-strict) rather than fx.symbolic_trace + ShapeProp: export runs the real Python forward
under fake tensors, so Python control flow on constants, loops over ModuleList, in-place ops, tuple outputs and
scalar attributes all just work; it keeps high-level ops (linear, conv2d, layer_norm, lstm) that map one-to-one
onto kernel families; it records `stack_trace` (the user's file:line) and `nn_module_stack` on every node, and the
graph signature gives parameters and buffers their module paths. symbolic_trace fails on any control flow that
touches a tensor and gives no shapes without a second pass on real data.
"""

from __future__ import annotations

import math
import operator
import os
import re
from typing import Any

import torch

from .opgraph import GraphInput, OpGraph, OpNode, SourceLoc, TensorMeta

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tensor_meta(value: Any) -> TensorMeta | None:
    if isinstance(value, torch.Tensor):
        return TensorMeta(shape=[int(d) for d in value.shape], dtype=dtype_name(value.dtype))
    return None


def encode_arg(arg: Any) -> Any:
    """Encode an fx node argument as JSON-able data (see opgraph's docstring)."""
    if isinstance(arg, torch.fx.Node):
        return {"ref": arg.name}
    if isinstance(arg, (list, tuple)):
        return [encode_arg(a) for a in arg]
    if isinstance(arg, bool) or arg is None or isinstance(arg, (int, str)):
        return arg
    if isinstance(arg, float):
        if math.isfinite(arg):
            return arg
        return {"float": "nan" if math.isnan(arg) else ("inf" if arg > 0 else "-inf")}
    if isinstance(arg, torch.dtype):
        return {"dtype": dtype_name(arg)}
    if isinstance(arg, torch.device):
        return {"device": str(arg.type)}
    if isinstance(arg, torch.layout):
        return {"layout": str(arg).removeprefix("torch.")}
    if isinstance(arg, torch.memory_format):
        return {"memory_format": str(arg).removeprefix("torch.")}
    if isinstance(arg, slice):
        return {"slice": [encode_arg(arg.start), encode_arg(arg.stop), encode_arg(arg.step)]}
    if isinstance(arg, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise CaptureError(f"symbolic value {arg} in the graph (dynamic shapes are not supported)")
    raise CaptureError(f"cannot encode argument of type {type(arg).__name__}: {arg!r}")


class CaptureError(Exception):
    def __init__(self, message: str, line: int | None = None, hint: str | None = None):
        super().__init__(message)
        self.line, self.hint = line, hint


def _has_static_shape(value: Any) -> bool:
    values = value if isinstance(value, (tuple, list)) else [value]
    return all(not isinstance(v, torch.Tensor) or all(isinstance(d, int) for d in v.shape) for v in values)


def target_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return f"aten.{target._schema.name.split('::', 1)[1]}.{target._overloadname}" if target.namespace == "aten" \
            else f"{target.namespace}.{target._schema.name.split('::', 1)[1]}.{target._overloadname}"
    if target is operator.getitem:
        return "getitem"
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order.{target.name()}"
    return getattr(target, "__name__", str(target))


def schema_attrs(node: torch.fx.Node) -> dict[str, Any]:
    """Non-tensor arguments of an ATen op by schema name, with defaults filled in."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return {}
    attrs: dict[str, Any] = {}
    for i, arg in enumerate(target._schema.arguments):
        if i < len(node.args):
            value = node.args[i]
        elif arg.name in node.kwargs:
            value = node.kwargs[arg.name]
        elif arg.has_default_value():
            value = arg.default_value
        else:
            continue
        if _has_node(value):
            continue
        try:
            attrs[arg.name] = encode_arg(value)
        except CaptureError:
            attrs[arg.name] = repr(value)
    return attrs


def _has_node(value: Any) -> bool:
    if isinstance(value, torch.fx.Node):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_node(v) for v in value)
    return False


def source_of(node: torch.fx.Node, model_file: str) -> SourceLoc | None:
    """The deepest frame of the node's stack trace that lies in the user's model file."""
    trace = node.meta.get("stack_trace") or ""
    lines = trace.splitlines()
    best: SourceLoc | None = None
    for i, text in enumerate(lines):
        m = _FRAME.search(text)
        if not m or os.path.realpath(m["file"]) != model_file:
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.search(lines[i + 1]) else ""
        best = SourceLoc(file=model_file, line=int(m["line"]), code=code)
    return best


def module_of(node: torch.fx.Node) -> tuple[str | None, str | None]:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return None, None
    path, typ = list(stack.values())[-1]
    path = re.sub(r"^L\['self'\]\.?", "", str(path))
    typ_name = typ.__name__ if isinstance(typ, type) else str(typ).rsplit(".", 1)[-1]
    return (path or None), typ_name


def graph_from_export(ep: torch.export.ExportedProgram, model_file: str, model_class: str,
                      forward_args: list[str], input_values: list[Any]) -> OpGraph:
    sig = ep.graph_signature
    params = sig.inputs_to_parameters
    buffers = sig.inputs_to_buffers
    constants = getattr(sig, "inputs_to_lifted_tensor_constants", {}) or {}
    user_inputs = list(sig.user_inputs)
    model_file = os.path.realpath(model_file)

    inputs: list[GraphInput] = []
    nodes: list[OpNode] = []
    output: list[Any] = []
    output_is_tuple = False
    for node in ep.graph.nodes:
        val = node.meta.get("val")
        if node.op == "placeholder":
            if node.name in params:
                inputs.append(GraphInput(name=node.name, kind="parameter", target=params[node.name],
                                         meta=tensor_meta(val)))
            elif node.name in buffers:
                inputs.append(GraphInput(name=node.name, kind="buffer", target=buffers[node.name],
                                         meta=tensor_meta(val)))
            elif node.name in constants:
                inputs.append(GraphInput(name=node.name, kind="constant", target=constants[node.name],
                                         meta=tensor_meta(val)))
            else:
                idx = user_inputs.index(node.name) if node.name in user_inputs else len(inputs)
                arg_name = forward_args[idx] if idx < len(forward_args) else node.name
                literal = None
                if not isinstance(val, torch.Tensor):
                    raw = input_values[idx] if idx < len(input_values) else None
                    literal = raw if isinstance(raw, (int, float, bool, str)) or raw is None else repr(raw)
                inputs.append(GraphInput(name=node.name, kind="input", target=arg_name,
                                         meta=tensor_meta(val), value=literal))
        elif node.op == "call_function":
            if not _has_static_shape(val):
                loc = source_of(node, model_file)
                raise CaptureError(
                    f"data-dependent output shape: {target_name(node.target)} returns a tensor whose size depends on "
                    "tensor values (boolean-mask indexing, nonzero, unique, masked_select)", loc.line if loc else None,
                    "keep shapes static: torch.where(mask, x, 0) or a masked reduction instead of selecting elements")
            tuple_out = isinstance(val, (tuple, list))
            outs = [tensor_meta(v) for v in val] if tuple_out else [tensor_meta(val)]
            path, typ = module_of(node)
            nodes.append(OpNode(
                name=node.name, target=target_name(node.target),
                args=[encode_arg(a) for a in node.args],
                kwargs={k: encode_arg(v) for k, v in node.kwargs.items()}, attrs=schema_attrs(node),
                outputs=outs, tuple_output=tuple_out, source=source_of(node, model_file),
                module_path=path, module_type=typ))
        elif node.op == "output":
            outs = node.args[0]
            spec = ep.call_spec.out_spec
            # (a namedtuple, e.g. torch.return_types.max, counts: it is a tuple)
            output_is_tuple = spec is not None and isinstance(spec.type, type) and issubclass(spec.type, (tuple, list))
            output = [encode_arg(o) for o in (outs if isinstance(outs, (tuple, list)) else [outs])]
        else:
            raise CaptureError(f"unexpected graph node kind {node.op!r} ({node.name})")
    return OpGraph(model_file=model_file, model_class=model_class, inputs=inputs, nodes=nodes,
                   outputs=output, output_is_tuple=output_is_tuple)
