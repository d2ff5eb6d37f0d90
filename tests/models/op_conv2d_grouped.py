import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Grouped nn.Conv2d with groups=2 and no padding."""

    def __init__(self, in_channels, out_channels, kernel_size, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, groups=groups)

    def forward(self, x):
        return self.conv(x)


batch_size = 2
in_channels = 8
out_channels = 12
kernel_size = 3
groups = 2
height = 19
width = 23


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, groups]
