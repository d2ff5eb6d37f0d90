import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Shared Gemm feeding two heads returned as a tuple (logits softmax, regression)."""

    def __init__(self, in_features, hidden, num_classes):
        super().__init__()
        self.body = nn.Linear(in_features, hidden)
        self.cls_head = nn.Linear(hidden, num_classes)
        self.reg_head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = F.relu(self.body(x))
        a = torch.softmax(self.cls_head(h), dim=-1)
        b = self.reg_head(h).squeeze(-1)
        return a, b


batch_size = 7
in_features = 36
hidden = 50
num_classes = 5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden, num_classes]
