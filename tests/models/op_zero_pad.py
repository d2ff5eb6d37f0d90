import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Zero padding of the last two dims: an odd left pad (each output word splices two input words) and an even
    one, on rows whose padded width is not a multiple of 16 bytes."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        odd = F.pad(x, (1, 1, 1, 1))
        even = F.pad(x, (2, 4, 0, 3))
        return odd, even


def get_inputs():
    return [torch.randn(4, 24, 30, 46).half()]


def get_init_inputs():
    return []
