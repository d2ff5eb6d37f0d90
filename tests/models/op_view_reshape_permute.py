import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """view, permute, contiguous, reshape, transpose (head split/merge) followed by a scale."""

    def __init__(self, num_heads):
        super().__init__()
        self.num_heads = num_heads

    def forward(self, x):
        b, t, d = x.shape
        h = x.view(b, t, self.num_heads, d // self.num_heads)
        h = h.permute(0, 2, 1, 3).contiguous()
        h = h * 0.5 + 1.0
        h = h.transpose(1, 2).reshape(b, t, d)
        return h


batch_size = 2
seq_len = 11
num_heads = 3
dim = 60


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [num_heads]
