import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Smooth activations: GELU exact, GELU tanh, SiLU, Mish, Softplus, Softsign (tuple output)."""

    def __init__(self):
        super().__init__()
        self.gelu = nn.GELU()
        self.gelu_tanh = nn.GELU(approximate="tanh")
        self.silu = nn.SiLU()
        self.mish = nn.Mish()
        self.softplus = nn.Softplus(beta=1.0, threshold=20.0)
        self.softsign = nn.Softsign()

    def forward(self, x):
        return (
            self.gelu(x),
            self.gelu_tanh(x),
            self.silu(x),
            self.mish(x),
            self.softplus(x),
            self.softsign(x),
        )


batch_size = 4
seq_len = 7
dim = 120


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim) * 3.0]


def get_init_inputs():
    return []
