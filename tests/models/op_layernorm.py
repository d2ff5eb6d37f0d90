import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.LayerNorm over the last dimension of a (B, T, D) tensor."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x)


batch_size = 4
seq_len = 17
dim = 100


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim]
