import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Matmul with a weight parameter, sum over features (keepdim), then max over the sequence."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.05)

    def forward(self, x):
        h = torch.matmul(x, self.weight)  # (B, T, out)
        s = torch.sum(h, dim=-1, keepdim=True)  # (B, T, 1)
        return torch.max(s, dim=1).values  # (B, 1)


batch_size = 4
seq_len = 19
in_features = 30
out_features = 22


def get_inputs():
    return [torch.randn(batch_size, seq_len, in_features)]


def get_init_inputs():
    return [in_features, out_features]
