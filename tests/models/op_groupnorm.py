import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.GroupNorm with 4 groups over 12 channels."""

    def __init__(self, num_groups, num_channels):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups, num_channels)

    def forward(self, x):
        return self.norm(x)


batch_size = 2
num_groups = 4
num_channels = 12
height = 13
width = 9


def get_inputs():
    return [torch.randn(batch_size, num_channels, height, width)]


def get_init_inputs():
    return [num_groups, num_channels]
