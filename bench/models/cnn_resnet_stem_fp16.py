import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ResNet's stem: 7x7/2 convolution, batch norm (eval), ReLU, 3x3/2 max pool, in float16."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False).half()
        self.bn = nn.BatchNorm2d(64).half()

    def forward(self, x):
        return F.max_pool2d(torch.relu(self.bn(self.conv(x))), 3, 2, 1)


def get_inputs():
    return [torch.randn(64, 3, 224, 224).half()]


def get_init_inputs():
    return []
