import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.MaxPool3d kernel 2, stride 2 on odd depth/height/width (floor mode)."""

    def __init__(self, kernel_size, stride):
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size, stride=stride)

    def forward(self, x):
        return self.pool(x)


batch_size = 2
channels = 5
depth = 7
height = 11
width = 13
kernel_size = 2
stride = 2


def get_inputs():
    return [torch.randn(batch_size, channels, depth, height, width)]


def get_init_inputs():
    return [kernel_size, stride]
