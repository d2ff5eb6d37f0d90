"""The CPU emulator is strict where cuTile leaves things unspecified: a kernel relying on UNDETERMINED padding
must fail here, through a sum, a NaN-ignoring max or min alike."""

import math

import pytest
import torch

from .cutile_emulator import EMULATED_CT as ct
from .cutile_emulator import emulation


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_undetermined_padding_breaks_sum_max_and_min(dtype):
    x = torch.linspace(-1.0, 1.0, 5).to(dtype)
    with emulation():
        tile = ct.load(x, index=(0,), shape=(8,))  # 3 padded lanes, padding UNDETERMINED
        assert torch.equal(tile[:5], x)
        assert math.isnan(float(ct.sum(tile.to(torch.float32))))
        assert float(ct.max(tile)) > 1e3  # a max that ignores NaN still sees the padding
        assert float(ct.min(tile)) < -1e3
        zero = ct.load(x, index=(0,), shape=(8,), padding_mode=ct.PaddingMode.ZERO)
        assert torch.equal(zero[5:], torch.zeros(3, dtype=dtype))


def test_undetermined_padding_of_a_2d_tile_covers_every_padded_lane():
    x = torch.randn(3, 5)
    with emulation():
        tile = ct.load(x, index=(0, 0), shape=(4, 8))
    pad = torch.ones(4, 8, dtype=torch.bool)
    pad[:3, :5] = False
    values = tile[pad]
    assert torch.isnan(values).any() and (values > 1e30).any() and (values < -1e30).any()
    assert torch.equal(tile[:3, :5], x)
