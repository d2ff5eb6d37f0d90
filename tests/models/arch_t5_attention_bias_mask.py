import torch
import torch.nn as nn


class Model(nn.Module):
    """T5-style self-attention sublayer: RMS norm written by hand (`x.to(torch.float32)` on a float32 x, which
    PyTorch returns as x itself), bias-free projections, a learned relative-position bias added to the scores, a
    padding mask filled with the dtype's minimum, softmax in float32 cast back with `type_as`, residual add."""

    def __init__(self, d_model, n_heads, seq_len):
        super().__init__()
        self.h, self.dk = n_heads, d_model // n_heads
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, d_model, bias=False)
        self.wv = nn.Linear(d_model, d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.ln_w = nn.Parameter(torch.ones(d_model) + 0.1 * torch.randn(d_model))
        self.position_bias = nn.Parameter(0.1 * torch.randn(1, n_heads, seq_len, seq_len))

    def forward(self, x, mask):
        var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hs = self.ln_w * (x * torch.rsqrt(var + 1e-6))
        b, length, _ = x.shape
        q = self.wq(hs).view(b, length, self.h, self.dk).transpose(1, 2)
        k = self.wk(hs).view(b, length, self.h, self.dk).transpose(1, 2)
        v = self.wv(hs).view(b, length, self.h, self.dk).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(3, 2)) + self.position_bias
        scores = scores.masked_fill(mask[:, None, None, :] == 0, torch.finfo(scores.dtype).min)
        attn = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        out = torch.matmul(attn, v).transpose(1, 2).contiguous().view(b, length, -1)
        return x + self.wo(out)


batch_size = 3
seq_len = 50
d_model = 256
n_heads = 4


def get_inputs():
    mask = torch.ones(batch_size, seq_len)
    mask[1, 40:] = 0
    mask[2, 7:] = 0
    return [torch.randn(batch_size, seq_len, d_model), mask]


def get_init_inputs():
    return [d_model, n_heads, seq_len]
