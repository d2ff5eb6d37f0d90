import torch
import torch.nn as nn


class Model(nn.Module):
    """One batch_first LSTM layer, hidden 1024, in bfloat16 (cuDNN's territory in eager)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1024, 1024, batch_first=True).to(torch.bfloat16)

    def forward(self, x):
        return self.lstm(x)[0]


def get_inputs():
    return [torch.randn(64, 128, 1024, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
