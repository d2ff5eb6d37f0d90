import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.GRUCell unrolled over a constant number of steps with x[:, t] indexing, plus output Linear."""

    def __init__(self, input_size, hidden_size, steps):
        super().__init__()
        self.hidden_size = hidden_size
        self.steps = steps
        self.cell = nn.GRUCell(input_size, hidden_size)
        self.out = nn.Linear(hidden_size, input_size)

    def forward(self, x):
        h = x.new_zeros(x.shape[0], self.hidden_size)
        outs = []
        for t in range(self.steps):
            h = self.cell(x[:, t], h)
            outs.append(h)
        seq = torch.stack(outs, dim=1)
        return self.out(seq), h


batch_size = 3
steps = 5
input_size = 14
hidden_size = 27


def get_inputs():
    return [torch.randn(batch_size, steps, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, steps]
