import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.ConvTranspose2d with stride 2, padding 1, output_padding 1."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(
            in_channels, out_channels, kernel_size, stride=2, padding=1, output_padding=1
        )

    def forward(self, x):
        return self.deconv(x)


batch_size = 2
in_channels = 8
out_channels = 5
kernel_size = 3
height = 15
width = 17


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
