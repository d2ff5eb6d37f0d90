import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Multi-head attention core with additive mask input: bmm, scale, +mask, softmax, dropout(eval), bmm."""

    def __init__(self, head_dim, dropout_p):
        super().__init__()
        self.scale = head_dim ** -0.5
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, q, k, v, attn_bias):
        s = torch.bmm(q, k.transpose(1, 2)) * self.scale
        s = s + attn_bias
        p = self.dropout(torch.softmax(s, dim=-1))
        return torch.bmm(p, v)


batch_heads = 6
seq_len = 17
head_dim = 20


def get_inputs():
    return [
        torch.randn(batch_heads, seq_len, head_dim),
        torch.randn(batch_heads, seq_len, head_dim),
        torch.randn(batch_heads, seq_len, head_dim),
        torch.randn(1, seq_len, seq_len) * 0.1,
    ]


def get_init_inputs():
    return [head_dim, 0.1]
