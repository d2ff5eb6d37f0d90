import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv1d + GELU + MaxPool1d, then transpose to (B, T, C) and make contiguous."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.pool = nn.MaxPool1d(2)

    def forward(self, x):
        x = F.gelu(self.conv(x))
        x = self.pool(x)
        return x.transpose(1, 2).contiguous()


batch_size = 3
in_channels = 10
out_channels = 20
kernel_size = 5
length = 75


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
