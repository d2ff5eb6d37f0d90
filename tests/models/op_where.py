import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.where selecting between two tensors on a computed condition."""

    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.where(x > y, x - y, y * 0.1)


batch_size = 7
dim = 64
extra = 3


def get_inputs():
    return [torch.randn(batch_size, extra, dim), torch.randn(batch_size, extra, dim)]


def get_init_inputs():
    return []
