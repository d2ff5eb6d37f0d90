import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.AvgPool2d 3x3, stride 2, padding 1, count_include_pad=False."""

    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size, stride=stride, padding=padding, count_include_pad=False)

    def forward(self, x):
        return self.pool(x)


batch_size = 2
channels = 8
height = 25
width = 31
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
