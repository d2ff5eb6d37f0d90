import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.argmax along a dimension (int64 output)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.argmax(x, dim=self.dim)


batch_size = 8
d1 = 37
d2 = 21


def get_inputs():
    return [torch.randn(batch_size, d1, d2)]


def get_init_inputs():
    return [1]
