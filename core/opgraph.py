"""The captured forward pass: a JSON-serialisable op graph with concrete shapes, dtypes and source lines.

Built in the child process from a `torch.export` graph (see capture.py) and consumed by the analyzer in the
parent. Arguments are encoded so that the graph survives a JSON round trip and can be executed again (verify):

    {"ref": name}            the value produced by node/input `name`
    {"dtype": "float32"}     a torch.dtype
    {"device": "cpu"}        a torch.device
    {"float": "inf"}         a non-finite float literal
    {"layout"/"memory_format": "..."}
    [..] / (as list)         lists and tuples
    int, float, bool, str, None as themselves
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr


class SourceLoc(BaseModel):
    file: str
    line: int
    code: str = ""

    def short(self) -> str:
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"


class TensorMeta(BaseModel):
    shape: list[int]
    dtype: str  # torch dtype name without the "torch." prefix, e.g. "float32"


class GraphInput(BaseModel):
    name: str  # the graph's placeholder name (unique within the graph)
    kind: Literal["input", "parameter", "buffer", "constant"]
    target: str  # forward argument name, or module path such as "layers.0.conv.weight"
    meta: TensorMeta | None = None  # None for non-tensor forward arguments
    value: Any = None  # the literal for non-tensor forward arguments


class OpNode(BaseModel):
    name: str
    target: str  # "aten.conv2d.default", "getitem", "tilestudio.lstm_layer", ...
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    # Non-tensor arguments by schema name, defaults filled in (stride, padding, dim, keepdim, approximate, ...)
    attrs: dict[str, Any] = Field(default_factory=dict)
    # One entry per output: a single-output op has one; a tuple-returning op (lstm, var_mean, max.dim) has one
    # per element, None where that element is not a tensor.
    outputs: list[TensorMeta | None] = Field(default_factory=list)
    tuple_output: bool = False
    source: SourceLoc | None = None
    module_path: str | None = None  # innermost nn.Module path, e.g. "layers.0.conv"
    module_type: str | None = None  # e.g. "Conv2d"
    origin: str | None = None  # for nodes made by lowering: the captured node they implement (e.g. "lstm")

    @property
    def op(self) -> str:
        """The op's short name: 'conv2d' for 'aten.conv2d.default'."""
        parts = self.target.split(".")
        return parts[1] if len(parts) >= 3 and parts[0] == "aten" else parts[-1]

    @property
    def meta(self) -> TensorMeta | None:
        return self.outputs[0] if self.outputs and not self.tuple_output else None


class OpGraph(BaseModel):
    model_file: str
    model_class: str
    inputs: list[GraphInput]
    nodes: list[OpNode]
    outputs: list[Any]  # encoded args (refs), one per forward output (a single output is a list of one)
    output_is_tuple: bool = False
    _node_index: dict[str, OpNode] | None = PrivateAttr(default=None)

    def node(self, name: str) -> OpNode:
        if self._node_index is None:
            self._node_index = {n.name: n for n in self.nodes}
        return self._node_index[name]

    def input(self, name: str) -> GraphInput | None:
        for i in self.inputs:
            if i.name == name:
                return i
        return None


def refs_in(arg: Any) -> list[str]:
    """Names referenced by an encoded argument, in order of appearance (duplicates kept)."""
    out: list[str] = []
    _collect_refs(arg, out)
    return out


def _collect_refs(arg: Any, out: list[str]) -> None:
    if isinstance(arg, dict):
        if "ref" in arg:
            out.append(arg["ref"])
    elif isinstance(arg, (list, tuple)):
        for a in arg:
            _collect_refs(a, out)


def node_refs(node: OpNode) -> list[str]:
    out: list[str] = []
    _collect_refs(node.args, out)
    _collect_refs(list(node.kwargs.values()), out)
    return out
