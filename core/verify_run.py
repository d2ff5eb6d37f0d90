"""Child side of `analyze --verify`: build the real model on the CPU and check the kernel references against it.

Three comparisons, in this order:
1. each kernel's reference, run in schedule order on the chain's own values, against the same values computed by
   executing the captured graph node by node (names the first kernel whose reference diverges);
2. the shipped `reference_end_to_end` source, executed as text, against `Model.forward` (eager);
3. the chain's final values against `Model.forward`.
"""

from __future__ import annotations

import json
import math
from typing import Any

import torch

from .errors import ErrorInfo, UserError
from .graph_exec import run_node
from .lowering import lower
from .opgraph import OpGraph
from .specs import Decomposition
from .usercode import build_model, call_user, load_module, pick_model_class

SEED = 0


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    if dtype == torch.float64:
        return 1e-9, 1e-9
    return 1e-4, 1e-5  # rtol, atol: references run the very same ATen ops, so differences are reassociation only


def compare(actual: Any, expected: Any) -> tuple[bool, float, str]:
    """(ok, max abs diff, note) for two values (tensors, scalars, or nested tuples of them)."""
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            return False, math.inf, f"expected a sequence of {len(expected)}"
        worst = (True, 0.0, "")
        for a, e in zip(actual, expected):
            ok, diff, note = compare(a, e)
            worst = (worst[0] and ok, max(worst[1], diff), note or worst[2])
        return worst
    if not isinstance(expected, torch.Tensor):
        ok = actual == expected
        return bool(ok), 0.0 if ok else math.inf, "" if ok else f"{actual!r} != {expected!r}"
    if not isinstance(actual, torch.Tensor):
        return False, math.inf, f"expected a tensor, got {type(actual).__name__}"
    if actual.shape != expected.shape:
        return False, math.inf, f"shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    if actual.dtype != expected.dtype:
        return False, math.inf, f"dtype {actual.dtype} != {expected.dtype}"
    if not expected.is_floating_point() and not expected.is_complex():
        ok = bool(torch.equal(actual, expected))
        diff = 0.0 if ok else float((actual.double() - expected.double()).abs().max())
        return ok, diff, ""
    rtol, atol = tolerance(expected.dtype)
    ok = bool(torch.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True))
    finite = torch.isfinite(expected) & torch.isfinite(actual)
    diff = float((actual[finite].double() - expected[finite].double()).abs().max()) if finite.any() else 0.0
    return ok, diff, ""


class _Resolving(dict):
    """The chain's values, where an identity-glue value reads as the value it stands for."""

    def __init__(self, values: dict[str, Any], aliases: dict[str, str]):
        super().__init__(values)
        self.aliases = aliases

    def __missing__(self, key: str) -> Any:
        if key in self.aliases:
            return self[self.aliases[key]]
        raise KeyError(key)


def _clone(values: list[Any]) -> list[Any]:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def verify_file(path: str, class_name: str | None, bundle_path: str) -> dict:
    with open(bundle_path, encoding="utf-8") as f:
        bundle = json.load(f)
    graph = OpGraph.model_validate(bundle["graph"])
    dec = Decomposition.model_validate(bundle["decomposition"])
    module = load_module(path)
    cls = pick_model_class(module, path, class_name)
    torch.manual_seed(SEED)
    model, inputs = build_model(module, path, cls)
    model.eval()

    with torch.no_grad():
        expected = call_user(lambda: model(*_clone(inputs)), path, "forward() raised on the real inputs")
        env = _graph_inputs(graph, model, inputs, path)
        truth = dict(env)
        for node in graph.nodes:
            truth[node.name] = run_node(node, truth)

        namespace: dict[str, Any] = {"torch": torch, "math": math}
        for k in dec.kernels:
            exec(compile(k.reference, f"<reference_{k.id}>", "exec"), namespace)  # noqa: S102 - our own codegen
        exec(compile(dec.end_to_end_reference, "<reference_end_to_end>", "exec"), namespace)  # noqa: S102

        kernels_report, first_bad = [], None
        chain = dict(env)
        nodes = {n.name: n for n in lower(graph).nodes}  # the schedule's glue may come from lowering
        for item in dec.schedule:
            kind, key = item.split(":", 1)
            if kind == "glue":
                chain[key] = run_node(nodes[key], _Resolving(chain, dec.aliases))
                continue
            k = dec.kernel(key)
            args = [chain[t.graph_value] for t in k.inputs]
            result = namespace[k.reference_name](*args)
            outs = result if len(k.outputs) != 1 else (result,)
            entry = {"id": k.id, "ok": True, "max_abs_diff": 0.0, "note": ""}
            for spec, value in zip(k.outputs, outs):
                chain[spec.graph_value] = value
                if spec.graph_value in truth:
                    ok, diff, note = compare(value, truth[spec.graph_value])
                    entry["ok"] &= ok
                    entry["max_abs_diff"] = max(entry["max_abs_diff"], diff)
                    entry["note"] = entry["note"] or note
            kernels_report.append(entry)
            if not entry["ok"] and first_bad is None:
                first_bad = k.id

        expected_list = list(expected) if dec.output_is_tuple else [expected]
        chain_out = [chain[v] for v in dec.outputs]
        args = [env[t.graph_value] for t in dec.inputs] + [env[t.graph_value] for t in dec.parameters]
        e2e = namespace["reference_end_to_end"](*_clone(args))
        e2e_list = list(e2e) if dec.output_is_tuple else [e2e]
        outputs_report = []
        for i, exp in enumerate(expected_list):
            ok_c, diff_c, note_c = compare(chain_out[i], exp) if i < len(chain_out) else (False, math.inf, "missing")
            ok_e, diff_e, note_e = compare(e2e_list[i], exp) if i < len(e2e_list) else (False, math.inf, "missing")
            outputs_report.append({"index": i, "ok": ok_c and ok_e, "max_abs_diff": max(diff_c, diff_e),
                                   "note": note_c or note_e})
    ok = first_bad is None and all(o["ok"] for o in outputs_report) and len(expected_list) == len(dec.outputs)
    return {"ok": ok, "first_divergence": first_bad, "kernels": kernels_report, "outputs": outputs_report}


def _graph_inputs(graph: OpGraph, model: torch.nn.Module, inputs: list[Any], path: str) -> dict[str, Any]:
    state: dict[str, Any] = {}
    state.update(dict(model.named_parameters(remove_duplicate=False)))
    state.update(dict(model.named_buffers(remove_duplicate=False)))
    constants: dict[str, Any] | None = None
    env: dict[str, Any] = {"__device__": torch.device("cpu")}
    user = iter(_clone(inputs))
    for inp in graph.inputs:
        if inp.kind == "input":
            env[inp.name] = next(user)
        elif inp.kind in ("parameter", "buffer"):
            if inp.target not in state:
                raise UserError(ErrorInfo(kind="capture", file=path,
                                          message=f"{inp.kind} {inp.target} is not on the real model"))
            env[inp.name] = state[inp.target].detach()
        else:
            if constants is None:
                ep = torch.export.export(model, tuple(_clone(inputs)), strict=False)
                constants = dict(ep.constants)
            env[inp.name] = constants[inp.target]
    return env
