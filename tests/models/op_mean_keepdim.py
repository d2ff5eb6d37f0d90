import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.mean over the middle dimension with keepdim=True."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x.mean(dim=self.dim, keepdim=True)


batch_size = 8
d1 = 50
d2 = 19


def get_inputs():
    return [torch.randn(batch_size, d1, d2)]


def get_init_inputs():
    return [1]
