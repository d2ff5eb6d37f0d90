import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Max reduction along a dim: torch.max(...).values and torch.amax (tuple output)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        a = torch.max(x, dim=self.dim).values
        b = torch.amax(x, dim=-1)
        return a, b


batch_size = 6
d1 = 45
d2 = 31


def get_inputs():
    return [torch.randn(batch_size, d1, d2)]


def get_init_inputs():
    return [1]
