import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Hard/saturating activations: Hardtanh(-2, 2), Hardswish, Hardsigmoid, Sigmoid, Tanh, Tanhshrink."""

    def __init__(self):
        super().__init__()
        self.hardtanh = nn.Hardtanh(-2.0, 2.0)
        self.hardswish = nn.Hardswish()
        self.hardsigmoid = nn.Hardsigmoid()
        self.sigmoid = nn.Sigmoid()
        self.tanh = nn.Tanh()
        self.tanhshrink = nn.Tanhshrink()

    def forward(self, x):
        return (
            self.hardtanh(x),
            self.hardswish(x),
            self.hardsigmoid(x),
            self.sigmoid(x),
            self.tanh(x),
            self.tanhshrink(x),
        )


batch_size = 3
channels = 5
height = 11
width = 13


def get_inputs():
    return [torch.randn(batch_size, channels, height, width) * 4.0]


def get_init_inputs():
    return []
