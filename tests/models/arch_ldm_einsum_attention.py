import torch
import torch.nn as nn


class Model(nn.Module):
    """Latent-diffusion style self-attention: q/k/v projections, heads folded into the batch, scores and output as
    einsums with k as stored ("b i d, b j d -> b i j"), softmax, output projection."""

    def __init__(self, dim, heads, dim_head):
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_k = nn.Linear(dim, inner, bias=False)
        self.to_v = nn.Linear(dim, inner, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner, dim), nn.Dropout(0.0))

    def forward(self, x):
        b, n, _ = x.shape
        h = self.heads
        q, k, v = (t.reshape(b, n, h, -1).permute(0, 2, 1, 3).reshape(b * h, n, -1)
                   for t in (self.to_q(x), self.to_k(x), self.to_v(x)))
        sim = torch.einsum("b i d, b j d -> b i j", q, k) * self.scale
        attn = sim.softmax(dim=-1)
        out = torch.einsum("b i j, b j d -> b i d", attn, v)
        out = out.reshape(b, h, n, -1).permute(0, 2, 1, 3).reshape(b, n, -1)
        return self.to_out(out)


batch_size = 2
tokens = 50
dim = 64
heads = 4
dim_head = 24


def get_inputs():
    return [torch.randn(batch_size, tokens, dim)]


def get_init_inputs():
    return [dim, heads, dim_head]
