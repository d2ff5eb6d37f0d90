import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.HingeEmbeddingLoss with +1/-1 float targets."""

    def __init__(self, margin):
        super().__init__()
        self.loss = nn.HingeEmbeddingLoss(margin=margin)

    def forward(self, predictions, targets):
        return self.loss(predictions, targets)


batch_size = 25
dim = 3


def get_inputs():
    targets = torch.randint(0, 2, (batch_size, dim)).float() * 2.0 - 1.0
    return [torch.randn(batch_size, dim), targets]


def get_init_inputs():
    return [1.0]
