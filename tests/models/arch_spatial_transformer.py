import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Spatial transformer network (Jaderberg et al.): a small localization net regresses a 2x3 affine transform
    per image, F.affine_grid turns it into a sampling grid and F.grid_sample warps the input before a classifier
    head. The localization head starts at the identity transform, as in the paper's recipe."""

    def __init__(self, channels, n_classes):
        super().__init__()
        self.loc = nn.Sequential(
            nn.Conv2d(channels, 8, kernel_size=7), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
        self.fc_loc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(True), nn.Linear(32, 6))
        with torch.no_grad():
            self.fc_loc[2].weight.mul_(0.1)
            self.fc_loc[2].bias.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))
        self.conv = nn.Conv2d(channels, 16, kernel_size=3, padding=1)
        self.head = nn.Linear(16, n_classes)

    def forward(self, x):
        xs = self.loc(x).flatten(1)
        theta = self.fc_loc(xs).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        warped = F.grid_sample(x, grid, align_corners=False)
        feats = F.relu(self.conv(warped)).mean(dim=(2, 3))
        return self.head(feats)


batch_size = 32
channels = 3
height = width = 28
n_classes = 10


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, n_classes]
