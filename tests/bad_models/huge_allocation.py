import numpy as np
import torch
import torch.nn as nn

# 4 GiB of float32 at import time: over a 2048 MB cap.
TABLE = np.ones((1024, 1024, 1024), dtype=np.float32)


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
