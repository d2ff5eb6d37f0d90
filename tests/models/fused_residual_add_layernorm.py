import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Residual add of two inputs followed by LayerNorm (post-norm pattern)."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-5)

    def forward(self, x, residual):
        return self.norm(x + residual)


batch_size = 4
seq_len = 15
dim = 96


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim), torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim]
