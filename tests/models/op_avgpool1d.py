import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.AvgPool1d kernel 4, stride 3, padding 1."""

    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


batch_size = 3
channels = 9
length = 100
kernel_size = 4
stride = 3
padding = 1


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [kernel_size, stride, padding]
