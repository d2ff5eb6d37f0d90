import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.TripletMarginLoss on (anchor, positive, negative)."""

    def __init__(self, margin):
        super().__init__()
        self.loss = nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        return self.loss(anchor, positive, negative)


batch_size = 10
dim = 50


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [1.0]
