import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d (no bias) + BatchNorm2d (eval) + ReLU, the classic CNN stem unit."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.linspace(-0.3, 0.3, out_channels))
            self.bn.running_var.copy_(torch.linspace(0.6, 1.5, out_channels))

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


batch_size = 2
in_channels = 3
out_channels = 16
kernel_size = 3
height = 30
width = 30


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
