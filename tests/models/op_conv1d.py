import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.Conv1d with stride 2 and padding 2 on an odd-length sequence."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=2, padding=2)

    def forward(self, x):
        return self.conv(x)


batch_size = 4
in_channels = 3
out_channels = 16
kernel_size = 5
length = 101


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
