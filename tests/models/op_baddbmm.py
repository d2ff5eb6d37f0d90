import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.baddbmm: beta * input + alpha * (batch1 @ batch2)."""

    def __init__(self, beta, alpha):
        super().__init__()
        self.beta = beta
        self.alpha = alpha

    def forward(self, inp, batch1, batch2):
        return torch.baddbmm(inp, batch1, batch2, beta=self.beta, alpha=self.alpha)


batch_size = 3
M = 25
K = 40
N = 19


def get_inputs():
    return [
        torch.randn(batch_size, M, N),
        torch.randn(batch_size, M, K),
        torch.randn(batch_size, K, N),
    ]


def get_init_inputs():
    return [0.5, 2.0]
