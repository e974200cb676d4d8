"""The measures the loss terms are made of, each term normalised to its target.

Gatys et al. (2016) weight raw squared errors, so a weight's meaning shifts
with the image size, the layer and the scale of the network's features (an
untrained VGG's activations are orders of magnitude off a trained one's). Here
each term is divided by its target's own magnitude: 0 at the target, about 1
for an unrelated image. The same weights then balance the same way at any
size, for any layer, with any weights file.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

_EPS = 1e-12


def magnitude(target: Tensor) -> Tensor:
    """Mean square of a target, the denominator of its relative loss (scalar, float32)."""
    return target.float().square().mean().clamp_min(_EPS)


def weighted_mse(value: Tensor, target: Tensor, factor: Tensor | float) -> Tensor:
    """factor · mean((value - target)²), in float32 (a scalar).

    With ``factor = weight / magnitude(target)`` this is a weighted relative
    loss; the factor is computed when the weights change, so each term costs
    one fused ``mse_loss`` pass each way and one multiplication.
    """
    with torch.autocast(device_type=value.device.type, enabled=False):
        return F.mse_loss(value.float(), target) * factor


def total_variation(image: Tensor) -> Tensor:
    """Mean squared difference of neighbouring pixels.

    Args:
        image: (B, C, H, W) in [0, 1].

    Returns:
        scalar float32; independent of the image size for a given smoothness.
    """
    # Two fused passes, where sub, square and mean would be three each way.
    vertical = F.mse_loss(image[:, :, 1:, :], image[:, :, :-1, :])
    horizontal = F.mse_loss(image[:, :, :, 1:], image[:, :, :, :-1])
    return vertical + horizontal
