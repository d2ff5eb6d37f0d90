"""The export-time stand-ins of core/capture_shims.py compute what the originals compute."""

import pytest
import torch
import torch.nn.functional as F

from tilestudio.core.capture_shims import _gaussian_nll_loss, tracing


@pytest.mark.parametrize("var_shape", [(4, 3, 5), (4, 3), (4, 1, 5), "float"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll_matches_pytorch(var_shape, reduction, full):
    g = torch.Generator().manual_seed(0)
    mu, target = torch.randn(4, 3, 5, generator=g), torch.randn(4, 3, 5, generator=g)
    var = 0.7 if var_shape == "float" else torch.rand(var_shape, generator=g) + 1e-7  # some entries below eps
    want = F.gaussian_nll_loss(mu, target, var, full=full, reduction=reduction)
    got = _gaussian_nll_loss(mu, target, var, full=full, reduction=reduction)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_gaussian_nll_keeps_the_argument_checks():
    x = torch.randn(4, 5)
    with pytest.raises(ValueError, match="incorrect size"):
        _gaussian_nll_loss(x, x, torch.rand(3, 5))
    with pytest.raises(ValueError, match="not valid"):
        _gaussian_nll_loss(x, x, torch.rand(4, 5), reduction="max")
    with pytest.raises(ValueError, match="negative"):
        _gaussian_nll_loss(x, x, -1.0)


def test_exporting_swaps_and_restores():
    original = F.gaussian_nll_loss
    with tracing():
        assert F.gaussian_nll_loss is _gaussian_nll_loss
        assert torch.nn.GaussianNLLLoss()(torch.zeros(2), torch.zeros(2), -torch.ones(2)) is not None  # no value check
    assert F.gaussian_nll_loss is original
    with pytest.raises(RuntimeError), tracing():
        raise RuntimeError("export failed")
    assert F.gaussian_nll_loss is original
