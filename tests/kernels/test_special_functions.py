"""Special functions in elementwise kernels (core/kernels/expr_special.py) and integer shifts: compiled for sm_90,
and on the emulator against PyTorch in float64 over wide ranges of arguments, poles, infinities and NaN."""

from __future__ import annotations

import math

import pytest
import torch

from .cutile_emulator import emulation, load_emulated
from .helpers import compile_spec
from .helpers_indexed import forward, snippet_spec


def _points(lo: float, hi: float, n: int = 4001) -> torch.Tensor:
    return torch.linspace(lo, hi, n)


def _specials() -> torch.Tensor:
    nan, inf = math.nan, math.inf
    return torch.tensor([0.0, -0.0, 1.0, 2.0, -1.0, -2.0, -3.5, 0.5, 1e-8, -1e-8, 1e-30, 40.0, 1e4, 3e5, -7.25,
                         inf, -inf, nan])


# name → (expression, test points, relative tolerance, absolute tolerance)
CASES = {
    "lgamma": ("torch.lgamma(x)", torch.cat([_points(-30, 40), _points(1e-4, 3), _specials()]), 2e-6, 1e-5),
    "digamma": ("torch.digamma(x)", torch.cat([_points(-30.3, 40.1), _points(1e-3, 3), _specials()]), 2e-6, 2e-5),
    "i0": ("torch.special.i0(x)", torch.cat([_points(-80, 80), _specials()]), 2e-6, 0),
    # below 0, exp(x^2) carries float32's rounding of x^2 (relative x^2 * 6e-8: 5e-6 at x = -9)
    "erfcx": ("torch.special.erfcx(x)", torch.cat([_points(-9, 60), _specials()]), 1e-5, 1e-7),
    "ndtri": ("torch.special.ndtri(x)", torch.cat([_points(0, 1), torch.logspace(-37, -1, 200),
                                                  torch.tensor([1e-7, 1e-20, 1 - 1e-7, 0.5, -0.1, 1.1, math.nan])]),
              1e-5, 1e-6),
}


def _run(expr: str, x: torch.Tensor, dtype=torch.float32):
    spec = snippet_spec(forward(expr), f"[torch.randn({x.numel()}).to({dtype})]", "elementwise")
    source = compile_spec(spec, ("sm_90",))
    with emulation():
        return load_emulated(source)[source.launch_name](x.to(dtype))


@pytest.mark.parametrize("name", sorted(CASES))
def test_special_function_matches_pytorch_in_float64(name):
    expr, x, rtol, atol = CASES[name]
    got = _run(expr, x).double()
    want = eval(expr, {"torch": torch, "x": x.double()})  # noqa: S307 - our own expressions
    bad = ~(torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
    assert not bad.any(), [(float(a), float(g), float(w)) for a, g, w in zip(x[bad], got[bad], want[bad])][:8]


def test_special_functions_on_half_inputs():
    """float16/bfloat16 inputs are computed in float32 and rounded once to the output type."""
    x = _points(0.05, 20, 257)
    for dtype in (torch.float16, torch.bfloat16):
        got = _run("torch.lgamma(x) + torch.digamma(x)", x, dtype)
        xd = x.to(dtype).double()
        want = (torch.lgamma(xd) + torch.digamma(xd)).to(dtype)
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)


def test_integer_shifts():
    x = torch.randint(0, 1 << 12, (1000,))
    for expr, want in (("x << 3", x << 3), ("x >> 2", x >> 2), ("torch.bitwise_left_shift(x, 1) + 1", (x << 1) + 1)):
        spec = snippet_spec(forward(expr), "[torch.randint(0, 4096, (1000,))]", "elementwise")
        source = compile_spec(spec, ("sm_90",))
        with emulation():
            got = load_emulated(source)[source.launch_name](x)
        assert torch.equal(got, want), expr


def _fixed_input(values: torch.Tensor):
    return lambda t, gen: values.to(getattr(torch, t.dtype))


def test_check_accepts_the_overflow_a_half_output_must_hold_and_rejects_a_wrong_one():
    """erfcx(-3.5) = 4.2e5 is +inf in a float16 output: the float64 check compares against the reference as the
    output dtype holds it (an infinity the kernel must store), not against the finite float64 value."""
    from .cutile_emulator import check_emulated

    spec = snippet_spec(forward("torch.special.erfcx(x)"), "[torch.randn(64).to(torch.float16)]", "elementwise")
    values = torch.linspace(-4, 4, 64)
    assert check_emulated(spec, compile_spec(spec, ("sm_90",)), make_input=_fixed_input(values)).ok
    # a kernel that stores -inf where +inf belongs (the negation of a correct one) is caught
    neg = snippet_spec(forward("-torch.special.erfcx(x)"), "[torch.randn(64).to(torch.float16)]", "elementwise")
    result = check_emulated(spec, compile_spec(neg, ("sm_90",)), make_input=_fixed_input(values))
    assert not result.ok


def test_check_rejects_a_nan_where_the_reference_is_finite_even_beside_a_reference_nan():
    from .cutile_emulator import check_emulated

    spec = snippet_spec(forward("torch.lgamma(x)"), "[torch.randn(8)]", "elementwise")
    values = torch.tensor([math.nan, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5])
    assert check_emulated(spec, compile_spec(spec, ("sm_90",)), make_input=_fixed_input(values)).ok
    # sqrt of a negative is NaN at finite reference points of lgamma: the check must fail, not skip them
    bad = snippet_spec(forward("torch.sqrt(x - 4.0)"), "[torch.randn(8)]", "elementwise")
    result = check_emulated(spec, compile_spec(bad, ("sm_90",)), make_input=_fixed_input(values))
    assert not result.ok and "NaN" in result.message
