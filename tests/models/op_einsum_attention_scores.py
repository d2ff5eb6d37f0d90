import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.einsum 'bhqd,bhkd->bhqk' (attention scores Q @ K^T per head)."""

    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        return torch.einsum("bhqd,bhkd->bhqk", q, k)


batch_size = 2
heads = 3
q_len = 11
k_len = 13
head_dim = 24


def get_inputs():
    return [
        torch.randn(batch_size, heads, q_len, head_dim),
        torch.randn(batch_size, heads, k_len, head_dim),
    ]


def get_init_inputs():
    return []
