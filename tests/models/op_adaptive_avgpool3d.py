import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.AdaptiveAvgPool3d to output size (2, 3, 3)."""

    def __init__(self, output_size):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool3d(output_size)

    def forward(self, x):
        return self.pool(x)


batch_size = 2
channels = 5
depth = 7
height = 10
width = 11


def get_inputs():
    return [torch.randn(batch_size, channels, depth, height, width)]


def get_init_inputs():
    return [(2, 3, 3)]
