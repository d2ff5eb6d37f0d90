import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d + tanh + scalar scaling + MaxPool2d(2)."""

    def __init__(self, in_channels, out_channels, kernel_size, scale, pool_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale = scale
        self.pool = nn.MaxPool2d(pool_size)

    def forward(self, x):
        x = torch.tanh(self.conv(x))
        x = x * self.scale
        return self.pool(x)


batch_size = 3
in_channels = 3
out_channels = 8
kernel_size = 3
height = 27
width = 25


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, 1.7, 2]
