import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Two conv branches (1x1 and 3x3) on the same input, concatenated on channels, then ReLU."""

    def __init__(self, in_channels, c1, c3):
        super().__init__()
        self.branch1 = nn.Conv2d(in_channels, c1, 1)
        self.branch3 = nn.Conv2d(in_channels, c3, 3, padding=1)

    def forward(self, x):
        a = self.branch1(x)
        b = self.branch3(x)
        return torch.relu(torch.cat([a, b], dim=1))


batch_size = 2
in_channels = 6
c1 = 5
c3 = 7
height = 17
width = 20


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, c1, c3]
