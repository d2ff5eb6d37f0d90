import ctypes

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    ctypes.string_at(0)  # reads address 0: SIGSEGV
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
