import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    while True: pass  # one line, so the reported line is exact whatever instruction the loop is on


def get_init_inputs():
    return []
