import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm + logsumexp(dim=1, keepdim) + LeakyReLU + ReLU + GELU chain."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.fc(x)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        x = F.leaky_relu(x, negative_slope=0.01)
        x = torch.relu(x)
        x = F.gelu(x)
        return x


batch_size = 16
in_features = 50
out_features = 37


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
