import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Tiny text classifier: Embedding + learned positions, LayerNorm, GELU MLP, masked mean pool, Linear head."""

    def __init__(self, vocab_size, dim, max_len, num_classes):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Parameter(torch.randn(1, max_len, dim) * 0.02)
        self.norm = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.head = nn.Linear(dim, num_classes)

    def forward(self, ids, mask):
        t = ids.shape[1]
        h = self.tok(ids) + self.pos[:, :t]
        h = h + self.mlp(self.norm(h))
        m = mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.head(pooled)


batch_size = 3
seq_len = 21
vocab_size = 500
dim = 40
max_len = 64
num_classes = 6


def get_inputs():
    ids = torch.randint(0, vocab_size, (batch_size, seq_len))
    mask = torch.rand(batch_size, seq_len) > 0.3
    return [ids, mask]


def get_init_inputs():
    return [vocab_size, dim, max_len, num_classes]
