import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.InstanceNorm2d with affine parameters (no running stats)."""

    def __init__(self, num_features):
        super().__init__()
        self.norm = nn.InstanceNorm2d(num_features, affine=True)

    def forward(self, x):
        return self.norm(x)


batch_size = 3
num_features = 7
height = 18
width = 22


def get_inputs():
    return [torch.randn(batch_size, num_features, height, width)]


def get_init_inputs():
    return [num_features]
