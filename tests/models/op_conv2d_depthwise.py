import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Depthwise nn.Conv2d (groups == in_channels == out_channels)."""

    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=1, groups=channels)

    def forward(self, x):
        return self.conv(x)


batch_size = 3
channels = 12
kernel_size = 3
height = 25
width = 25


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size]
