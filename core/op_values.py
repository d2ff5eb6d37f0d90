"""What the pattern matchers over a few ops (rotate_half.py, repeat_kv.py) read about a value, from either side of
the kernel library's boundary: op-graph nodes (fusion) or a spec's op records and inputs (the generators)."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .specs import KernelSpec


class Value(NamedTuple):
    """The op producing a value ("" for a graph or kernel input), that op's arguments (refs as {"ref": name}) and
    the value's shape."""

    op: str
    args: list[Any]
    shape: list[int]


def ref(arg: Any) -> str | None:
    """The value an argument refers to, or None for a literal."""
    return arg["ref"] if isinstance(arg, dict) and "ref" in arg else None


def spec_lookup(spec: KernelSpec) -> Callable[[str], Value | None]:
    """A matcher's lookup over one kernel spec: its op records, then its tensor inputs."""
    records = {r.node: r for r in spec.ops}
    shapes = {(t.graph_value or t.name): list(t.shape) for t in spec.inputs if t.role != "scalar"}

    def lookup(name: str) -> Value | None:
        r = records.get(name)
        if r is not None:
            return Value(r.op, r.args, r.output)
        return Value("", [], shapes[name]) if name in shapes else None

    return lookup
