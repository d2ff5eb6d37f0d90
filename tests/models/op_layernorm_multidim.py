import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.LayerNorm over the last two dimensions (normalized_shape of rank 2)."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.norm = nn.LayerNorm(normalized_shape, eps=1e-6)

    def forward(self, x):
        return self.norm(x)


batch_size = 3
channels = 5
height = 9
width = 14


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [(height, width)]
