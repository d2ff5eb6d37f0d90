import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.Dropout in eval mode (identity) between a Linear and a ReLU."""

    def __init__(self, in_features, out_features, p):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return torch.relu(self.dropout(self.fc(x)))


batch_size = 6
in_features = 40
out_features = 30


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, 0.3]
