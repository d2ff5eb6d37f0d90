"""The Analyzer's output: kernel specs (the data contract between analyzer, kernel library, composer and GUI).

Follows ../shared/seeds/analyzer.md: each fusion group is a `KernelSpec` with inputs/outputs, dependencies, a
self-contained PyTorch reference and notes; a `Decomposition` adds execution order, parallel groups, composition
notes and the completeness check.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

SPEC_FORMAT_VERSION = 1

Role = Literal["activation", "parameter", "buffer", "scalar"]


class TensorSpec(BaseModel):
    name: str  # a Python identifier: the reference function's parameter / return name
    shape: list[int]
    dtype: str
    role: Role = "activation"
    source: str | None = None  # module path of a parameter/buffer ("layers.0.conv.weight") or forward arg name
    value: Any = None  # the literal of a scalar input
    graph_value: str | None = None  # the op-graph value this tensor is (for glue, verify and the composer)
    tuple_index: int | None = None  # for an output that is element k of a tuple-returning op (max.dim, lstm, ...)

    def describe(self) -> str:
        if self.role == "scalar":
            return f"{self.name}: scalar {self.dtype} = {self.value!r}"
        shape = ", ".join(str(d) for d in self.shape)
        if len(self.shape) == 1:
            shape += ","
        extra = f", role={self.role}" if self.role != "activation" else ""
        src = f", source={self.source}" if self.source and self.role in ("parameter", "buffer") else ""
        return f"{self.name}: shape=({shape}), dtype={self.dtype}{extra}{src}"


class OpRecord(BaseModel):
    """One captured op inside a kernel, with what the kernel library needs to know about it."""

    node: str  # op-graph node name
    op: str  # short op name, e.g. "conv2d", "gelu"
    target: str  # full target, e.g. "aten.conv2d.default"
    category: str  # catalog category
    attrs: dict[str, Any] = Field(default_factory=dict)  # stride/padding/dims/approximate/...
    inputs: list[str] = Field(default_factory=list)  # graph values it reads
    # The exact call: positional args and kwargs as encoded in the op graph ({"ref": value} for tensors, with
    # identity glue already resolved), in schema order.
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    output_dtype: str = ""
    output: list[int] = Field(default_factory=list)  # output shape (first tensor output)
    source_line: int | None = None


class KernelSpec(BaseModel):
    id: str
    family: str  # kernel-library family: elementwise, matmul, conv, pool, reduction, norm, softmax, scan, ...
    description: str
    operations: list[str]
    ops: list[OpRecord]
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    dependencies: list[str] = Field(default_factory=list)
    shared_with: list[str] = Field(default_factory=list)
    reference: str  # source of `def reference_<id>(...)`: self-contained, imports included
    notes: list[str] = Field(default_factory=list)
    source_lines: list[int] = Field(default_factory=list)
    unsupported: bool = False
    fusion_rules: list[str] = Field(default_factory=list)  # which rules built this group (R1..R8)

    @property
    def reference_name(self) -> str:
        return f"reference_{self.id}"


class GlueStep(BaseModel):
    """A permitted non-kernel step of the forward path (view/reshape/permute/cat/allocation)."""

    node: str
    op: str
    target: str
    args: list[Any]
    kwargs: dict[str, Any] = Field(default_factory=dict)
    output: list[int] = Field(default_factory=list)
    source_line: int | None = None


class CompletenessEntry(BaseModel):
    node: str
    op: str
    source_line: int | None = None
    kernel: str | None = None  # covering kernel id; None for glue
    glue: bool = False
    eliminated: bool = False  # computed but never used by the forward's outputs: dead code, no kernel


class Decomposition(BaseModel):
    format_version: int = SPEC_FORMAT_VERSION
    model_file: str  # as given by the user (kept relative when it was)
    model_class: str
    model_sha256: str
    inputs: list[TensorSpec]  # forward inputs
    parameters: list[TensorSpec]  # parameters and buffers used by the forward pass
    outputs: list[str]  # graph values returned by forward, in order
    output_is_tuple: bool = False
    kernels: list[KernelSpec]
    glue: list[GlueStep]
    execution_order: list[str]
    parallel_groups: list[list[str]]
    composition_notes: list[str]
    end_to_end_reference: str
    completeness: list[CompletenessEntry]
    gaps: list[str]  # "node (op) at line N: unsupported" entries; empty means "Gaps: NONE"
    # The op graph in execution order: kernels and glue steps interleaved, as the composer emits them.
    schedule: list[str] = Field(default_factory=list)  # "kernel:<id>" | "glue:<node>"
    # Identity glue (dropout in eval, contiguous, clone, detach): value → the value it stands for. These steps are
    # not emitted; consumers read the value directly.
    aliases: dict[str, str] = Field(default_factory=dict)

    def resolve(self, value: str) -> str:
        return self.aliases.get(value, value)

    def kernel(self, kernel_id: str) -> KernelSpec:
        for k in self.kernels:
            if k.id == kernel_id:
                return k
        raise KeyError(kernel_id)
