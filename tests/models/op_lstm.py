import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Two-layer batch_first nn.LSTM; returns the output sequence and final hidden state."""

    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=num_layers, batch_first=True)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return out, h


batch_size = 3
seq_len = 9
input_size = 20
hidden_size = 30
num_layers = 2


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
