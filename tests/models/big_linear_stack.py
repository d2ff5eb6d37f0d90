# Never run for real: ~20 GB of float32 tensors; analyzed on the meta device only.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Huge two-layer MLP (up-projection, GELU, down-projection): ~17.2 GB of weights + ~2.1 GB input, meta-only."""

    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.up = nn.Linear(dim, hidden_dim)  # 32768 x 65536 fp32 = 8.6 GB
        self.down = nn.Linear(hidden_dim, dim)  # 65536 x 32768 fp32 = 8.6 GB

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


num_tokens = 16384
dim = 32768
hidden_dim = 65536


def get_inputs():
    # 16384 x 32768 fp32 = 2.1 GB input (hidden activation would be another 4.3 GB).
    return [torch.randn(num_tokens, dim)]


def get_init_inputs():
    return [dim, hidden_dim]
