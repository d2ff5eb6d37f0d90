import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.BatchNorm2d in eval mode with non-trivial running statistics and affine params."""

    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.linspace(-0.5, 0.5, num_features))
            self.bn.running_var.copy_(torch.linspace(0.5, 2.0, num_features))
            self.bn.weight.copy_(torch.linspace(0.8, 1.2, num_features))
            self.bn.bias.copy_(torch.linspace(-0.1, 0.1, num_features))

    def forward(self, x):
        return self.bn(x)


batch_size = 3
num_features = 12
height = 15
width = 20


def get_inputs():
    return [torch.randn(batch_size, num_features, height, width)]


def get_init_inputs():
    return [num_features]
