import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Min reduction along a dim via torch.min(...).values and torch.amin with keepdim."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        a = torch.min(x, dim=self.dim).values
        b = torch.amin(x, dim=0, keepdim=True)
        return a, b


batch_size = 5
d1 = 27
d2 = 40


def get_inputs():
    return [torch.randn(batch_size, d1, d2)]


def get_init_inputs():
    return [2]
