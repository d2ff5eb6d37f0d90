import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """torch.einsum 'bij,bjk->bik' (batched matmul written as einsum)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.einsum("bij,bjk->bik", a, b)


batch_size = 5
I = 12
J = 30
K = 9


def get_inputs():
    return [torch.randn(batch_size, I, J), torch.randn(batch_size, J, K)]


def get_init_inputs():
    return []
