import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """In-place ops on intermediates: relu_(), mul_(2), += y, clamp_()."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x, y):
        h = self.fc(x)
        h.relu_()
        h.mul_(2.0)
        h += y
        h.clamp_(max=3.0)
        return h


batch_size = 9
in_features = 40
out_features = 25


def get_inputs():
    return [torch.randn(batch_size, in_features), torch.randn(batch_size, out_features)]


def get_init_inputs():
    return [in_features, out_features]
