import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.std over dims (1, 2) with keepdim=True."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.std(x, dim=(1, 2), keepdim=True)


batch_size = 3
d1 = 8
d2 = 25
d3 = 6


def get_inputs():
    return [torch.randn(batch_size, d1, d2, d3)]


def get_init_inputs():
    return []
