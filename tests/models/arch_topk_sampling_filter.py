import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """An LLM sampling head (Hugging Face's TopKLogitsWarper and temperature): the last position's logits over a
    32000-token vocabulary scaled by 1 / temperature, every logit below the k-th largest set to -inf, then the
    sampling probabilities."""

    def __init__(self, temperature, top_k):
        super().__init__()
        self.temperature = temperature
        self.top_k = top_k

    def forward(self, logits):
        scores = logits[:, -1, :] / self.temperature
        kth = torch.topk(scores, self.top_k, dim=-1)[0][..., -1, None]
        scores = scores.masked_fill(scores < kth, float("-inf"))
        return F.softmax(scores, dim=-1)


batch_size = 4
seq_len = 3
vocab = 32000


def get_inputs():
    return [torch.randn(batch_size, seq_len, vocab)]


def get_init_inputs():
    return [0.7, 50]
