import torch
import torch.nn as nn


class Model(nn.Module):
    """Decoder self-attention written the way many minimal GPT/Llama ports are: the rotary angle table and the
    causal mask are built inside forward from the sequence length (torch.arange, torch.outer, torch.full(-inf)
    .triu(1)) rather than registered as buffers, rotary applied over the two halves of each head."""

    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        D = self.head_dim
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, D).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T, device=x.device, dtype=torch.float32)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, D, 2, device=x.device, dtype=torch.float32) / D))
        angles = torch.outer(pos, inv_freq)
        cos, sin = angles.cos(), angles.sin()
        q1, q2 = q[..., : D // 2], q[..., D // 2:]
        k1, k2 = k[..., : D // 2], k[..., D // 2:]
        q = torch.cat([q1 * cos - q2 * sin, q1 * sin + q2 * cos], dim=-1)
        k = torch.cat([k1 * cos - k2 * sin, k1 * sin + k2 * cos], dim=-1)
        mask = torch.full((T, T), float("-inf"), device=x.device).triu(1)
        att = (q @ k.transpose(-2, -1)) * D ** -0.5 + mask
        y = att.softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


batch_size = 4
seq_len = 40
dim = 128
n_heads = 4


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, n_heads]
