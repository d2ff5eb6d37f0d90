import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm + multiply by constant scale + sigmoid."""

    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return torch.sigmoid(self.fc(x) * self.scale)


batch_size = 12
in_features = 64
out_features = 33


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, 2.5]
