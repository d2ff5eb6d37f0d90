import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ConvTranspose2d (stride 2) + clamp + multiply by a learned per-channel scale."""

    def __init__(self, in_channels, out_channels, kernel_size, clamp_min, clamp_max):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2, padding=1)
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, out_channels).view(1, out_channels, 1, 1))
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x):
        x = self.deconv(x)
        x = torch.clamp(x, self.clamp_min, self.clamp_max)
        return x * self.scale


batch_size = 2
in_channels = 8
out_channels = 6
kernel_size = 4
height = 13
width = 11


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, -0.3, 0.4]
