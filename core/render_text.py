"""Render a Decomposition in the Analyzer seed's exact text format (../shared/seeds/analyzer.md)."""

from __future__ import annotations

from .specs import Decomposition, KernelSpec


def _describe_parallel(d: Decomposition) -> str:
    parallel = [g for g in d.parallel_groups if len(g) > 1]
    if not parallel:
        return "none (every kernel depends on the one before it)"
    return "; ".join("{" + ", ".join(g) + "} are independent and can run concurrently" for g in parallel)


def _execution_order(d: Decomposition) -> str:
    return " -> ".join(" || ".join(g) for g in d.parallel_groups)


def render_kernel(k: KernelSpec) -> str:
    lines = ["---", f"KERNEL SPEC: {k.id}", f"Description: {k.description}",
             f"Operations: [{', '.join(k.operations)}]", "", "Inputs:"]
    lines += [f"  - {t.describe()}" for t in k.inputs] or ["  (none)"]
    lines += ["", "Outputs:"]
    lines += [f"  - {t.describe()}" for t in k.outputs] or ["  (none)"]
    lines += ["", f"Dependencies: [{', '.join(k.dependencies)}]" if k.dependencies else "Dependencies: none"]
    if k.shared_with:
        lines.append(f"Shared with: {', '.join(k.shared_with)}")
    lines += ["", "PyTorch Reference:", k.reference.rstrip("\n"), "", "Notes:"]
    notes = list(k.notes)
    if k.source_lines:
        notes.append(f"Source lines: {', '.join(map(str, k.source_lines))}")
    if k.fusion_rules:
        notes.append(f"Fusion rules: {', '.join(k.fusion_rules)}")
    lines += [f"- {n}" for n in notes] or ["- none"]
    lines.append("---")
    return "\n".join(lines)


def render_text(d: Decomposition) -> str:
    out = ["## Decomposition Summary", "", f"Total kernels: {len(d.kernels)}",
           f"Parallel groups: {_describe_parallel(d)}", f"Execution order: {_execution_order(d)}", "",
           "## Kernel Specifications", ""]
    for k in d.kernels:
        out += [render_kernel(k), ""]
    out += ["## Composition Notes", ""]
    out += d.composition_notes
    out += ["", "End-to-end PyTorch reference:", d.end_to_end_reference.rstrip("\n"), "", "## Completeness Check"]
    ops = [f"{e.op} (line {e.source_line})" if e.source_line else e.op for e in d.completeness if not e.glue]
    out.append(f"Original forward-pass ops: [{', '.join(ops)}]")
    covered = [f"{e.op}{'@' + str(e.source_line) if e.source_line else ''} -> "
               f"{e.kernel if not e.eliminated else '(result unused: eliminated)'}"
               for e in d.completeness if not e.glue]
    out.append(f"Covered by kernel specs: [{', '.join(covered)}]")
    glue = [e.op for e in d.completeness if e.glue]
    out.append(f"Glue (permitted rearrangement/allocation/concatenation, not kernels): [{', '.join(glue)}]")
    out.append("Gaps: NONE" if not d.gaps else "Gaps:")
    out += [f"  - {g}" for g in d.gaps]
    return "\n".join(out) + "\n"


def render_json(d: Decomposition) -> str:
    return d.model_dump_json(indent=2) + "\n"
