import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Basic slicing (step, negative index), select, and index_select, followed by arithmetic."""

    def __init__(self):
        super().__init__()
        self.register_buffer("perm", torch.tensor([4, 0, 2, 9, 7], dtype=torch.long))

    def forward(self, x):
        a = x[:, 1:-1:2, :]  # strided slice
        b = x[:, -1, :]  # select last row
        c = torch.index_select(x, 1, self.perm)  # gather rows
        return a.sum(1) + b * 2.0 + c.mean(1)


batch_size = 4
rows = 15
cols = 23


def get_inputs():
    return [torch.randn(batch_size, rows, cols)]


def get_init_inputs():
    return []
