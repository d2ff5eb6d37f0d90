import torch
import torch.nn as nn


class Model(nn.Module):
    """Two stacked batch_first GRU layers, hidden 512, in float16."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(512, 512, num_layers=2, batch_first=True).half()

    def forward(self, x):
        out, h = self.gru(x)
        return out, h


def get_inputs():
    return [torch.randn(128, 64, 512).half()]


def get_init_inputs():
    return []
