import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Unary math: abs, exp, log (on abs(x) + 1), combined into one output."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        a = torch.abs(x)
        e = torch.exp(-a)
        l = torch.log(a + 1.0)
        return e + l


batch_size = 6
dim = 333


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
