import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """ViT patch embedding: Conv2d patchify (stride=patch), flatten+transpose, cat expanded class token, add pos embedding."""

    def __init__(self, in_channels, embed_dim, image_size, patch_size):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_channels, embed_dim, patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * 0.02)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        b = x.shape[0]
        x = self.proj(x)  # (B, D, H/p, W/p)
        x = x.flatten(2).transpose(1, 2)  # (B, N, D)
        cls = self.cls_token.expand(b, -1, -1)
        x = torch.cat([cls, x], dim=1)
        x = x + self.pos_embed
        return self.norm(x)


batch_size = 2
in_channels = 3
embed_dim = 64
image_size = 35
patch_size = 7


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, embed_dim, image_size, patch_size]
