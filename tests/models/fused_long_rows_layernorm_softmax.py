import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm and softmax over 65536-float rows: each row is split over cooperating blocks that read it once."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return torch.softmax(self.norm(x) * 2.0, -1)


rows = 8
dim = 65536


def get_inputs():
    return [torch.randn(rows, dim)]


def get_init_inputs():
    return [dim]
