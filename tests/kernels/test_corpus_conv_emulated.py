"""Every corpus convolution kernel runs on the CPU emulator against its float64 reference (the corpus's convs are
small; ~25 s in all), so the paths the defaults pick for real models (width-tap folding for few input channels,
pointwise in place, depthwise, transposed) are checked numerically in CI, not only compiled."""

from __future__ import annotations

import pytest

from .cutile_emulator import check_emulated
from .helpers_indexed import CORPUS, family_specs, model_id


@pytest.mark.parametrize("path", CORPUS, ids=model_id)
def test_corpus_conv_kernels_emulate(path, analyses):
    from tilestudio.core.kernels import generate_kernel

    specs = family_specs(analyses(path)[1], "conv")
    if not specs:
        pytest.skip("no conv kernel in this model")
    for spec in specs:
        result = check_emulated(spec, generate_kernel(spec))
        assert result.ok, f"{spec.id}: {result.message}"
