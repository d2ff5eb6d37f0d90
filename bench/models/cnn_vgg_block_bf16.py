import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A VGG block: two 3x3 convolutions with ReLU, then a 2x2 max pool, in bfloat16."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(128, 128, 3, padding=1).to(torch.bfloat16)
        self.c2 = nn.Conv2d(128, 128, 3, padding=1).to(torch.bfloat16)

    def forward(self, x):
        return F.max_pool2d(torch.relu(self.c2(torch.relu(self.c1(x)))), 2)


def get_inputs():
    return [torch.randn(32, 128, 112, 112, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
