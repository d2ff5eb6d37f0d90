import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    os.kill(os.getpid(), 9)
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
