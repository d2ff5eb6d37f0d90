import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Python control flow on constants: `if self.use_bias` and a for-loop over a ModuleList of 3 Linears."""

    def __init__(self, dim, use_bias, num_layers):
        super().__init__()
        self.use_bias = use_bias
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(num_layers)])
        self.extra_bias = nn.Parameter(torch.full((dim,), 0.1))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = F.relu(x)
        if self.use_bias:
            x = x + self.extra_bias
        else:
            x = x - self.extra_bias
        return x


batch_size = 6
dim = 42


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, True, 3]
