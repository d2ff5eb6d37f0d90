import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.MaxPool2d kernel 3, stride 2, padding 1, dilation 2."""

    def __init__(self, kernel_size, stride, padding, dilation):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x):
        return self.pool(x)


batch_size = 2
channels = 6
height = 33
width = 29
kernel_size = 3
stride = 2
padding = 1
dilation = 2


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
