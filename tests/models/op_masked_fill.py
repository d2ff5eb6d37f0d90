import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Tensor.masked_fill with a boolean mask input and a scalar fill value."""

    def __init__(self, fill_value):
        super().__init__()
        self.fill_value = fill_value

    def forward(self, x, mask):
        return x.masked_fill(mask, self.fill_value) * 2.0


batch_size = 5
rows = 12
cols = 33


def get_inputs():
    x = torch.randn(batch_size, rows, cols)
    mask = torch.rand(batch_size, rows, cols) > 0.5
    return [x, mask]


def get_init_inputs():
    return [-3.0]
