"""Forward-invariant steps of a decomposition: the values a forward computes from shapes and constants alone.

A glue step with no graph-value operands is an allocation (`arange`, `linspace`, `ones`, `eye`, `full`, ...): its
value depends only on constants of the captured program and on the device. A glue step or a kernel whose every
operand is such a value is invariant too (the base grid F.affine_grid builds from linspace, a causal mask built
with `torch.ones(T, T).tril()`, position ids, rotary tables of an `arange`). The composer computes these once per
device, on the first forward, instead of on every call: each kernel among them is a launch the forward no longer
pays for (a cuTile launch costs tens of microseconds on the host).

Forward inputs, parameters and buffers are never invariant (weights can be reloaded, buffers updated); a kernel
with a `prepare_<id>` step reads parameters and is left alone.
"""

from __future__ import annotations

from .opgraph import refs_in
from .specs import Decomposition


def invariant_steps(dec: Decomposition, prepared: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The schedule items ("glue:<node>" / "kernel:<id>") whose values are forward-invariant, in schedule order,
    when at least one of them is a kernel (hoisting glue alone saves no launch); otherwise []."""
    glue = {g.node: g for g in dec.glue}
    variant = {t.graph_value for t in dec.inputs} | {t.graph_value for t in dec.parameters}
    invariant: set[str] = set()
    steps: list[str] = []
    for item in dec.schedule:
        kind, key = item.split(":", 1)
        if kind == "glue":
            g = glue[key]
            operands = [dec.resolve(r) for r in refs_in(g.args) + refs_in(list(g.kwargs.values()))]
            if all(r in invariant for r in operands) and key not in variant:
                invariant.add(key)
                steps.append(item)
            continue
        k = dec.kernel(key)
        if key in prepared or k.unsupported:
            continue
        if all(t.role == "activation" and dec.resolve(t.graph_value or "") in invariant for t in k.inputs):
            invariant.update(t.graph_value for t in k.outputs if t.graph_value)
            steps.append(item)
    if not any(s.startswith("kernel:") for s in steps):
        return []
    return steps


def invariant_values_used(dec: Decomposition, steps: list[str]) -> list[str]:
    """The values the hoisted steps produce that the rest of the forward (or its return) reads, sorted."""
    hoisted = set(steps)
    glue = {g.node: g for g in dec.glue}
    produced: set[str] = set()
    for item in steps:
        kind, key = item.split(":", 1)
        if kind == "glue":
            produced.add(key)
        else:
            produced.update(t.graph_value for t in dec.kernel(key).outputs if t.graph_value)
    used: set[str] = set()
    for item in dec.schedule:
        if item in hoisted:
            continue
        kind, key = item.split(":", 1)
        if kind == "glue":
            g = glue[key]
            refs = refs_in(g.args) + refs_in(list(g.kwargs.values()))
        else:
            refs = [t.graph_value for t in dec.kernel(key).inputs if t.graph_value]
        used.update(dec.resolve(r) for r in refs)
    used.update(dec.resolve(o) for o in dec.outputs)
    return sorted(used & produced)
