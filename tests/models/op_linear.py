import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Single nn.Linear (GEMM with bias) on an unaligned feature size."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.fc(x)


batch_size = 7
in_features = 100
out_features = 50


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
