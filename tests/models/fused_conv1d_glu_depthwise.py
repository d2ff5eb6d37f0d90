import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conformer convolution module: pointwise conv to twice the channels, GLU over channels, depthwise conv,
    batch norm (eval), SiLU, pointwise conv."""

    def __init__(self, channels, kernel_size):
        super().__init__()
        self.pw1 = nn.Conv1d(channels, 2 * channels, 1)
        self.dw = nn.Conv1d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)
        self.bn = nn.BatchNorm1d(channels)
        self.pw2 = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        x = F.glu(self.pw1(x), dim=1)
        return self.pw2(F.silu(self.bn(self.dw(x))))


batch_size = 4
channels = 64
length = 100
kernel_size = 31


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [channels, kernel_size]
