"""A tiny encoder with VGG19's layout and layer names, for tests where the real network is not the point.

It has VGG19's 37 layers, pools and names (so settings, sliders and hooks work
unchanged) but 4 to 16 channels instead of 64 to 512: a 64 px iteration costs
well under a millisecond. After pystiche's test encoders.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

#: Channels of each of VGG19's five blocks (VGG19 has 64, 128, 256, 512, 512).
TINY_WIDTHS = (4, 8, 8, 16, 16)
_CONVS_PER_BLOCK = (2, 2, 4, 4, 4)


@dataclass(frozen=True, eq=False)  # hashed by identity, like LoadedWeights: the network cache keys on it
class TinyWeights:
    """A seeded random tiny VGG19-shaped encoder; ``label`` names it as untrained, as the app must."""

    seed: int = 0
    label: str = "untrained tiny VGG19 (test encoder)"
    untrained: bool = True

    def build_network(self):
        from torchvision.models.vgg import make_layers

        from style_studio.core.network.vgg import vgg19

        config: list[int | str] = []
        for width, convs in zip(TINY_WIDTHS, _CONVS_PER_BLOCK, strict=True):
            config += [width] * convs + ["M"]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            features = make_layers(config, batch_norm=False)
            for module in features.modules():
                if isinstance(module, nn.Conv2d):
                    # Variance-preserving (He et al.): with torch's default init the
                    # deep layers of so narrow a stack are dead, and their losses 0.
                    nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                    nn.init.zeros_(module.bias)
        return vgg19(features)
