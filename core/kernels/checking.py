"""Run a generated kernel against its spec's PyTorch reference (GPU tests, validation).

Inputs are fresh random tensors (never zeros); outputs are poisoned (NaN, or a sentinel for integers) by
allocating through `PoisonedTorch`, so a kernel that forgets to write an element fails; the reference runs in
float64 and NaN in the result never passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..specs import KernelSpec, TensorSpec
from .aot import load_source
from .base import KernelSource

TOLERANCE = {"float32": (2e-3, 2e-3), "float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2), "float64": (1e-8, 1e-8)}


class PoisonedTorch:
    """`torch`, except that torch.empty/empty_like/empty_strided return NaN-filled (or -7-filled) tensors."""

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)

    @staticmethod
    def _poison(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point():
            return t.fill_(math.nan)
        if t.dtype == torch.bool:
            return t.fill_(True)
        return t.fill_(-7)

    def empty(self, *a, **k):
        return self._poison(torch.empty(*a, **k))

    def empty_like(self, *a, **k):
        return self._poison(torch.empty_like(*a, **k))

    def empty_strided(self, *a, **k):
        return self._poison(torch.empty_strided(*a, **k))


def random_input(t: TensorSpec, device: str, generator: torch.Generator,
                 int_high: int | None = None) -> Any:
    if t.role == "scalar":
        return t.value
    dtype = getattr(torch, t.dtype)
    if dtype.is_floating_point:
        x = torch.randn(t.shape, generator=generator, dtype=torch.float32, device="cpu")
        if "running_var" in (t.source or "") or "var" == t.name[-3:]:
            x = x.abs() + 0.5  # variances are positive
        return x.to(dtype).to(device)
    if dtype == torch.bool:
        return (torch.rand(t.shape, generator=generator) > 0.5).to(device)
    high = int_high if int_high is not None else 4
    return torch.randint(0, high, t.shape, generator=generator, dtype=dtype).to(device)


@dataclass
class KernelCheck:
    ok: bool
    max_abs_err: float
    max_rel_err: float
    message: str = ""


def check_kernel(spec: KernelSpec, source: KernelSource, device: str = "cuda", seed: int = 0,
                 make_input: Callable[[TensorSpec, torch.Generator], Any] | None = None) -> KernelCheck:
    """Launch the kernel on fresh random inputs and compare every output with the float64 reference."""
    namespace = load_source(source)
    return check_launch(spec, namespace, source.launch_name, source.prepare_name, device, seed, make_input)


DEFAULT_INT_HIGH = 4  # integer inputs are drawn from [0, 4) unless an op they index bounds them lower


def index_bounds(spec: KernelSpec) -> dict[str, int]:
    """Integer inputs that index something in the kernel (embedding ids, gather/index_select/take and scatter/index_add indices, loss
    targets, one_hot classes, advanced-indexing tensors) → the exclusive upper bound of a valid index, where it
    is below DEFAULT_INT_HIGH (a token-type embedding of 2 rows: ids 2 and 3 would make PyTorch's own reference
    assert on the device)."""
    shapes = {t.graph_value: list(t.shape) for t in spec.inputs if t.graph_value}
    shapes.update({r.node: list(r.output) for r in spec.ops})
    names = {t.graph_value: t.name for t in spec.inputs if t.graph_value}
    bounds: dict[str, int] = {}

    def ref(arg):
        return arg.get("ref") if isinstance(arg, dict) else None

    def bound(index_arg, size) -> None:
        name = names.get(ref(index_arg))
        if name is not None and isinstance(size, int) and 0 < size < DEFAULT_INT_HIGH:
            bounds[name] = min(size, bounds.get(name, size))

    def dim_size(src_arg, dim) -> int | None:
        shape = shapes.get(ref(src_arg))
        if not shape or not isinstance(dim, int):
            return None
        return shape[dim % len(shape)]

    for r in spec.ops:
        a = r.args
        if r.op == "embedding" and len(a) >= 2:
            bound(a[1], dim_size(a[0], 0))
        elif r.op in ("index_select", "gather", "scatter", "scatter_add", "scatter_reduce", "index_add",
                      "index_copy") and len(a) >= 3:
            bound(a[2], dim_size(a[0], a[1]))
        elif r.op == "take" and len(a) >= 2 and shapes.get(ref(a[0])):
            bound(a[1], math.prod(shapes[ref(a[0])]))
        elif r.op in ("nll_loss", "nll_loss_nd", "nll_loss2d", "cross_entropy_loss") and len(a) >= 2:
            shape = shapes.get(ref(a[0])) or []
            bound(a[1], shape[1] if len(shape) > 1 else (shape[0] if shape else None))
        elif r.op == "one_hot" and len(a) >= 2 and isinstance(a[1], int):
            bound(a[0], a[1])
        elif r.op == "index" and len(a) >= 2 and isinstance(a[1], list):
            for pos, idx in enumerate(a[1]):
                bound(idx, dim_size(a[0], pos))
    return bounds


def sorted_inputs(spec: KernelSpec) -> set[str]:
    """Inputs the kernel's ops require sorted along their last dim: bucketize's boundaries, searchsorted's
    sequence (on unsorted ones PyTorch's result is undefined and depends on the search's order of probes)."""
    names = {t.graph_value: t.name for t in spec.inputs if t.graph_value}
    positions = {"bucketize": 1, "searchsorted": 0}
    out = set()
    for r in spec.ops:
        pos = positions.get(r.op)
        arg = r.args[pos] if pos is not None and len(r.args) > pos else None
        if isinstance(arg, dict) and arg.get("ref") in names:
            out.add(names[arg["ref"]])
    return out


def spec_input_maker(spec: KernelSpec, device: str = "cpu") -> Callable[[TensorSpec, torch.Generator], Any]:
    """The default input generator for a spec: `random_input`, except that a recurrence's parameters are drawn
    like nn.RNN/LSTM/GRU initialise them, U(-1/sqrt(H), 1/sqrt(H)). With N(0, 1) recurrent weights the spectral
    radius is ~sqrt(H) and a long recurrence is chaotic: float32 and the float64 reference then diverge by O(1)
    after ~20 steps whatever the kernel does (measured: PyTorch's own float32 GRU-128 vs float64, 33 steps)."""
    if spec.family != "recurrent":
        bounds, ordered = index_bounds(spec), sorted_inputs(spec)

        def make_plain(t: TensorSpec, gen: torch.Generator) -> Any:
            x = random_input(t, device, gen, bounds.get(t.name))
            return x.sort(-1).values if t.name in ordered else x
        return make_plain
    hidden = next((t.shape[-1] for t in spec.inputs if t.role == "parameter" and len(t.shape) == 2), 1)
    bound = 1.0 / math.sqrt(hidden)

    def make(t: TensorSpec, gen: torch.Generator) -> Any:
        if t.role == "parameter" and getattr(torch, t.dtype).is_floating_point:
            x = (torch.rand(t.shape, generator=gen, dtype=torch.float32) * 2 - 1) * bound
            return x.to(getattr(torch, t.dtype)).to(device)
        return random_input(t, device, gen)
    return make


def make_inputs(spec: KernelSpec, device: str, seed: int,
                make_input: Callable[[TensorSpec, torch.Generator], Any] | None = None) -> list[Any]:
    gen = torch.Generator().manual_seed(seed)
    make_input = make_input or spec_input_maker(spec, device)
    inputs = [make_input(t, gen) for t in spec.inputs]
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def launch_args(spec: KernelSpec, namespace: dict[str, Any], prepare_name: str | None, inputs: list[Any]) -> list:
    if not prepare_name:
        return list(inputs)
    params = [a for a, t in zip(inputs, spec.inputs) if t.role in ("parameter", "buffer")]
    prepared = namespace[prepare_name](*params)
    return [a for a, t in zip(inputs, spec.inputs) if t.role in ("activation", "scalar")] + list(prepared)


class _Float64Names:
    """`torch` for a float64 run of a reference: the float dtypes it names read as float64, everything else is
    torch's own."""

    NAMES = {"float16", "half", "bfloat16", "float32", "float"}

    def __getattr__(self, name: str) -> Any:
        return torch.float64 if name in self.NAMES else getattr(torch, name)


def reference_float64(spec: KernelSpec, inputs: list[Any]) -> tuple:
    """The spec's PyTorch reference on the inputs promoted to float64 (its outputs as a tuple). A reference that
    casts down to a narrower float and then meets a float64 operand (Hugging Face's `softmax(..., dtype=float32)
    .to(q.dtype)` before a matmul, which refuses mixed dtypes) is rerun with every float dtype it names read as
    float64."""
    ref_inputs = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
    for torch_names in (torch, _Float64Names()):
        ref_ns: dict[str, Any] = {"torch": torch_names, "math": math}
        exec(compile(spec.reference, spec.reference_name, "exec"), ref_ns)  # noqa: S102
        try:
            expected = ref_ns[spec.reference_name](*ref_inputs)
            break
        except RuntimeError as exc:
            if torch_names is not torch or "dtype" not in str(exc) and "scalar type" not in str(exc):
                raise
    return expected if isinstance(expected, tuple) else (expected,)


def topk_indices_agree(spec: KernelSpec, inputs: list[Any], actual: torch.Tensor, expected: torch.Tensor) -> bool:
    """Top-k indices are right when they are distinct along the topk dim and pick the same values, in the same
    order, as the reference's (ties may come in any index order)."""
    rec = spec.ops[0]
    x = next(v for v, t in zip(inputs, spec.inputs) if t.role != "scalar").detach().cpu().double()
    dim = int(rec.attrs.get("dim", -1)) % max(1, x.dim())
    a, e = actual.cpu().long(), expected.cpu().long()
    if a.numel() == 0:
        return True
    if ((a < 0) | (a >= x.shape[dim])).any():
        return False
    if a.shape[dim] > 1 and not bool((a.sort(dim).values.diff(dim=dim) != 0).all()):
        return False
    got, want = x.gather(dim, a), x.gather(dim, e)
    return bool(torch.equal(torch.isnan(got), torch.isnan(want))
                and torch.equal(got.nan_to_num(0.0), want.nan_to_num(0.0)))


def check_launch(spec: KernelSpec, namespace: dict[str, Any], launch_name: str, prepare_name: str | None,
                 device: str = "cuda", seed: int = 0,
                 make_input: Callable[[TensorSpec, torch.Generator], Any] | None = None) -> KernelCheck:
    """Like check_kernel, for a launch wrapper already loaded in `namespace` (a composed file's module dict)."""
    inputs = make_inputs(spec, device, seed, make_input)
    args = launch_args(spec, namespace, prepare_name, inputs)
    real_torch = namespace.get("torch", torch)
    namespace["torch"] = PoisonedTorch()
    try:
        result = namespace[launch_name](*args)
    finally:
        namespace["torch"] = real_torch
    torch.cuda.synchronize() if device == "cuda" else None
    actual = result if isinstance(result, tuple) else (result,)

    expected = reference_float64(spec, inputs)
    worst_abs = worst_rel = 0.0
    for out_spec, a, e in zip(spec.outputs, actual, expected):
        if list(a.shape) != list(e.shape):
            return KernelCheck(False, math.inf, math.inf, f"{out_spec.name}: shape {list(a.shape)} != {list(e.shape)}")
        if not a.is_floating_point():
            if spec.family == "topk":  # PyTorch orders equal values' indices arbitrarily: compare what they select
                if not topk_indices_agree(spec, inputs, a, e):
                    return KernelCheck(False, math.inf, math.inf, f"{out_spec.name}: topk indices select other "
                                                                  "values (or repeat an index)")
                continue
            if not torch.equal(a.cpu(), e.to(a.dtype).cpu()):
                return KernelCheck(False, math.inf, math.inf, f"{out_spec.name}: integer/bool output differs")
            continue
        a64, e64 = a.double(), e.double()
        if torch.isnan(a64).any() and not torch.isnan(e64).any():
            return KernelCheck(False, math.nan, math.nan, f"{out_spec.name}: NaN in the output (unwritten element?)")
        # the reference as the output dtype holds it: a finite float64 value beyond float16's 65504 (erfcx(-3.4))
        # is +-inf in a float16 output, and the kernel must store exactly that infinity
        e_out = e64.to(a.dtype).double()
        finite = torch.isfinite(e_out)
        if (~finite).any() and not torch.equal(a64[~finite].nan_to_num(0.0), e_out[~finite].nan_to_num(0.0)):
            return KernelCheck(False, math.inf, math.inf, f"{out_spec.name}: infinities differ")
        if torch.isnan(a64[finite]).any():  # where the reference has a NaN elsewhere, the check above let it by
            return KernelCheck(False, math.nan, math.nan, f"{out_spec.name}: NaN where the reference is finite")
        diff = (a64 - e64).abs()[finite]
        if diff.numel() == 0:
            continue
        abs_err = float(diff.max())
        rel_err = float((diff / e64.abs()[finite].clamp_min(1e-6)).max())
        scale = float(e64.abs()[finite].max()) or 1.0
        rtol, atol = TOLERANCE.get(out_spec.dtype, (2e-3, 2e-3))
        worst_abs, worst_rel = max(worst_abs, abs_err), max(worst_rel, rel_err)
        if abs_err > atol * max(1.0, scale) and not torch.allclose(a64[finite], e64[finite], rtol=rtol, atol=atol):
            return KernelCheck(False, abs_err, rel_err, f"{out_spec.name}: max abs err {abs_err:.3g}")
    return KernelCheck(True, worst_abs, worst_rel)
