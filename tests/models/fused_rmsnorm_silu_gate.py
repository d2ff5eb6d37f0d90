import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """RMSNorm of x, multiplied by SiLU(gate) (gated RMSNorm, as in Mamba-style blocks)."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.linspace(0.9, 1.1, dim))

    def forward(self, x, gate):
        normed = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        return normed * F.silu(gate)


batch_size = 3
seq_len = 11
dim = 88


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim), torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, 1e-5]
