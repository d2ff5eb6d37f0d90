import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Softmax chain: (q @ k^T) * 1/sqrt(d) -> softmax -> @ v."""

    def __init__(self, head_dim):
        super().__init__()
        self.scale = 1.0 / (head_dim ** 0.5)

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        probs = torch.softmax(scores, dim=-1)
        return torch.matmul(probs, v)


batch_size = 2
seq_q = 10
seq_k = 14
head_dim = 32


def get_inputs():
    return [
        torch.randn(batch_size, seq_q, head_dim),
        torch.randn(batch_size, seq_k, head_dim),
        torch.randn(batch_size, seq_k, head_dim),
    ]


def get_init_inputs():
    return [head_dim]
