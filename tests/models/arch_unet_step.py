import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """One UNet level: down conv, maxpool, bottleneck conv, ConvTranspose2d up, cat skip on channels, fuse conv."""

    def __init__(self, in_channels, base_channels, out_channels):
        super().__init__()
        c = base_channels
        self.down = nn.Conv2d(in_channels, c, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = nn.Conv2d(c, 2 * c, 3, padding=1)
        self.up = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.fuse = nn.Conv2d(2 * c, c, 3, padding=1)
        self.head = nn.Conv2d(c, out_channels, 1)

    def forward(self, x):
        skip = F.relu(self.down(x))
        h = self.pool(skip)
        h = F.relu(self.bottleneck(h))
        h = self.up(h)
        h = torch.cat([h, skip], dim=1)
        h = F.relu(self.fuse(h))
        return self.head(h)


batch_size = 2
in_channels = 3
base_channels = 8
out_channels = 2
height = 24
width = 30


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, base_channels, out_channels]
