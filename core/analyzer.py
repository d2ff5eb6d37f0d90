"""OpGraph → Decomposition: kernel specs with references, dependencies, schedule and completeness check.

Pure and deterministic: the same graph gives byte-identical specs (no timestamps, no absolute paths, no set
iteration order leaks into the output).
"""

from __future__ import annotations

import heapq
import os
import textwrap

from .catalog import OpInfo, base_op
from .fusion import FusionPlan, Group, fuse
from .opgraph import GraphInput, OpGraph, OpNode, node_refs
from .reference_code import call_source, py_name, uses_math
from .specs import CompletenessEntry, Decomposition, GlueStep, KernelSpec, OpRecord, TensorSpec

_FAMILY_TITLES = {
    "elementwise": "Elementwise", "matmul": "Matrix multiply", "conv": "Convolution", "pool": "Pooling",
    "reduction": "Reduction", "norm": "Normalization", "softmax": "Softmax", "scan": "Scan", "gather": "Gather",
    "loss": "Loss", "recurrent": "Recurrent", "attention": "Attention", "topk": "Top-k",
    "unsupported": "UNSUPPORTED",
}


class _Builder:
    def __init__(self, graph: OpGraph, plan: FusionPlan, model_name: str, sha256: str,
                 original: OpGraph | None = None):
        self.graph, self.plan = graph, plan
        self.original = original or graph
        self.model_name, self.sha256 = model_name, sha256
        self.nodes = {n.name: n for n in graph.nodes}
        self.order = {n.name: i for i, n in enumerate(graph.nodes)}
        self.inputs = {i.name: i for i in graph.inputs}
        self.names = self._value_names()
        self.live_glue = self._live_glue()
        self.live_alias_inputs = {self.plan.resolve(r) for n in self.live_glue if n in self.plan.alias
                                  for r in node_refs(self.nodes[n])}
        self.group_ids: dict[int, str] = {}
        self.dead: set[str] = set()
        self.value_kernel: dict[str, str] = {}  # value → id of the kernel that produces it

    # ---- naming -----------------------------------------------------------------------------------------------
    def _value_names(self) -> dict[str, str]:
        names: dict[str, str] = {}
        taken: set[str] = set()

        def claim(key: str, want: str) -> None:
            name, k = py_name(want), 2
            base = name
            while name in taken:
                name, k = f"{base}_{k}", k + 1
            taken.add(name)
            names[key] = name

        for inp in self.graph.inputs:
            claim(inp.name, inp.target if inp.kind == "input" else inp.target)
        for node in self.graph.nodes:
            claim(node.name, node.name)
        return names

    def kernel_id(self, group: Group, taken: set[str]) -> str:
        ops: list[str] = []
        for name in group.nodes:
            node = self.nodes[name]
            if node.target == "getitem" or self.plan.info[name].is_glue:  # R9's slices and cat name nothing
                continue
            op = base_op(node.op).lstrip("_")
            if not ops or ops[-1] != op:
                ops.append(op)
        base = "_".join(ops[:4]) + ("_etc" if len(ops) > 4 else "")
        anchor = self.nodes[group.anchor] if group.anchor else self.nodes[group.nodes[0]]
        if anchor.module_path:
            base = f"{anchor.module_path.replace('.', '_')}_{base}"
        base = py_name(base)
        kid, k = base, 2
        while kid in taken:
            kid, k = f"{base}_{k}", k + 1
        taken.add(kid)
        return kid

    # ---- values -----------------------------------------------------------------------------------------------
    def meta(self, value: str):
        if value in self.nodes:
            return self.nodes[value].meta
        inp = self.inputs.get(value)
        return inp.meta if inp else None

    def tensor_spec(self, value: str) -> TensorSpec:
        meta = self.meta(value)
        inp = self.inputs.get(value)
        role, source, val = "activation", None, None
        if inp is not None:
            role = {"input": "activation", "parameter": "parameter", "buffer": "buffer", "constant": "buffer"}[inp.kind]
            source = inp.target
            if meta is None:
                role, val = "scalar", inp.value
        return TensorSpec(name=self.names[value], shape=list(meta.shape) if meta else [],
                          dtype=meta.dtype if meta else type(val).__name__, role=role, source=source, value=val,
                          graph_value=value)

    def _live_glue(self) -> set[str]:
        """Glue steps the composed forward must execute. Identities (dropout in eval, asserts) never run;
        contiguous/clone run only where later glue needs their layout (a view after a transpose)."""
        alias_nodes = set(self.plan.alias)
        live = {n for n in self.plan.glue
                if n not in alias_nodes and self.plan.info[n].category != "identity"}
        stack = list(live)
        while stack:
            for ref in node_refs(self.nodes[stack.pop()]):
                if ref in alias_nodes and ref not in live and self.plan.info[ref].category != "identity":
                    live.add(ref)
                    stack.append(ref)
        return live

    def consumers_outside(self, value: str, members: set[str]) -> bool:
        resolved = self.plan.resolve(value)
        if resolved in self.plan.graph_outputs or resolved in self.live_alias_inputs:
            return True
        return any(c not in members for c in self.plan.uses.get(resolved, []))

    # ---- kernels ----------------------------------------------------------------------------------------------
    def build_kernel(self, group: Group, kid: str) -> KernelSpec:
        members = set(group.nodes)
        in_values: list[str] = []
        for name in group.nodes:
            for ref in node_refs(self.nodes[name]):
                value = self.plan.resolve(ref)
                if value not in members and value not in in_values:
                    in_values.append(value)
        out_values = [n for n in group.nodes
                      if not self.nodes[n].tuple_output and self.consumers_outside(n, members)]
        anchor = self.nodes[group.anchor] if group.anchor else None
        info: OpInfo = self.plan.info[group.anchor or group.nodes[0]]
        unsupported = any(self.plan.info[n].category == "unsupported" for n in group.nodes)
        family = "unsupported" if unsupported else ("attention" if "R8" in group.rules else info.family)
        records = [self.op_record(self.nodes[n]) for n in group.nodes if self.nodes[n].target != "getitem"]
        operations = [r.op for r in records]
        lines = sorted({r.source_line for r in records if r.source_line})
        inputs = [self.tensor_spec(v) for v in in_values]
        outputs = [self.tensor_spec(v) for v in out_values]
        for spec in outputs:
            node = self.nodes[spec.graph_value]
            if node.target == "getitem":
                spec.tuple_index = node.args[1]
        return KernelSpec(
            id=kid, family=family, description=self.describe(group, anchor, records, family),
            operations=operations, ops=records, inputs=inputs, outputs=outputs,
            reference=self.reference(kid, group, in_values, out_values, lines),
            notes=self.notes(group, anchor, records, inputs, outputs, unsupported),
            source_lines=lines, unsupported=unsupported, fusion_rules=sorted(group.rules))

    def is_dead(self, group: Group) -> bool:
        """A kernel none of whose results reaches the forward's outputs (e.g. an unused `y.sum()`)."""
        members = set(group.nodes)
        return not any(self.consumers_outside(n, members) for n in group.nodes if not self.nodes[n].tuple_output)

    def op_record(self, node: OpNode) -> OpRecord:
        info = self.plan.info[node.name]
        meta = node.meta or next((o for o in node.outputs if o is not None), None)
        return OpRecord(node=node.name, op=base_op(node.op), target=node.target, category=info.category,
                        attrs=node.attrs, inputs=[self.plan.resolve(r) for r in node_refs(node)],
                        args=_resolve_refs(node.args, self.plan.resolve),
                        kwargs={k: _resolve_refs(v, self.plan.resolve) for k, v in node.kwargs.items()},
                        output=list(meta.shape) if meta else [], output_dtype=meta.dtype if meta else "",
                        source_line=node.source.line if node.source else None)

    def describe(self, group: Group, anchor: OpNode | None, records: list[OpRecord], family: str) -> str:
        title = _FAMILY_TITLES.get(family, family)
        if anchor is None:
            ops = ", ".join(r.op for r in records)
            return f"{title} kernel fusing {len(records)} op(s) ({ops}) in one pass over the data."
        if "R8" in group.rules:
            ops = ", ".join(r.op for r in records if not self.plan.info[r.node].is_glue)
            heads = " reading grouped key/value heads in place (repeat_kv)" if any(
                r.op == "expand" for r in records) else ""
            return (f"{title} kernel: attention written by hand ({ops}) as one flash-attention kernel{heads}; the "
                    "scores are never written.")
        module = f" ({anchor.module_path}: {anchor.module_type})" if anchor.module_path else ""
        before = [r.op for r in records if self.order[r.node] < self.order[anchor.name]]
        after = [r.op for r in records if self.order[r.node] > self.order[anchor.name]]
        text = f"{title} kernel: {base_op(anchor.op)}{module}"
        if before:
            text += f" with fused prologue {', '.join(before)}"
        if after:
            text += f"{' and' if before else ' with'} fused epilogue {', '.join(after)}"
        return text + "."

    def reference(self, kid: str, group: Group, in_values: list[str], out_values: list[str],
                  lines: list[int]) -> str:
        names = dict(self.names)
        for alias, target in self.plan.alias.items():
            names[alias] = self.names[target]
        params = [self.names[v] for v in in_values]
        tensors = [self.names[v] for v in in_values if self.meta(v) is not None]
        if tensors:
            names["__device__"] = f"{tensors[0]}.device"
        body = []
        for name in group.nodes:
            node = self.nodes[name]
            body.append(f"    {self.names[name]} = {call_source(node, names)}")
        helpers = sorted({self.nodes[n].op for n in group.nodes if self.nodes[n].target.startswith("tilestudio.")})
        if helpers:
            from .recurrent_sources import SOURCES

            nested = [textwrap.indent(SOURCES[h].strip("\n"), "    ") for h in helpers]
            body = [line for block in nested for line in block.splitlines()] + body
        ret = ", ".join(self.names[v] for v in out_values)
        where = f" ({self.model_name}:{', '.join(map(str, lines))})" if lines else ""
        ops = " -> ".join(base_op(self.nodes[n].op) for n in group.nodes if self.nodes[n].target != "getitem")
        head = [f"def reference_{kid}({', '.join(params)}):",
                f'    """{ops}{where}: exact PyTorch equivalent for numerical validation."""',
                "    aten = torch.ops.aten"]
        text = "\n".join(head + body + [f"    return {ret}"])
        if uses_math(text):
            head.insert(2, "    import math")
            text = "\n".join(head + body + [f"    return {ret}"])
        return text + "\n"

    def notes(self, group: Group, anchor: OpNode | None, records: list[OpRecord], inputs: list[TensorSpec],
              outputs: list[TensorSpec], unsupported: bool) -> list[str]:
        notes: list[str] = []
        if unsupported:
            for r in records:
                if r.category == "unsupported":
                    notes.append(f"UNSUPPORTED: {r.target} has no kernel generator; the kernel library emits an "
                                 "editable skeleton that raises at launch, and the purity check reports it.")
        if anchor is not None:
            cat = self.plan.info[anchor.name].category
            attrs = {k: v for k, v in anchor.attrs.items() if v is not None}
            shown = ", ".join(f"{k}={v}" for k, v in attrs.items())
            if cat in ("matmul", "convolution", "attention"):
                notes.append("Accumulate in float32 on tensor cores (ct.mma); cast to the output dtype on store.")
            if cat == "convolution":
                notes.append(f"Convolution parameters: {shown}. Tile output positions (implicit GEMM).")
            elif cat in ("pooling", "reduction", "softmax", "scan", "normalization", "loss") and shown:
                notes.append(f"{base_op(anchor.op)} parameters: {shown}.")
            if cat in ("normalization", "softmax", "reduction", "loss"):
                notes.append("Compute statistics in float32 for numerical stability.")
        if "R6" in group.rules:
            notes.append("Eval-mode batch norm follows the conv/linear: fold it into the weights and bias once, "
                         "at construction (scale = gamma / sqrt(var + eps)).")
        if "R7" in group.rules:
            notes.append("The row statistic is broadcast back over the rows it reduces: keep each row in registers, "
                         "read it once and write the elementwise result once.")
        if "R9" in group.rules:
            notes.append("rotate_half(x) = cat(-x[..., H:], x[..., :H]) is a rotated read of x inside the kernel: "
                         "neither the halves nor the concatenation are written.")
        if "R2" in group.rules and len(outputs) > 1:
            extra = [o.name for o in outputs[:-1]]
            notes.append(f"Also writes {', '.join(extra)}: the pre-norm value is used again later (residual stream).")
        for spec in inputs:
            src = self.nodes.get(spec.graph_value or "")
            if src is not None and self.plan.info[src.name].category == "data_movement" \
                    and base_op(src.op) in ("permute", "transpose", "t", "expand", "slice", "select"):
                notes.append(f"Input {spec.name} is a strided view ({base_op(src.op)}): read it with its strides "
                             "or make it contiguous in glue.")
        return notes

    # ---- whole decomposition ----------------------------------------------------------------------------------
    def build(self) -> Decomposition:
        taken: set[str] = set()
        kernels: list[KernelSpec] = []
        for group in self.plan.groups:
            if self.is_dead(group):
                self.dead |= set(group.nodes)
                continue
            kid = self.kernel_id(group, taken)
            self.group_ids[group.gid] = kid
            spec = self.build_kernel(group, kid)
            kernels.append(spec)
            for out in spec.outputs:
                self.value_kernel[out.graph_value] = kid
            for n in group.nodes:
                self.value_kernel.setdefault(n, kid)
        glue = [self.glue_step(self.nodes[n]) for n in self.plan.glue if n in self.live_glue]
        schedule = self.schedule(kernels, glue)
        deps = {k.id: self.kernel_deps(k) for k in kernels}
        for k in kernels:
            k.dependencies = deps[k.id]
        self.shared(kernels)
        order = [s.split(":", 1)[1] for s in schedule if s.startswith("kernel:")]
        kernels.sort(key=lambda k: order.index(k.id))
        levels = self.levels(order, deps)
        completeness, gaps = self.completeness()
        used_inputs = {v for k in kernels for v in (t.graph_value for t in k.inputs)}
        used_inputs |= {r for g in glue for r in _refs(g.args) + _refs(list(g.kwargs.values()))}
        forward_inputs = [self.tensor_spec(i.name) for i in self.graph.inputs if i.kind == "input"]
        params = [self.tensor_spec(i.name) for i in self.graph.inputs
                  if i.kind != "input" and i.name in used_inputs]
        outputs = [self.plan.resolve(_refs(o)[0]) if _refs(o) else str(o) for o in self.graph.outputs]
        return Decomposition(
            model_file=self.model_name, model_class=self.graph.model_class, model_sha256=self.sha256,
            inputs=forward_inputs, parameters=params, outputs=outputs, output_is_tuple=self.graph.output_is_tuple,
            kernels=kernels, glue=glue, execution_order=order, parallel_groups=levels,
            composition_notes=self.composition_notes(kernels, outputs),
            end_to_end_reference=self.end_to_end(kernels, schedule, forward_inputs, params, outputs),
            completeness=completeness, gaps=gaps, schedule=schedule,
            aliases={a: t for a, t in sorted(self.plan.alias.items()) if a not in self.live_glue})

    def glue_step(self, node: OpNode) -> GlueStep:
        meta = node.meta
        return GlueStep(node=node.name, op=base_op(node.op), target=node.target, args=node.args, kwargs=node.kwargs,
                        output=list(meta.shape) if meta else [],
                        source_line=node.source.line if node.source else None)

    def schedule(self, kernels: list[KernelSpec], glue: list[GlueStep]) -> list[str]:
        """Kernels and glue interleaved in a topological order, ties broken by graph position."""
        producer: dict[str, str] = {}
        for k in kernels:
            for n in (r.node for r in k.ops):
                producer[n] = f"kernel:{k.id}"
            for o in k.outputs:
                producer[o.graph_value] = f"kernel:{k.id}"
        for g in glue:
            producer[g.node] = f"glue:{g.node}"
        items: dict[str, tuple[int, set[str]]] = {}
        for k in kernels:
            first = min(self.order[r.node] for r in k.ops)
            items[f"kernel:{k.id}"] = (first, {producer[t.graph_value] for t in k.inputs
                                               if t.graph_value in producer})
        for g in glue:
            node = self.nodes[g.node]
            items[f"glue:{g.node}"] = (self.order[g.node], {producer[r] for r in node_refs(node) if r in producer})
        for key, (_, deps) in items.items():
            deps.discard(key)
        indegree = {k: len(d) for k, (_, d) in items.items()}
        users: dict[str, list[str]] = {k: [] for k in items}
        for k, (_, deps) in items.items():
            for d in deps:
                users[d].append(k)
        ready = [(items[k][0], k) for k, n in indegree.items() if n == 0]
        heapq.heapify(ready)
        out: list[str] = []
        while ready:
            _, k = heapq.heappop(ready)
            out.append(k)
            for u in users[k]:
                indegree[u] -= 1
                if indegree[u] == 0:
                    heapq.heappush(ready, (items[u][0], u))
        if len(out) != len(items):
            raise RuntimeError("fusion produced a cyclic schedule")  # guarded by can_merge; a bug if reached
        return out

    def kernel_deps(self, k: KernelSpec) -> list[str]:
        deps: set[str] = set()
        stack = [t.graph_value for t in k.inputs]
        seen: set[str] = set()
        while stack:
            v = stack.pop()
            if v in seen or v is None:
                continue
            seen.add(v)
            if v in self.value_kernel and self.value_kernel[v] != k.id:
                deps.add(self.value_kernel[v])
            elif v in self.nodes and v not in self.value_kernel:
                stack.extend(self.plan.resolve(r) for r in node_refs(self.nodes[v]))
        return sorted(deps)

    def shared(self, kernels: list[KernelSpec]) -> None:
        readers: dict[str, list[str]] = {}
        for k in kernels:
            for t in k.inputs:
                if t.role == "activation":
                    readers.setdefault(t.graph_value, []).append(k.id)
        for k in kernels:
            others = {o for t in k.inputs if t.role == "activation" for o in readers[t.graph_value] if o != k.id}
            k.shared_with = sorted(others)

    @staticmethod
    def levels(order: list[str], deps: dict[str, list[str]]) -> list[list[str]]:
        level: dict[str, int] = {}
        for kid in order:
            level[kid] = 1 + max((level[d] for d in deps[kid]), default=-1)
        groups: dict[int, list[str]] = {}
        for kid in order:
            groups.setdefault(level[kid], []).append(kid)
        return [groups[i] for i in sorted(groups)]

    def completeness(self) -> tuple[list[CompletenessEntry], list[str]]:
        entries, gaps = [], []
        lowered: dict[str, list[str]] = {}  # captured node → kernels of the nodes it was lowered into
        for node in self.graph.nodes:
            if node.origin and node.name in self.plan.group_of and node.name in self.value_kernel:
                kid = self.value_kernel[node.name]
                if kid not in lowered.setdefault(node.origin, []):
                    lowered[node.origin].append(kid)
        for node in self.original.nodes:
            if node.name in lowered:
                line = node.source.line if node.source else None
                entries.append(CompletenessEntry(node=node.name, op=base_op(node.op), source_line=line,
                                                 kernel=", ".join(lowered[node.name])))
        for node in self.graph.nodes:
            if node.origin:
                continue
            kid = self.value_kernel.get(node.name) if node.name in self.plan.group_of else None
            line = node.source.line if node.source else None
            if node.target == "getitem" and kid is None:
                continue
            dead = node.name in self.dead
            entries.append(CompletenessEntry(node=node.name, op=base_op(node.op), source_line=line, kernel=kid,
                                             glue=kid is None and not dead, eliminated=dead))
            if self.plan.info[node.name].category == "unsupported":
                where = f" at line {line}" if line else ""
                gaps.append(f"{node.name} ({node.target}){where}: no kernel generator (kernel {kid} is an "
                            "editable skeleton)")
        return entries, gaps

    def composition_notes(self, kernels: list[KernelSpec], outputs: list[str]) -> list[str]:
        notes = []
        for k in kernels:
            srcs = []
            for t in k.inputs:
                if t.role != "activation":
                    continue
                origin = self.origin(t.graph_value)
                srcs.append(f"{t.name} ({origin})")
            outs = ", ".join(o.name for o in k.outputs)
            notes.append(f"{k.id}: reads {', '.join(srcs) if srcs else 'parameters only'}; writes {outs}.")
        readers: dict[str, list[str]] = {}
        for k in kernels:
            for t in k.inputs:
                if t.role == "activation":
                    readers.setdefault(t.name, []).append(k.id)
        for name, ks in sorted(readers.items()):
            if len(ks) > 1:
                notes.append(f"Shared tensor {name} is read by {', '.join(ks)}.")
        outs = ", ".join(f"{self.names.get(o, o)} ({self.origin(o)})" for o in outputs)
        notes.append(f"forward returns {outs}.")
        return notes

    def origin(self, value: str) -> str:
        value = self.plan.resolve(value)
        if value in self.inputs:
            inp = self.inputs[value]
            return "forward input" if inp.kind == "input" else f"{inp.kind} {inp.target}"
        if value in self.value_kernel:
            return f"from {self.value_kernel[value]}"
        node = self.nodes[value]
        srcs = [self.origin(r).removeprefix("from ") for r in node_refs(node)]
        return f"{base_op(node.op)}({', '.join(dict.fromkeys(srcs))})"

    def end_to_end(self, kernels: list[KernelSpec], schedule: list[str], inputs: list[TensorSpec],
                   params: list[TensorSpec], outputs: list[str]) -> str:
        by_id = {k.id: k for k in kernels}
        args = [t.name for t in inputs] + [t.name for t in params]
        tensors = [t.name for t in inputs + params if t.role != "scalar"]
        names = dict(self.names)
        for alias, target in self.plan.alias.items():
            if alias not in self.live_glue:
                names[alias] = self.names[target]
        if tensors:
            names["__device__"] = f"{tensors[0]}.device"
        lines = [f"def reference_end_to_end({', '.join(args)}):",
                 '    """The whole forward pass as the chain of kernel references and glue."""',
                 "    aten = torch.ops.aten"]
        for item in schedule:
            kind, key = item.split(":", 1)
            if kind == "kernel":
                k = by_id[key]
                outs = ", ".join(o.name for o in k.outputs)
                call = f"reference_{k.id}({', '.join(t.name for t in k.inputs)})"
                lines.append(f"    {outs} = {call}" if outs else f"    {call}")
            else:
                node = self.nodes[key]
                lines.append(f"    {self.names[key]} = {call_source(node, names)}")
        ret = ", ".join(names.get(o, o) for o in outputs)
        if self.graph.output_is_tuple and len(outputs) == 1:
            ret += ","
        lines.append(f"    return {ret}")
        text = "\n".join(lines)
        if uses_math(text):
            lines.insert(2, "    import math")
        return "\n".join(lines) + "\n"


def _resolve_refs(arg, resolve):
    if isinstance(arg, dict) and "ref" in arg:
        return {"ref": resolve(arg["ref"])}
    if isinstance(arg, list):
        return [_resolve_refs(a, resolve) for a in arg]
    return arg


def _refs(arg) -> list[str]:
    from .opgraph import refs_in

    return refs_in(arg)


def analyze_graph(graph: OpGraph, model_name: str | None = None, sha256: str = "") -> Decomposition:
    """The Analyzer proper: fuse, then build specs. `model_name` is what appears in the specs (a file name)."""
    from .lowering import lower

    lowered = lower(graph)
    plan = fuse(lowered)
    name = model_name or os.path.basename(graph.model_file)
    return _Builder(lowered, plan, name, sha256, original=graph).build()


__all__ = ["analyze_graph", "GraphInput"]
