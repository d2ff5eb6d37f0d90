import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.ConvTranspose3d with stride 2 (no padding)."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=2)

    def forward(self, x):
        return self.deconv(x)


batch_size = 2
in_channels = 4
out_channels = 6
kernel_size = 3
depth = 5
height = 7
width = 9


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
