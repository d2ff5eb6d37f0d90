import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.sum over dims (1, 2) of a 4D tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=(1, 2))


batch_size = 4
d1 = 7
d2 = 33
d3 = 10


def get_inputs():
    return [torch.randn(batch_size, d1, d2, d3)]


def get_init_inputs():
    return []
