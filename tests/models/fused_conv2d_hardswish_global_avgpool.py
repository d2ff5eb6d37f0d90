import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d + Hardswish + global average pool (mean over H, W) + Linear classifier."""

    def __init__(self, in_channels, out_channels, num_classes):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1)
        self.fc = nn.Linear(out_channels, num_classes)

    def forward(self, x):
        x = F.hardswish(self.conv(x))
        x = x.mean(dim=(2, 3))
        return self.fc(x)


batch_size = 2
in_channels = 3
out_channels = 24
num_classes = 10
height = 31
width = 31


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, num_classes]
