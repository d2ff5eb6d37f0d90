import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.Embedding lookup from int64 indices."""

    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.embed = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, idx):
        return self.embed(idx)


batch_size = 4
seq_len = 13
num_embeddings = 1000
embedding_dim = 48


def get_inputs():
    return [torch.randint(0, num_embeddings, (batch_size, seq_len))]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
