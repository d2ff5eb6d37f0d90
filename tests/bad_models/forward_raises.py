import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)

    def forward(self, x):
        y = self.fc(x)
        return y @ x  # (4, 32) @ (4, 16): shape mismatch


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
