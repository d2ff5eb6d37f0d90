import torch
import torch.nn as nn
import einops


class Model(nn.Module):
    def forward(self, x):
        return einops.rearrange(x, "b c -> c b")


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
