import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.cat on a non-last dim and torch.stack on a new dim, followed by a sum."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        x = torch.cat([a, b], dim=1)
        y = torch.stack([a, c], dim=0)
        return x.relu(), y.sum(0)


batch_size = 3
rows_a = 10
rows_b = 7
cols = 21


def get_inputs():
    return [
        torch.randn(batch_size, rows_a, cols),
        torch.randn(batch_size, rows_b, cols),
        torch.randn(batch_size, rows_a, cols),
    ]


def get_init_inputs():
    return []
