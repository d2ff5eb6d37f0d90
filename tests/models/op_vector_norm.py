import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Vector norms: torch.norm (p=2 over dim 1) and torch.linalg.vector_norm (ord=1 and inf)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        a = torch.norm(x, p=2, dim=1)
        b = torch.linalg.vector_norm(x, ord=1, dim=-1)
        c = torch.linalg.vector_norm(x, ord=float("inf"), dim=(1, 2))
        return a, b, c


batch_size = 4
d1 = 30
d2 = 17


def get_inputs():
    return [torch.randn(batch_size, d1, d2)]


def get_init_inputs():
    return []
