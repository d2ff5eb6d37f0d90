import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm + GELU + residual add of the input (square Linear)."""

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return x + F.gelu(self.fc(x))


batch_size = 4
seq_len = 9
dim = 80


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim]
