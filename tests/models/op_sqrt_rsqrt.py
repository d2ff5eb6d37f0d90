import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.sqrt and torch.rsqrt on a strictly positive input (tuple output)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        p = x.abs() + 0.1
        return torch.sqrt(p), torch.rsqrt(p)


batch_size = 4
d1 = 25
d2 = 21


def get_inputs():
    return [torch.randn(batch_size, d1, d2)]


def get_init_inputs():
    return []
