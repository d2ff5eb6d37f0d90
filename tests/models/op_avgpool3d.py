import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.AvgPool3d kernel 3, stride 2, padding 1 (count_include_pad default)."""

    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool3d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


batch_size = 2
channels = 4
depth = 9
height = 10
width = 7
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, depth, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
