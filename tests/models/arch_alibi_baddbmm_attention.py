import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """BLOOM-style ALiBi attention: per-head linear position biases added to the scores through
    torch.baddbmm(alibi, q, k^T, beta=1, alpha=1/sqrt(d)), softmax in float32, probabilities times v."""

    def __init__(self, heads):
        super().__init__()
        self.heads = heads
        slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
        self.register_buffer("slopes", slopes)

    def forward(self, q, k, v):
        b, h, t, d = q.shape
        pos = torch.arange(t, device=q.device)
        alibi = (self.slopes[:, None] * pos[None, :])[None].expand(b, h, t).reshape(b * h, 1, t)
        scores = torch.baddbmm(alibi, q.reshape(b * h, t, d), k.reshape(b * h, t, d).transpose(1, 2),
                               beta=1.0, alpha=1.0 / math.sqrt(d))
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        return torch.bmm(probs, v.reshape(b * h, t, d)).view(b, h, t, d)


batch_size = 2
heads = 8
seq_len = 77
head_dim = 64


def get_inputs():
    return [torch.randn(batch_size, heads, seq_len, head_dim) for _ in range(3)]


def get_init_inputs():
    return [heads]
