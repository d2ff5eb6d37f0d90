"""Kernel library: one generator module per family turns a KernelSpec into cuTile source (see base.py)."""

from __future__ import annotations

import importlib
from typing import Callable

from ..specs import KernelSpec
from .base import KernelSource, Unsupported
from .skeleton import skeleton_source

# family → module in this package defining `generate(spec) -> KernelSource`
FAMILY_MODULES = {
    "elementwise": "elementwise", "matmul": "matmul", "conv": "conv", "pool": "pool", "reduction": "reduction",
    "norm": "norm", "softmax": "softmax", "scan": "scan", "gather": "gather", "loss": "loss",
    "recurrent": "recurrent", "attention": "attention", "topk": "topk",
}


def _generator(family: str) -> Callable[[KernelSpec], KernelSource] | None:
    name = FAMILY_MODULES.get(family)
    if name is None:
        return None
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{name}":
            return None
        raise
    return getattr(module, "generate", None)


def generate_kernel(spec: KernelSpec) -> KernelSource:
    """The cuTile source for one spec; an explicit skeleton (never a PyTorch fallback) when none can be built."""
    if spec.unsupported:
        ops = ", ".join(r.target for r in spec.ops if r.category == "unsupported")
        return skeleton_source(spec, ops)
    gen = _generator(spec.family)
    if gen is None:
        return skeleton_source(spec, f"the {spec.family} family ({', '.join(spec.operations)})")
    try:
        return gen(spec)
    except Unsupported as exc:
        return skeleton_source(spec, exc.what)


__all__ = ["KernelSource", "Unsupported", "generate_kernel"]
