"""Whole-number upscaling at input resolution (gather_upscale.py, MEMORY_TUNING["upscale_whole"] forced on here):
nearest by powers of two and bilinear x2 compile for sm_90 and sm_100, match F.interpolate in the emulator on
contiguous and strided inputs (odd and non-power-of-two sizes, several row/column blocks, 16-bit dtypes), and
everything outside the fast path's conditions keeps the generic gather layout."""

from __future__ import annotations

import pytest

from .helpers import compile_spec
from .helpers_indexed import check_emulated_both_layouts, forward, snippet_spec

FAMILY = "gather"

# name → (expression, inputs)
UPSCALE = {
    "nearest_x2_fp32": ("F.interpolate(x, scale_factor=2, mode='nearest')", "[torch.randn(2, 3, 5, 7)]"),
    "nearest_x2_1x1": ("F.interpolate(x, scale_factor=2)", "[torch.randn(1, 2, 1, 1)]"),
    "nearest_2_by_4_fp16": ("F.interpolate(x, scale_factor=(2, 4), mode='nearest')",
                            "[torch.randn(2, 3, 6, 9).half()]"),
    "nearest_size_bf16": ("F.interpolate(x, size=(14, 40), mode='nearest')",
                          "[torch.randn(1, 2, 7, 5).to(torch.bfloat16)]"),
    "nearest_x8_wide": ("F.interpolate(x, scale_factor=8)", "[torch.randn(1, 2, 3, 37)]"),
    "nearest_rows_only": ("F.interpolate(x, scale_factor=(2, 1))", "[torch.randn(2, 2, 5, 130).half()]"),
    "nearest_module": ("nn.Upsample(scale_factor=2)(x)", "[torch.randn(2, 4, 9, 3)]"),
    "bilinear_x2_fp32": ("F.interpolate(x, scale_factor=2, mode='bilinear')", "[torch.randn(2, 3, 5, 7)]"),
    "bilinear_x2_1x1": ("F.interpolate(x, scale_factor=2, mode='bilinear')", "[torch.randn(1, 2, 1, 1)]"),
    "bilinear_x2_1xW": ("F.interpolate(x, scale_factor=2, mode='bilinear')", "[torch.randn(1, 2, 1, 6)]"),
    "bilinear_size_fp16": ("F.interpolate(x, size=(26, 18), mode='bilinear', align_corners=False)",
                           "[torch.randn(2, 3, 13, 9).half()]"),
    "bilinear_x2_wide_bf16": ("F.interpolate(x, scale_factor=2.0, mode='bilinear')",
                              "[torch.randn(1, 2, 3, 150).to(torch.bfloat16)]"),
}


@pytest.fixture
def upscale_on(monkeypatch):
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    monkeypatch.setitem(MEMORY_TUNING, "upscale_whole", True)
    monkeypatch.setitem(MEMORY_TUNING, "upscale_tile_elems", 256)  # several row and column blocks per plane
    return MEMORY_TUNING


@pytest.mark.parametrize("name", sorted(UPSCALE))
def test_upscale_at_input_resolution(name, upscale_on):
    expr, inputs = UPSCALE[name]
    spec = snippet_spec(forward(expr), inputs, FAMILY)
    targets = ("sm_90", "sm_100") if name in ("nearest_x2_fp32", "bilinear_x2_fp32") else ("sm_90",)
    source = compile_spec(spec, targets)
    assert "input pixels per block" in source.notes[0], source.notes
    if "bilinear" in name:
        assert source.code.count("ct.gather(") == 9
    else:
        assert "ct.gather(" not in source.code
    check_emulated_both_layouts(spec, source)


def test_bilinear_x2_matches_pytorch_in_float32(upscale_on):
    """The x2 blend reproduces PyTorch's float32 bilinear result to rounding (same weights, same blend order) at
    interior pixels and edges."""
    import torch
    import torch.nn.functional as F

    from .cutile_emulator import emulation, load_emulated
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(forward("F.interpolate(x, scale_factor=2, mode='bilinear')"), "[torch.randn(2, 3, 11, 19)]",
                        FAMILY)
    source = generate_kernel(spec)
    assert source.code.count("ct.gather(") == 9
    x = torch.randn(2, 3, 11, 19, generator=torch.Generator().manual_seed(3))
    with emulation():
        out = load_emulated(source)[source.launch_name](x)
    torch.testing.assert_close(out, F.interpolate(x, scale_factor=2, mode="bilinear"), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("expr,inputs", [
    ("F.interpolate(x, scale_factor=3)", "[torch.randn(2, 3, 4, 5)]"),  # not a power of two
    ("F.interpolate(x, size=(7, 9))", "[torch.randn(2, 3, 4, 5)]"),  # not whole
    ("F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=True)", "[torch.randn(2, 3, 4, 5)]"),
    ("F.interpolate(x, scale_factor=4, mode='bilinear')", "[torch.randn(2, 3, 4, 5)]"),  # bilinear beyond x2
    ("F.interpolate(x, scale_factor=2, mode='nearest-exact')", "[torch.randn(2, 3, 4, 5)]"),
    ("F.interpolate(x, scale_factor=2.5)", "[torch.randn(2, 3, 4, 4)]"),  # 1 / 2.5 maps, not 1 / 2 (10 = 4 x 2.5)
    ("torch.relu(F.interpolate(x, scale_factor=2))", "[torch.randn(2, 3, 4, 5)]"),  # a fused epilogue
])
def test_upscale_falls_back_to_gathers(expr, inputs, upscale_on):
    from tilestudio.core.kernels import generate_kernel

    spec = snippet_spec(forward(expr), inputs, FAMILY)
    source = generate_kernel(spec)
    assert "input pixels per block" not in " ".join(source.notes), source.notes


def test_upscale_on_by_default_and_switchable(monkeypatch):
    """Session 30's H100 timings switched the input-resolution layout on; turned off, the gathers come back."""
    from tilestudio.core.kernels import generate_kernel
    from tilestudio.core.kernels.indexing import MEMORY_TUNING

    assert MEMORY_TUNING["upscale_whole"] is True and MEMORY_TUNING["upscale_tile_elems"] == 1024
    spec = snippet_spec(forward("F.interpolate(x, scale_factor=2)"), "[torch.randn(2, 3, 4, 5)]", FAMILY)
    assert "input pixels per block" in " ".join(generate_kernel(spec).notes)
    monkeypatch.setitem(MEMORY_TUNING, "upscale_whole", False)
    assert "input pixels per block" not in " ".join(generate_kernel(spec).notes)
