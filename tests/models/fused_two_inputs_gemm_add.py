import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Two inputs through two Linears, summed, multiplied elementwise, then tanh."""

    def __init__(self, in_a, in_b, out_features):
        super().__init__()
        self.fa = nn.Linear(in_a, out_features)
        self.fb = nn.Linear(in_b, out_features)

    def forward(self, a, b):
        ha = self.fa(a)
        hb = self.fb(b)
        return torch.tanh(ha + hb) * torch.sigmoid(hb)


batch_size = 6
in_a = 30
in_b = 45
out_features = 20


def get_inputs():
    return [torch.randn(batch_size, in_a), torch.randn(batch_size, in_b)]


def get_init_inputs():
    return [in_a, in_b, out_features]
