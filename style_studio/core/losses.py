"""Gram matrices and the three loss terms, each normalised to its target.

Gatys et al. (2016) weight raw squared errors, so a weight's meaning shifts
with the image size, the layer and the scale of the network's features (an
untrained VGG's activations are orders of magnitude off a trained one's). Here
each term is divided by its target's own magnitude: 0 at the target, about 1
for an unrelated image. The same weights then balance the same way at any
size, for any layer, with any weights file.
"""

from __future__ import annotations

import torch
from torch import Tensor

_EPS = 1e-12


def gram(features: Tensor) -> Tensor:
    """Gram matrix G = F·Fᵀ / (C·H·W), always float32, even under autocast.

    Args:
        features: (B, C, H, W), any dtype or memory format.

    Returns:
        (B, C, C) float32.
    """
    b, c, h, w = features.shape
    with torch.autocast(device_type=features.device.type, enabled=False):
        f = features.float()
        if f.is_contiguous(memory_format=torch.channels_last) and not f.is_contiguous():
            # NHWC in memory: (B, HW, C) is a free view, and G = Fᵀ·F.
            flat = f.permute(0, 2, 3, 1).reshape(b, h * w, c)
            g = flat.transpose(1, 2) @ flat
        else:
            flat = f.reshape(b, c, h * w)
            g = flat @ flat.transpose(1, 2)
        return g / (c * h * w)


def magnitude(target: Tensor) -> Tensor:
    """Mean square of a target, the denominator of its relative loss (scalar, float32)."""
    return target.float().square().mean().clamp_min(_EPS)


def relative_mse(value: Tensor, target: Tensor, target_magnitude: Tensor) -> Tensor:
    """mean((value - target)²) / mean(target²), in float32 (a scalar)."""
    with torch.autocast(device_type=value.device.type, enabled=False):
        return (value.float() - target).square().mean() / target_magnitude


def total_variation(image: Tensor) -> Tensor:
    """Mean squared difference of neighbouring pixels.

    Args:
        image: (B, C, H, W) in [0, 1].

    Returns:
        scalar float32; independent of the image size for a given smoothness.
    """
    dy = image[:, :, 1:, :] - image[:, :, :-1, :]
    dx = image[:, :, :, 1:] - image[:, :, :, :-1]
    return dy.square().mean() + dx.square().mean()
