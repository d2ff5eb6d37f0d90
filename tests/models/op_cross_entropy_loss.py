import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.CrossEntropyLoss on logits with int64 class-index targets."""

    def __init__(self):
        super().__init__()
        self.loss = nn.CrossEntropyLoss()

    def forward(self, predictions, targets):
        return self.loss(predictions, targets)


batch_size = 20
num_classes = 10


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
