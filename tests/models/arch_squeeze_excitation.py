import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv + Squeeze-and-Excitation: global avg pool, FC-ReLU-FC-sigmoid channel gate, broadcast multiply."""

    def __init__(self, in_channels, channels, reduction):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Linear(channels, channels // reduction)
        self.fc2 = nn.Linear(channels // reduction, channels)

    def forward(self, x):
        x = F.relu(self.conv(x))
        b, c, _, _ = x.shape
        s = self.pool(x).view(b, c)
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(s))))
        return x * s.view(b, c, 1, 1)


batch_size = 2
in_channels = 5
channels = 32
reduction = 4
height = 13
width = 17


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, channels, reduction]
