import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Pre-norm transformer encoder block: LayerNorm, hand-written MHA (q/k/v Linears, softmax), residuals, GELU MLP."""

    def __init__(self, dim, num_heads, mlp_ratio):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.ln1 = nn.LayerNorm(dim)
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        hidden = dim * mlp_ratio
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def _split(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, n, d = x.shape
        h = self.ln1(x)
        q = self._split(self.q_proj(h))
        k = self._split(self.k_proj(h))
        v = self._split(self.v_proj(h))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        attn = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(attn, v).transpose(1, 2).reshape(b, n, d)
        x = x + self.out_proj(ctx)
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x


batch_size = 2
seq_len = 19
dim = 96
num_heads = 6
mlp_ratio = 4


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, num_heads, mlp_ratio]
