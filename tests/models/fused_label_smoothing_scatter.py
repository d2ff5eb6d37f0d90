import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Label-smoothed cross entropy written out by hand: the one-hot target built with scatter_, smoothed, and
    multiplied into the log-probabilities."""

    def __init__(self, smoothing):
        super().__init__()
        self.smoothing = smoothing

    def forward(self, logits, target):
        n_classes = logits.shape[-1]
        one_hot = torch.zeros_like(logits).scatter_(1, target.unsqueeze(1), 1.0)
        soft = one_hot * (1.0 - self.smoothing) + self.smoothing / n_classes
        return -(soft * F.log_softmax(logits, dim=-1)).sum(dim=-1).mean()


batch_size = 61
num_classes = 1000


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return [0.1]
