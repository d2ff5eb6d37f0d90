import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.AdaptiveMaxPool2d to output size (3, 4) with overlapping windows."""

    def __init__(self, output_size):
        super().__init__()
        self.pool = nn.AdaptiveMaxPool2d(output_size)

    def forward(self, x):
        return self.pool(x)


batch_size = 2
channels = 6
height = 17
width = 21


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [(3, 4)]
