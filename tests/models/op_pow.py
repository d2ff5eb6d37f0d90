import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.pow with a float scalar exponent, an integer exponent, and a tensor exponent."""

    def __init__(self, exponent):
        super().__init__()
        self.exponent = exponent

    def forward(self, x, e):
        base = x.abs() + 0.5
        return torch.pow(base, self.exponent) + x.pow(3) + torch.pow(base, e)


batch_size = 8
dim = 99


def get_inputs():
    return [torch.randn(batch_size, dim), torch.rand(batch_size, dim) * 2.0]


def get_init_inputs():
    return [1.5]
