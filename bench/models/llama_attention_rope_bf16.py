import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class Model(nn.Module):
    """tests/models/arch_llama_attention_rope_gqa.py at a Llama-style size in bfloat16: hidden 2048, 16 query heads of
    128, 4 key/value heads, 1024 tokens, batch 4."""

    def __init__(self, hidden, heads, kv_heads, max_pos):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        t = torch.arange(max_pos).float()
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())
        mask = torch.full((max_pos, max_pos), torch.finfo(torch.float32).min).triu(1)
        self.register_buffer("causal_mask", mask)
        self.to(torch.bfloat16)

    def forward(self, x):
        bsz, q_len, _ = x.shape
        q = self.q_proj(x).view(bsz, q_len, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.kv_heads, self.head_dim).transpose(1, 2)
        cos = self.cos_cached[:q_len][None, None]
        sin = self.sin_cached[:q_len][None, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, self.heads // self.kv_heads)
        v = repeat_kv(v, self.heads // self.kv_heads)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        w = w + self.causal_mask[:q_len, :q_len]
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(out)


def get_inputs():
    return [torch.randn(4, 1024, 2048, dtype=torch.bfloat16)]


def get_init_inputs():
    return [2048, 16, 4, 1024]
