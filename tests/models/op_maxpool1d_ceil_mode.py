import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.MaxPool1d kernel 3, stride 2, ceil_mode=True (partial last window)."""

    def __init__(self, kernel_size, stride):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size, stride=stride, ceil_mode=True)

    def forward(self, x):
        return self.pool(x)


batch_size = 4
channels = 7
length = 50
kernel_size = 3
stride = 2


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [kernel_size, stride]
