import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gemm + Swish (x*sigmoid(x)) + divide by 2 + clamp(-1, 1) + tanh + clamp."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.fc(x)
        x = x * torch.sigmoid(x)
        x = x / 2.0
        x = torch.clamp(x, min=-1.0, max=1.0)
        x = torch.tanh(x)
        return torch.clamp(x, min=-1.0, max=1.0)


batch_size = 11
in_features = 60
out_features = 45


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
