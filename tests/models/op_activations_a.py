import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Piecewise activations: ReLU, ReLU6, LeakyReLU(0.2), ELU, SELU, CELU (tuple output)."""

    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()
        self.relu6 = nn.ReLU6()
        self.leaky = nn.LeakyReLU(0.2)
        self.elu = nn.ELU(alpha=1.0)
        self.selu = nn.SELU()
        self.celu = nn.CELU(alpha=0.5)

    def forward(self, x):
        return (
            self.relu(x),
            self.relu6(x),
            self.leaky(x),
            self.elu(x),
            self.selu(x),
            self.celu(x),
        )


batch_size = 8
dim = 257


def get_inputs():
    return [torch.randn(batch_size, dim) * 4.0]


def get_init_inputs():
    return []
