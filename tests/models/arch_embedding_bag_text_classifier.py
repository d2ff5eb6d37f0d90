import torch
import torch.nn as nn


class Model(nn.Module):
    """fastText-style text classifier (the PyTorch text-classification tutorial's model): the tokens of a batch of
    documents flattened into one index tensor with per-document offsets, nn.EmbeddingBag's mean per document, a
    linear layer to the classes."""

    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, mode="mean")
        self.fc = nn.Linear(embed_dim, num_class)

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


vocab_size = 5000
embed_dim = 64
num_class = 4


def get_inputs():
    lengths = torch.tensor([7, 12, 3, 30, 9, 1, 16, 22])
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    return [torch.randint(0, vocab_size, (int(lengths.sum()),)), offsets]


def get_init_inputs():
    return [vocab_size, embed_dim, num_class]
