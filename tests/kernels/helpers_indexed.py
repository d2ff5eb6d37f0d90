"""Test helpers of the pool, gather, loss and attention families."""

from __future__ import annotations

import os

import torch

from corpus import corpus_files

CORPUS = [p for p in corpus_files() if not p.name.startswith("big_")]


def family_specs(dec, family: str):
    return [k for k in dec.kernels if k.family == family]


def snippet_spec(body: str, inputs: str, family: str, init: str = "[]"):
    """The single spec of `family` produced by an inline model snippet."""
    from .helpers import decompose_source

    dec = decompose_source(body, inputs, init)
    specs = family_specs(dec, family)
    assert len(specs) == 1, f"expected one {family} spec, got {[(k.family, k.operations) for k in dec.kernels]}"
    return specs[0]


def forward(expr: str, args: str = "x") -> str:
    """A model whose forward returns `expr`."""
    return f"class Model(nn.Module):\n    def forward(self, {args}):\n        return {expr}\n"


def check_emulated_both_layouts(spec, source, **input_kw) -> None:
    """The kernel matches the reference in the CPU emulator on contiguous inputs and on strided views of them
    (make_inputs keywords in `input_kw`)."""
    from .cutile_emulator import check_emulated

    for strided in (False, True):
        result = check_emulated(spec, source, make_input=make_inputs(strided=strided, **input_kw))
        assert result.ok, f"{spec.id} strided={strided}: {result.message}"


def make_inputs(int_ranges: dict[str, tuple[int, int]] | None = None, positive: tuple[str, ...] = (),
                probs: tuple[str, ...] = (), signs: tuple[str, ...] = (), strided: bool = False,
                ascending: tuple[str, ...] = ()):
    """A `make_input` for check_kernel: integer inputs drawn from [lo, hi) per input name (default [0, 4)),
    `positive` float inputs in [0.1, 1.1), `probs` in (0, 1), `signs` in {-1, +1}; others standard normal,
    `ascending` ones sorted along their last dim (bucketize's boundaries).
    `strided`: every input of rank >= 2 comes as a non-contiguous view (dims stored in reverse order)."""
    int_ranges = int_ranges or {}

    def make(t, gen):
        x = make_dense(t, gen)
        if strided and isinstance(x, torch.Tensor) and x.dim() >= 2:
            order = list(range(x.dim()))[::-1]
            x = x.permute(order).contiguous().permute(order)
        return x

    def make_dense(t, gen):
        if t.role == "scalar":
            return t.value
        dtype = getattr(torch, t.dtype)
        if dtype == torch.bool:
            return torch.rand(t.shape, generator=gen) > 0.3
        if not dtype.is_floating_point:
            lo, hi = int_ranges.get(t.name, (0, 4))
            return torch.randint(lo, hi, t.shape, generator=gen, dtype=dtype)
        if t.name in positive:
            x = torch.rand(t.shape, generator=gen) + 0.1
        elif t.name in probs:
            x = torch.rand(t.shape, generator=gen) * 0.98 + 0.01
        elif t.name in signs:
            x = (torch.rand(t.shape, generator=gen) > 0.5).float() * 2 - 1
        else:
            x = torch.randn(t.shape, generator=gen)
        x = x.to(dtype)
        return x.sort()[0] if t.name in ascending else x

    return make


def model_id(path) -> str:
    return os.path.splitext(os.path.basename(str(path)))[0]


DTYPES = ("float32", "float16", "bfloat16")
DT = {"float32": "", "float16": ".half()", "bfloat16": ".to(torch.bfloat16)"}


def shape_str(shape) -> str:
    return ", ".join(str(s) for s in shape)


def gpu_cases(shapes_by_variant: dict, core: set, dtypes=DTYPES) -> list:
    """(variant, shape, dtype) triples: every shape in every dtype for the core variants; for the others each shape
    in one dtype (cycling through them), which keeps the GPU run to a few hundred kernels."""
    cases = []
    for name, shapes in shapes_by_variant.items():
        for i, shape in enumerate(shapes):
            chosen = dtypes if name in core else (dtypes[i % len(dtypes)],)
            cases.extend((name, shape, dt) for dt in chosen)
    return cases
