import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Single-layer batch_first nn.GRU with an explicit initial hidden state input."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, batch_first=True)

    def forward(self, x, h0):
        out, h = self.gru(x, h0)
        return out, h


batch_size = 4
seq_len = 7
input_size = 16
hidden_size = 25


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size), torch.randn(1, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size]
