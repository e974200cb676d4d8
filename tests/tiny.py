"""A tiny encoder with VGG19's layout and layer names, for tests where the real network is not the point.

It has VGG19's 37 layers, pools and names (so settings, sliders and hooks work
unchanged) but 4 to 16 channels instead of 64 to 512: a 64 px iteration costs
well under a millisecond. After pystiche's test encoders. It is the network
``STYLE_STUDIO_TEST_NETWORK=tiny`` gives command lines and batches run by the
tests (``weights.TINY_WIDTHS``); this class lets in-process tests pick its seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from style_studio.core.network.weights import TINY_WIDTHS, vgg19_features_module

__all__ = ["TINY_WIDTHS", "TinyWeights"]


@dataclass(frozen=True, eq=False)  # hashed by identity, like LoadedWeights: the network cache keys on it
class TinyWeights:
    """A seeded random tiny VGG19-shaped encoder; ``label`` names it as untrained, as the app must."""

    seed: int = 0
    label: str = "untrained tiny VGG19 (test encoder)"
    untrained: bool = True

    def build_network(self):
        from style_studio.core.network.vgg import vgg19

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            features = vgg19_features_module(TINY_WIDTHS)
        return vgg19(features)
