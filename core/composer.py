"""Compose ONE runnable .py from a Decomposition and its kernel sources (../shared/seeds/composer.md).

Sections, in this fixed order: imports; one banner section per kernel in execution order (provenance comment,
kernel, launch wrapper); the composed entry point (`ModelCuTile`, sharing the original model's weights, plus
`composed_function`); the user's file copied byte-for-byte between marker comments; `pytorch_reference`, which
only calls into it; the `__main__` validation block. The text is built from buffers with a line map
(section → line range) so the GUI can colour a kernel's lines everywhere.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field

from pydantic import BaseModel

from .invariant import invariant_steps, invariant_values_used
from .kernels.base import KernelSource
from .opgraph import refs_in
from .specs import Decomposition

ORIGINAL_START = "# ---- Original user-supplied code (copied verbatim, zero modifications) ----"
ORIGINAL_END = "# ---------------------------------------------------------------------------"
BANNER = "# " + "=" * 60
ALLOWED_IMPORTS = ("import cuda.tile as ct", "import torch", "import torch.nn as nn",
                   "import torch.nn.functional as F", "import numpy as np", "import math")


class ComposedFile(BaseModel):
    text: str
    line_map: dict[str, tuple[int, int]]  # "kernel:<id>" / "composed" / "original" / ... → (first, last), 1-based
    launch_lines: dict[str, int]  # kernel id → line of its launch in the forward
    entry_class: str
    original_sha256: str


@dataclass
class _Buffer:
    lines: list[str] = field(default_factory=list)
    sections: dict[str, tuple[int, int]] = field(default_factory=dict)

    def add(self, text: str) -> None:
        self.lines.extend(text.split("\n"))

    def section(self, key: str, text: str) -> None:
        start = len(self.lines) + 1
        self.add(text)
        self.sections[key] = (start, len(self.lines))

    def blank(self, n: int = 2) -> None:
        self.lines.extend([""] * n)


def _user_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _free_name(want: str, taken: set[str]) -> str:
    name, k = want, 2
    while name in taken:
        name, k = f"{want}{k}", k + 1
    taken.add(name)
    return name


def attr_path(root: str, path: str) -> str:
    """`model.layers[0].conv.weight` for module path `layers.0.conv.weight`."""
    out = root
    for part in path.split("."):
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


def compose_file(dec: Decomposition, sources: dict[str, KernelSource], original: str) -> ComposedFile:
    taken = _user_names(original)
    entry = _free_name("ModelCuTile", taken)
    composed_fn = _free_name("composed_function", taken)
    reference_fn = _free_name("pytorch_reference", taken)
    sha = hashlib.sha256(original.encode("utf-8")).hexdigest()
    buf = _Buffer()
    buf.section("header", "\n".join([
        f'"""cuTile implementation of {dec.model_class} from {dec.model_file}, composed by TileStudio.',
        "",
        f"Kernels ({len(dec.kernels)}, in execution order): {', '.join(dec.execution_order)}.",
        f"Run it on a CUDA GPU: python {dec.model_file.removesuffix('.py')}_cutile.py",
        '"""',
        f"# tilestudio: model={dec.model_file} class={dec.model_class} sha256={sha}",
        *ALLOWED_IMPORTS,
    ]))
    for i, kid in enumerate(dec.execution_order, 1):
        spec = dec.kernel(kid)
        src = sources[kid]
        lines = ", ".join(map(str, spec.source_lines)) or "-"
        head = [BANNER, f"# Kernel {i}: {kid}", BANNER,
                f"# spec: {kid} | family: {spec.family} | operations: [{', '.join(spec.operations)}]",
                f"# source lines: {dec.model_file}:{lines}"]
        if src.skeleton:
            head.append("# UNSUPPORTED: skeleton only; the launch raises until the kernel is written")
        buf.blank()
        buf.section(f"kernel:{kid}", "\n".join(head + [src.code.strip("\n")]))
    buf.blank()
    composed_text, launch_offsets = _entry_point(dec, sources, entry, composed_fn)
    start = len(buf.lines) + 1
    buf.section("composed", composed_text)
    launch_lines = {k: start + off for k, off in launch_offsets.items()}
    buf.blank()
    body = original if original.endswith("\n") else original + "\n"
    buf.section("original", ORIGINAL_START + "\n" + body + ORIGINAL_END)
    buf.blank()
    buf.section("reference", _reference(dec, reference_fn))
    buf.blank()
    buf.section("main", _main(dec, entry, composed_fn, reference_fn))
    text = "\n".join(buf.lines) + "\n"
    return ComposedFile(text=text, line_map=buf.sections, launch_lines=launch_lines, entry_class=entry,
                        original_sha256=sha)


def _input_args(dec: Decomposition) -> list[str]:
    return [t.name for t in dec.inputs]


def _entry_point(dec: Decomposition, sources: dict[str, KernelSource], entry: str,
                 composed_fn: str) -> tuple[str, dict[str, int]]:
    names: dict[str, str] = {}
    params = {t.graph_value: t for t in dec.parameters}
    for t in dec.inputs:
        names[t.graph_value] = t.name
    for gv, t in params.items():
        names[gv] = attr_path("m", t.source)
    for k in dec.kernels:
        for t in k.inputs + k.outputs:
            names.setdefault(t.graph_value, t.name)
    for g in dec.glue:
        names.setdefault(g.node, _local(g.node))
    for alias, target in dec.aliases.items():
        names[alias] = names.get(target, _local(target))
    if dec.inputs:
        names["__device__"] = f"{dec.inputs[0].name}.device"

    lines = [BANNER, "# Composed Function", BANNER,
             f"class {entry}(nn.Module):",
             f'    """cuTile forward of {dec.model_class}: every FLOP runs in a cuTile kernel; this class only',
             '    allocates, rearranges and launches. It shares the weights of the original model."""',
             "",
             "    def __init__(self, model):",
             "        super().__init__()",
             "        self.model = model"]
    prepared = [k for k in dec.kernels if sources[k.id].prepare_name]
    if prepared:
        lines.append("        m = model")
        lines.append("        with torch.no_grad():  # constant precomputation, once")
        for k in prepared:
            args = ", ".join(attr_path("m", t.source) for t in k.inputs if t.role in ("parameter", "buffer"))
            lines.append(f"            self.prepared_{k.id} = {sources[k.id].prepare_name}({args})")
    hoisted = invariant_steps(dec, {k.id for k in prepared})
    if hoisted:
        lines.append("        self.invariant = None  # (device, values) of the forward-invariant steps, on first use")
    lines += ["", f"    def forward(self, {', '.join(_input_args(dec))}):", "        m = self.model",
              "        aten = torch.ops.aten"]
    launch_offsets: dict[str, int] = {}
    glue = {g.node: g for g in dec.glue}

    def emit(item: str, indent: str) -> None:
        kind, key = item.split(":", 1)
        if kind == "glue":
            lines.append(f"{indent}{names[key]} = {_glue_call(glue[key], names)}")
            return
        k = dec.kernel(key)
        src = sources[key]
        if src.prepare_name:
            args = [names[t.graph_value] for t in k.inputs if t.role in ("activation", "scalar")]
            args.append(f"*self.prepared_{k.id}")
        else:
            args = [names[t.graph_value] for t in k.inputs]
        outs = ", ".join(names[o.graph_value] for o in k.outputs)
        launch_offsets[key] = len(lines)
        lines.append(f"{indent}{outs} = {src.launch_name}({', '.join(args)})")

    if hoisted:
        device = names.get("__device__")
        values = [names[v] for v in invariant_values_used(dec, hoisted)]
        packed = ", ".join(values) + ("," if len(values) == 1 else "")
        stale = "self.invariant is None" + (f" or self.invariant[0] != {device}" if device else "")
        lines.append("        # forward-invariant values (from shapes and constants only): computed once per device")
        lines.append(f"        if {stale}:")
        for item in hoisted:
            emit(item, " " * 12)
        lines.append(f"            self.invariant = ({device}, ({packed}))")
        lines.append(f"        {packed} = self.invariant[1]")
    for item in dec.schedule:
        if item not in hoisted:
            emit(item, " " * 8)
    ret = ", ".join(names.get(o, o) for o in dec.outputs)
    if dec.output_is_tuple and len(dec.outputs) == 1:
        ret += ","
    lines.append(f"        return {ret}")
    args = ", ".join(_input_args(dec))
    lines += ["", "", f"def {composed_fn}({args}{', ' if args else ''}model):",
              f'    """The composed cuTile forward for function-style use: {composed_fn}(inputs..., model)."""',
              f"    return {entry}(model)({args})"]
    return "\n".join(lines), launch_offsets


def _local(name: str) -> str:
    from .reference_code import py_name

    return py_name(name)


def _glue_call(g, names: dict[str, str]) -> str:
    from .opgraph import OpNode
    from .reference_code import glue_source

    node = OpNode(name=g.node, target=g.target, args=g.args, kwargs=g.kwargs)
    missing = [r for r in refs_in(g.args) + refs_in(list(g.kwargs.values())) if r not in names]
    for r in missing:
        names[r] = _local(r)
    return glue_source(node, names, g.output)


def _reference(dec: Decomposition, reference_fn: str) -> str:
    args = ", ".join(_input_args(dec))
    return "\n".join([
        BANNER, "# PyTorch Reference (original PyTorch code, copied verbatim above)", BANNER,
        f"def {reference_fn}({args}{', ' if args else ''}model):",
        '    """Calls the original implementation directly for numerical validation."""',
        "    model.eval()",
        "    with torch.no_grad():",
        f"        return model({args})",
    ])


def _main(dec: Decomposition, entry: str, composed_fn: str, reference_fn: str) -> str:
    return "\n".join([
        BANNER, "# Validation", BANNER,
        'if __name__ == "__main__":',
        "    torch.manual_seed(0)",
        "    # float32 reference in float32 proper (PyTorch's default runs float32 convolutions in TF32)",
        "    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False",
        "    # Create test inputs",
        '    init_inputs = get_init_inputs() if "get_init_inputs" in globals() else []',
        f"    model = {dec.model_class}(*init_inputs).cuda().eval()",
        '    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in get_inputs()]',
        "",
        "    # Run PyTorch reference",
        f"    expected = {reference_fn}(*inputs, model)",
        "",
        "    # Run composed cuTile implementation",
        "    with torch.no_grad():",
        f"        actual = {entry}(model)(*inputs)",
        "    torch.cuda.synchronize()",
        "",
        "    # Validate",
        "    expected_list = list(expected) if isinstance(expected, (tuple, list)) else [expected]",
        "    actual_list = list(actual) if isinstance(actual, (tuple, list)) else [actual]",
        "    is_close = len(actual_list) == len(expected_list)",
        "    max_diff = 0.0",
        "    for a, e in zip(actual_list, expected_list):",
        "        if a.shape != e.shape or a.dtype != e.dtype:",
        "            is_close = False",
        '            max_diff = float("inf")',
        "        elif e.is_floating_point():",
        "            is_close = is_close and torch.allclose(a, e, atol=1e-2, rtol=1e-2)",
        "            max_diff = max(max_diff, (a - e).abs().max().item() if e.numel() else 0.0)",
        "        else:",
        "            is_close = is_close and torch.equal(a, e)",
        "            max_diff = max(max_diff, (a.double() - e.double()).abs().max().item() if e.numel() else 0.0)",
        "    if is_close:",
        '        print(f"PASS - max diff: {max_diff}")',
        "    else:",
        '        print(f"FAIL - max diff: {max_diff}")',
        "        for i, (a, e) in enumerate(zip(actual_list, expected_list)):",
        '            print(f"Expected shape: {e.shape}, dtype: {e.dtype}")',
        '            print(f"Actual shape: {a.shape}, dtype: {a.dtype}")',
        "            # Only print tensor contents on failure, never on success",
        '            print(f"output {i}: expected {e.flatten()[:8].tolist()} actual {a.flatten()[:8].tolist()}")',
        "    raise SystemExit(0 if is_close else 1)",
    ])


def extract_original(text: str) -> str | None:
    """The verbatim block between the markers (None if the markers are missing)."""
    start = text.find(ORIGINAL_START + "\n")
    if start < 0:
        return None
    start += len(ORIGINAL_START) + 1
    end = text.find("\n" + ORIGINAL_END, start - 1)
    if end < 0:
        return None
    return text[start:end + 1]


HEADER_RE = re.compile(r"^# tilestudio: model=(?P<model>\S+) class=(?P<cls>\S+) sha256=(?P<sha>[0-9a-f]{64})$",
                       re.MULTILINE)


def compose_model(path: str, dec: Decomposition, edits: dict[str, str] | None = None) -> ComposedFile:
    """Generate every kernel (or take the user's edited code) and compose the file."""
    from .kernels import generate_kernel

    with open(path, encoding="utf-8") as f:
        original = f.read()
    sources = {}
    for k in dec.kernels:
        src = generate_kernel(k)
        if edits and k.id in edits:
            src = src.model_copy(update={"code": edits[k.id]})
        sources[k.id] = src
    return compose_file(dec, sources, original)
