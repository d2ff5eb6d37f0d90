"""bucketize / searchsorted (core/kernels/gather_search.py): compiled for sm_90 and sm_100, and on the emulator
equal to PyTorch for both sides, repeated boundaries, values outside the range, +-inf and NaN, int32 outputs and a
fused epilogue."""

from __future__ import annotations

import math

import pytest
import torch

from .cutile_emulator import check_emulated, emulation, load_emulated
from .helpers import compile_spec
from .helpers_indexed import forward, snippet_spec

CASES = {
    "bucketize": "torch.bucketize(x, b)",
    "bucketize_right_int32": "torch.bucketize(x, b, right=True, out_int32=True)",
    "searchsorted": "torch.searchsorted(b, x)",
    "searchsorted_side_right_plus_one": "torch.searchsorted(b, x, side='right') + 1",
}


@pytest.mark.parametrize("n_bounds", [1, 7, 64, 1000])
@pytest.mark.parametrize("name", sorted(CASES))
def test_search_matches_pytorch(name, n_bounds):
    spec = snippet_spec(forward(CASES[name], "x, b"), f"[torch.randn(13, 33), torch.randn({n_bounds}).sort()[0]]",
                        "gather")
    source = compile_spec(spec, ("sm_90", "sm_100") if n_bounds == 7 else ("sm_90",))
    b = (torch.randn(n_bounds) * 2).round(decimals=1).sort()[0]  # repeated boundaries
    x = torch.cat([torch.randn(13 * 33 - 6) * 3, b[:1], b[-1:],
                   torch.tensor([math.inf, -math.inf, math.nan, 0.0])]).reshape(13, 33)
    with emulation():
        values = {"x": x, "b": b}
        got = load_emulated(source)[source.launch_name](*(values[t.name] for t in spec.inputs))
    want = eval(CASES[name], {"torch": torch, "x": x, "b": b})  # noqa: S307 - our own expressions
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_search_passes_the_kernel_check_on_the_emulator():
    spec = snippet_spec(forward("torch.bucketize(x, b)", "x, b"), "[torch.randn(5, 300), torch.randn(40).sort()[0]]",
                        "gather")
    from tilestudio.core.kernels import generate_kernel

    assert check_emulated(spec, generate_kernel(spec)).ok


def test_gather_occupancy_hint_reaches_the_kernel_and_shrinks_shared_memory(monkeypatch):
    """MEMORY_TUNING["gather_occupancy"] (4 since session 31's H100 timings): the hint reaches the generic gather
    kernel's decorator; on sm_90 bucketize into 1023 boundaries then fits four blocks per SM (without it ~132 KB
    per block); None drops it."""
    from tilestudio.core.kernels import aot, generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    spec = snippet_spec(forward(CASES["bucketize"], "x, b"), "[torch.randn(1 << 16), torch.randn(1023).sort()[0]]",
                        "gather")
    source = compile_spec(spec)
    assert "@ct.kernel(occupancy=4)" in source.code
    launch = aot.trace_launches(source, spec)[0]
    shared = aot.shared_memory_bytes(aot.compile_cubin(launch, "sm_90", specialize=True))
    assert shared <= 228 * 1024 // 4, shared
    monkeypatch.setitem(MEMORY_TUNING, "gather_occupancy", None)
    assert "occupancy=" not in generate_kernel(spec).code
