import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.MultiheadAttention (batch_first) self-attention, output only."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        out, _ = self.attn(x, x, x, need_weights=False)
        return out


batch_size = 2
seq_len = 13
embed_dim = 48
num_heads = 4


def get_inputs():
    return [torch.randn(batch_size, seq_len, embed_dim)]


def get_init_inputs():
    return [embed_dim, num_heads]
