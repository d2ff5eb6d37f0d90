import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Mixture-of-experts router (Mixtral style): gate logits, softmax over the experts in float32, the top-k
    experts per token with their weights renormalised to sum to one; returns weights and expert indices."""

    def __init__(self, dim, n_experts, top_k):
        super().__init__()
        self.gate = nn.Linear(dim, n_experts, bias=False)
        self.top_k = top_k

    def forward(self, x):
        logits = self.gate(x.view(-1, x.shape[-1]))
        probs = F.softmax(logits, dim=-1, dtype=torch.float)
        weights, experts = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights.to(x.dtype), experts


batch_size = 4
seq_len = 37
dim = 128
n_experts = 8
top_k = 2


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, n_experts, top_k]
