import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Reversed (suffix) cumsum: x.flip(d).cumsum(d).flip(d)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x.flip(self.dim).cumsum(self.dim).flip(self.dim)


batch_size = 10
length = 77


def get_inputs():
    return [torch.randn(batch_size, length)]


def get_init_inputs():
    return [1]
