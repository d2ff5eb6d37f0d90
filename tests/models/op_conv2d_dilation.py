import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.Conv2d 3x3 with dilation 2, padding 2, no bias, non-square input."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(
            in_channels, out_channels, kernel_size, padding=2, dilation=2, bias=False
        )

    def forward(self, x):
        return self.conv(x)


batch_size = 2
in_channels = 8
out_channels = 12
kernel_size = 3
height = 20
width = 27


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
