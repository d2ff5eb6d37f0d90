import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """CLIP-style contrastive head: image and text features projected, L2-normalised with F.normalize, scaled by
    a learned temperature (logit_scale.exp()) and compared all-pairs (image @ text.t())."""

    def __init__(self, image_dim, text_dim, embed_dim):
        super().__init__()
        self.image_proj = nn.Linear(image_dim, embed_dim)
        self.text_proj = nn.Linear(text_dim, embed_dim)
        self.logit_scale = nn.Parameter(torch.tensor(2.6592))

    def forward(self, image_features, text_features):
        image = F.normalize(self.image_proj(image_features), dim=-1)
        text = F.normalize(self.text_proj(text_features), dim=-1)
        return self.logit_scale.exp() * image @ text.t()


n_images = 33
n_texts = 21
image_dim = 512
text_dim = 384
embed_dim = 256


def get_inputs():
    return [torch.randn(n_images, image_dim), torch.randn(n_texts, text_dim)]


def get_init_inputs():
    return [image_dim, text_dim, embed_dim]
