import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Plain 2D matrix multiply (torch.matmul) with odd M/K/N."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 33
K = 50
N = 70


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
