import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.LogSoftmax over the last dimension."""

    def __init__(self):
        super().__init__()
        self.log_softmax = nn.LogSoftmax(dim=-1)

    def forward(self, x):
        return self.log_softmax(x)


batch_size = 10
dim = 333


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
