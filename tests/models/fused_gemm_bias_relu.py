import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm (no bias) + separate bias parameter add + ReLU."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.linspace(-0.2, 0.2, out_features))

    def forward(self, x):
        return torch.relu(self.fc(x) + self.bias)


batch_size = 10
in_features = 100
out_features = 70


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
