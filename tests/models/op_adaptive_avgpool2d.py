import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.AdaptiveAvgPool2d to a non-divisible output size (5, 7)."""

    def __init__(self, output_size):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(output_size)

    def forward(self, x):
        return self.pool(x)


batch_size = 2
channels = 10
height = 23
width = 30


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [(5, 7)]
