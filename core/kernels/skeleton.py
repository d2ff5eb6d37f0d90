"""Explicit, editable skeletons for specs no generator covers: they raise at launch, naming the op."""

from __future__ import annotations

import textwrap

from ..specs import KernelSpec
from .base import KernelSource


def skeleton_source(spec: KernelSpec, reason: str) -> KernelSource:
    params = ", ".join(t.name for t in spec.inputs)
    outs = ", ".join(f"{o.name}: shape={tuple(o.shape)} {o.dtype}" for o in spec.outputs)
    lines = ", ".join(map(str, spec.source_lines)) or "?"
    reference = textwrap.indent(spec.reference.rstrip("\n"), "# ")
    message = (f"kernel {spec.id}: no cuTile implementation for {reason} (model lines {lines}); "
               f"write {spec.id}_kernel and launch_{spec.id}, then remove this raise")
    code = f'''# UNSUPPORTED: {reason}. This is an editable skeleton, not a kernel: it raises at launch.
# Outputs: {outs}
# The PyTorch reference it must match:
{reference}


@ct.kernel
def {spec.id}_kernel(out, BLOCK: ct.Constant[int]):
    # Write the cuTile implementation of the reference above here.
    pid = ct.bid(0)
    ct.store(out, index=(pid,), tile=ct.zeros((BLOCK,), dtype=out.dtype))


def launch_{spec.id}({params}):
    raise NotImplementedError({message!r})
'''
    return KernelSource(spec_id=spec.id, family=spec.family, code=code, launch_name=f"launch_{spec.id}",
                        kernel_names=[f"{spec.id}_kernel"], skeleton=True, notes=[f"UNSUPPORTED: {reason}"])
