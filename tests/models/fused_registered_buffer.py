import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Registered (non-parameter) buffers used for input standardization before a Linear."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.register_buffer("mean", torch.linspace(-1.0, 1.0, in_features))
        self.register_buffer("inv_std", 1.0 / torch.linspace(0.5, 2.0, in_features))
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = (x - self.mean) * self.inv_std
        return torch.relu(self.fc(x))


batch_size = 8
in_features = 27
out_features = 14


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
