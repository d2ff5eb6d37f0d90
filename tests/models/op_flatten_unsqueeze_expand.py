import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """flatten, unsqueeze and expand (broadcast materialization) followed by an add and tanh."""

    def __init__(self):
        super().__init__()

    def forward(self, x, v):
        f = torch.flatten(x, start_dim=1)  # (B, C*H*W)
        e = v.unsqueeze(0).expand(f.shape[0], -1)  # (B, C*H*W)
        return torch.tanh(f + e)


batch_size = 5
channels = 3
height = 7
width = 9


def get_inputs():
    return [
        torch.randn(batch_size, channels, height, width),
        torch.randn(channels * height * width),
    ]


def get_init_inputs():
    return []
