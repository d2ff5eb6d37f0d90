"""Elementwise family on the GPU: every variant × 3+ shapes (unaligned included) × float32/float16/bfloat16,
checked against the float64 reference with fresh random inputs and poisoned outputs (checking.check_kernel)."""

from __future__ import annotations

import pytest

from .helpers import case_ids, decompose_source
from .helpers_elementwise import (ACTIVATIONS_A, ACTIVATIONS_B, BROADCAST_NCHW, CHAIN_1D, CLAMP_TENSOR, COMPARE,
                                  HALF_MODULE, INT_MASK, LEADING_BROADCAST, MASKED_FILL, MATH, OUTER, ROTARY,
                                  ROW_COL, SCALARS, SETITEM_MASK, SPECIAL, TRIL, WHERE, elementwise_specs, multi_output_spec,
                                  scalar_input_spec)

pytestmark = pytest.mark.gpu

DTYPES = ("float32", "float16", "bfloat16")


def _r(shape, dtype):
    return f"torch.randn{tuple(shape)!r}.to(torch.{dtype})"


def _one(shape, dtype):
    return f"[{_r(shape, dtype)}]"


def _two(shape, dtype):
    return f"[{_r(shape, dtype)}, {_r(shape, dtype)}]"


# variant → (body builder(shape, dtype), inputs builder(shape, dtype), shapes)
VARIANTS = {
    "activations_a": (lambda s, d: ACTIVATIONS_A, _one, [(1000003,), (7, 33, 65), (64, 512, 129)]),
    "activations_b": (lambda s, d: ACTIVATIONS_B, _one, [(1000003,), (7, 33, 65), (64, 512, 129)]),
    "math": (lambda s, d: MATH, _one, [(5, 77), (300007,), (32, 1024, 96)]),
    "scalars": (lambda s, d: SCALARS, _one, [(9, 150), (1000003,), (128, 4096)]),
    "chain_two_inputs": (lambda s, d: CHAIN_1D, _two, [(1,), (1000003,), (37, 129), (1 << 24,)]),
    "where": (lambda s, d: WHERE, _two, [(7, 3, 64), (1000003,), (16, 300, 301)]),
    "nchw_channel_params": (lambda s, d: BROADCAST_NCHW.format(c=s[1], dtype=d), _one,
                            [(3, 6, 9, 11), (8, 64, 56, 56), (2, 3, 1, 1000003), (5, 1000, 7, 1)]),
    "row_and_column_vectors": (lambda s, d: ROW_COL,
                               lambda s, d: f"[{_r(s, d)}, {_r(s[-1:], d)}, {_r(s[:-1] + (1,), d)}]",
                               [(4, 10, 96), (3, 7, 1001), (16, 512, 768)]),
    "outer_broadcast": (lambda s, d: OUTER, lambda s, d: f"[{_r((s[0], 1), d)}, {_r((1, s[1]), d)}]",
                        [(33, 47), (1, 1000003), (2049, 1023)]),
    "masked_fill_ninf": (lambda s, d: MASKED_FILL,
                         lambda s, d: f"[{_r(s, d)}, torch.rand(1, 1, {s[2]}, {s[3]}) > 0.5]",
                         [(2, 3, 17, 17), (4, 8, 128, 128), (1, 2, 257, 257)]),
    "clamp_tensor_bounds": (lambda s, d: CLAMP_TENSOR,
                            lambda s, d: f"[{_r(s, d)}, {_r(s[-1:], d)}, {_r(s[:-1] + (1,), d)}]",
                            [(6, 40), (999, 1001), (4096, 512)]),
    "compare_bool_output": (lambda s, d: COMPARE, _two, [(12, 13), (1000003,), (256, 4096)]),
    "int_ids_mask": (lambda s, d: INT_MASK, lambda s, d: f"[torch.randint(0, 5, {tuple(s)!r}), {_r(s, d)}]",
                     [(3, 21), (1000003,), (64, 2048)]),
    "tril_triu": (lambda s, d: TRIL, _one, [(3, 19, 23), (1, 1000, 1003), (8, 256, 256)]),
    # expr_special: arguments in (0.1, 10.1), away from the poles
    "special_functions": (lambda s, d: SPECIAL, lambda s, d: f"[(torch.rand{tuple(s)!r} * 10 + 0.1).to(torch.{d})]",
                          [(5, 77), (300007,), (32, 1024, 96)]),
    "setitem_mask": (lambda s, d: SETITEM_MASK,
                     lambda s, d: f"[{_r(s, d)}, torch.rand{s[1:]!r} > 0.7, torch.rand({s[0]}) > 0.5]",
                     [(3, 19, 23), (16, 128, 1000), (1, 1, 1)]),
    # broadcast over the leading dim: whole-tile loads where its trailing part holds whole blocks (first and last
    # shapes), gathers elsewhere
    "leading_broadcast": (lambda s, d: LEADING_BROADCAST, lambda s, d: f"[{_r(s, d)}, {_r((1,) + s[1:], d)}]",
                          [(8, 64, 1024), (3, 7, 1001), (16, 512, 4096)]),
    # R9: q * cos + rotate_half(q) * sin, cos/sin over (seq, head dim); head dims 64 / 128 take the register
    # shuffle, 80 and 96 the gather at rotated offsets
    "rotary": (lambda s, d: ROTARY, lambda s, d: f"[{_r(s, d)}, {_r((1, 1) + s[2:], d)}, {_r((1, 1) + s[2:], d)}]",
               [(2, 8, 40, 64), (3, 5, 17, 80), (4, 32, 512, 128), (2, 12, 333, 96)]),
}

CASES = [(name, shape, dtype) for name, (_, _, shapes) in VARIANTS.items() for shape in shapes for dtype in DTYPES]


def _check_all(decomposition, label, strided: bool = False):
    """Every elementwise spec checked on the GPU; `strided`: with rank >= 2 inputs as non-contiguous views, only
    the specs that have a strided kernel (elementwise_strided.py; skipped if none has)."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel

    from .helpers_indexed import make_inputs

    specs = elementwise_specs(decomposition)
    assert specs, f"{label}: no elementwise spec"
    checked = 0
    for spec in specs:
        source = generate_kernel(spec)
        assert not source.skeleton, f"{label} {spec.id}: skeleton ({source.notes})"
        if strided and f"{spec.id}_strided_kernel" not in source.kernel_names:
            continue
        result = check_kernel(spec, source, make_input=make_inputs(strided=True) if strided else None)
        assert result.ok, f"{label} {spec.id}: {result.message}"
        checked += 1
    if not checked:
        pytest.skip("no strided kernel for this shape")


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=case_ids(CASES))
def test_variant_matches_reference(name, shape, dtype):
    body, inputs, _ = VARIANTS[name]
    shape = tuple(shape)
    _check_all(decompose_source(body(shape, dtype), inputs(shape, dtype)), f"{name}{shape} {dtype}")


@pytest.mark.parametrize("name,shape,dtype", CASES, ids=case_ids(CASES))
def test_variant_with_strided_inputs(name, shape, dtype):
    """The same cases with every input of rank >= 2 a non-contiguous view: the strided kernel reads them in place."""
    body, inputs, _ = VARIANTS[name]
    shape = tuple(shape)
    _check_all(decompose_source(body(shape, dtype), inputs(shape, dtype)), f"{name}{shape} {dtype}", strided=True)


@pytest.mark.parametrize("cast,dtype", [("half", "float16"), ("bfloat16", "bfloat16"), ("float", "float32")])
@pytest.mark.parametrize("shape", [(3, 5, 200), (2, 999, 77), (8, 128, 1024)])
def test_cast_module(cast, dtype, shape):
    body = HALF_MODULE.format(n=shape[-1], cast=cast)
    _check_all(decompose_source(body, f"[{_r(shape, dtype)}]"), f"module.{cast}(){shape}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,m", [(37, 29), (1000, 1), (513, 2049)])
def test_multi_output_and_smaller_output(n, m, dtype):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel

    spec = multi_output_spec(n, m, dtype)
    source = generate_kernel(spec)
    result = check_kernel(spec, source)
    assert result.ok, result.message


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(19, 33), (1000003,), (64, 64, 65)])
def test_scalar_and_zero_dim_inputs(shape, dtype):
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.checking import check_kernel

    spec = scalar_input_spec(shape, dtype)
    source = generate_kernel(spec)
    result = check_kernel(spec, source)
    assert result.ok, result.message


def test_non_contiguous_inputs():
    """Permuted and expanded views give the same result as contiguous inputs."""
    import torch

    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.aot import load_source

    spec = elementwise_specs(decompose_source(ROW_COL, "[torch.randn(4, 10, 96), torch.randn(96), "
                                                       "torch.randn(4, 10, 1)]"))[0]
    source = generate_kernel(spec)
    launch = load_source(source)[f"launch_{spec.id}"]
    x = torch.randn(96, 10, 4, device="cuda").permute(2, 1, 0)
    row = torch.randn(1, device="cuda").expand(96)
    col = torch.randn(4, 10, 1, device="cuda")
    got = launch(x, row, col)
    want = launch(x.contiguous(), row.contiguous(), col)
    torch.cuda.synchronize()
    assert torch.equal(got, want)
    ref = torch.sigmoid(x.double() * row.double() + col.double()) * 2.0 - x.double()
    assert torch.allclose(got.double(), ref, rtol=2e-3, atol=2e-3)
