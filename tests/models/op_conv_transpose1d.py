import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.ConvTranspose1d with stride 2 and padding 1."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.deconv = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=2, padding=1)

    def forward(self, x):
        return self.deconv(x)


batch_size = 4
in_channels = 6
out_channels = 10
kernel_size = 4
length = 50


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
