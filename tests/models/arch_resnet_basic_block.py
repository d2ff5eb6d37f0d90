import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ResNet basic block: conv3x3-BN-ReLU-conv3x3-BN + identity shortcut, then ReLU."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.bn1.running_var.copy_(torch.linspace(0.5, 1.5, channels))
            self.bn2.running_mean.copy_(torch.linspace(-0.2, 0.2, channels))

    def forward(self, x):
        identity = x
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)


batch_size = 2
channels = 16
height = 21
width = 21


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
