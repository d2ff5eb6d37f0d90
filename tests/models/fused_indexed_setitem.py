import torch
import torch.nn as nn


class Model(nn.Module):
    """Indexed writes in forward, as ported research code often has them: a boolean-mask clamp (h[h < -1] = -1),
    a causal mask applied with scores[:, causal] = -inf, and a per-position bias added at chosen sequence
    positions with out[:, pos] += bias."""

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.bias = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x, pos):
        T = x.shape[1]
        h = self.fc(x)
        h[h < -1.0] = -1.0
        scores = h @ h.transpose(1, 2) * h.shape[-1] ** -0.5
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        scores[:, causal] = float("-inf")
        out = scores.softmax(dim=-1) @ h
        out[:, pos] += self.bias
        return out


batch_size = 4
seq_len = 33
dim = 48


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim), torch.tensor([0, 5, 17, -1])]


def get_init_inputs():
    return [dim]
