"""What every loss generator shares: the bound arguments and operand shapes of the loss op (`LossPlan`), literal and
attribute helpers, and the sources of operand values inside a tile (`ValueSource`: prologue results or loads;
`CoordLoader`: loads by coordinates)."""

from __future__ import annotations

from ..specs import KernelSpec, OpRecord, TensorSpec
from .base import Unsupported
from .expr import bind_args, float_literal, scalar_value
from .indexing import SideLoader, elementwise, input_args, is_ref

I = "    "
# tensor operands of each loss, by schema name, in the order the formulas use them
OPERANDS = {
    "mse_loss": ("self", "target"), "l1_loss": ("self", "target"), "smooth_l1_loss": ("self", "target"),
    "huber_loss": ("self", "target"), "kl_div": ("self", "target"), "hinge_embedding_loss": ("self", "target"),
    "binary_cross_entropy": ("self", "target", "weight"),
    "binary_cross_entropy_with_logits": ("self", "target", "weight", "pos_weight"),
    "margin_ranking_loss": ("input1", "input2", "target"), "soft_margin_loss": ("self", "target"),
    "poisson_nll_loss": ("input", "target"),
    "cosine_similarity": ("x1", "x2"), "pairwise_distance": ("x1", "x2"),
    "triplet_margin_loss": ("anchor", "positive", "negative"), "cosine_embedding_loss": ("input1", "input2"),
}


def lit(x: float) -> str:
    return float_literal(x)


def num_arg(a: dict, key: str, default: float) -> float:
    v = a.get(key)
    if v is None or not isinstance(v, (int, float, dict)):
        return default
    s = scalar_value(v)
    return default if s is None else float(s)


def broadcast_shapes(shapes: list[list[int]]) -> list[int]:
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        s = [1] * (n - len(s)) + list(s)
        for i, v in enumerate(s):
            if v != 1:
                if out[i] not in (1, v):
                    raise Unsupported(f"loss operands {shapes} do not broadcast")
                out[i] = v
    return out


class LossPlan:
    """What the wrapper and the kernels share: spec, operand shapes, views of the inputs, kernel code."""

    def __init__(self, spec: KernelSpec, prologue: list[OpRecord], rec: OpRecord, epilogue: list[OpRecord]):
        self.spec, self.prologue, self.rec, self.epilogue = spec, prologue, rec, epilogue
        self.args = bind_args(rec)
        self.inputs = {t.graph_value: t for t in spec.inputs}
        self.produced = {r.node: r for r in prologue}
        self.views: dict[str, str] = {}  # input name → wrapper expression of the array the kernels get
        self.extra_arrays: list[tuple[str, str]] = []  # (kernel parameter, wrapper expression) after the inputs
        red = self.args.get("reduction", 1)
        self.reduction = int(red) if isinstance(red, (int, float)) else 1
        if self.reduction not in (0, 1, 2):
            raise Unsupported(f"{rec.target}: reduction={red!r}")

    def array_args(self) -> list[str]:
        """The kernels' array parameters (and launch arguments): the inputs, then the extra arrays."""
        return input_args(self.spec) + [name for name, _ in self.extra_arrays]

    def shape_of(self, v) -> list[int]:
        if not is_ref(v):
            raise Unsupported(f"{self.rec.target}: expected a tensor operand, got {v!r}")
        ref = v["ref"]
        if ref in self.inputs:
            return list(self.inputs[ref].shape)
        if ref in self.produced:
            return list(self.produced[ref].output)
        raise Unsupported(f"{self.rec.target}: operand {ref} is not available in the kernel")

    def input_of(self, value: str) -> TensorSpec:
        """The kernel input holding graph value `value` (an operand the kernel loads itself)."""
        t = self.inputs.get(value)
        if t is None:
            raise Unsupported(f"operand {value} is not a kernel input")
        return t

    def operand(self, key: str):
        v = self.args.get(key)
        return v if is_ref(v) else None


class ValueSource:
    """Operand values for a tile: env (prologue results, already-loaded tiles) first, else a loader."""

    def __init__(self, plan: LossPlan, env: dict[str, str], loader, lines: list[str], indent: str):
        self.plan, self.env, self.loader, self.lines, self.indent = plan, env, loader, lines, indent
        self.prologue_done = False

    def run_prologue(self):
        if not self.prologue_done:
            self.prologue_done = True
            elementwise(self.plan.prologue, self.env, self.loader, self.lines, self.indent)

    def __call__(self, v) -> str:
        if not is_ref(v):
            s = scalar_value(v)
            if s is None:
                raise Unsupported(f"{self.plan.rec.target}: missing operand")
            return lit(s)
        self.run_prologue()
        ref = v["ref"]
        if ref not in self.env:
            self.env[ref] = self.loader(ref)
        name = self.env[ref]
        return f"{name}.astype(ct.float32)" if name.startswith("eb_") else name


class CoordLoader(SideLoader):
    """SideLoader that refuses inputs the wrapper passes in a reshaped view."""

    def __init__(self, plan: LossPlan, coords, full_shape, tile, lines, ind):
        super().__init__(plan.spec, coords, full_shape, tile, lines, ind,
                         exclude=[t.graph_value for t in plan.spec.inputs if t.name in plan.views])
