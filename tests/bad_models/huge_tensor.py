import torch
import torch.nn as nn

# 8 GiB of float32 at import time, outside get_inputs(): over a 2048 MB cap.
LOOKUP = torch.zeros(1 << 31)


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
