"""Luminance and chroma, for "preserve colours"; colour statistics; a picture's composition under another picture's
detail, for the start of a run (its colours: ``palette``).

Gatys et al., "Preserving Color in Neural Artistic Style Transfer" (2016):
transfer the style on luminance only, then recombine the result's luminance
with the content image's chroma. We use YIQ, as the paper does, and match the
style's luminance mean and spread to the content's first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import torch
import torch.nn.functional as F
from torch import Tensor

_RGB_TO_YIQ = torch.tensor(
    [
        [0.299, 0.587, 0.114],
        [0.595716, -0.274453, -0.321263],
        [0.211456, -0.522591, 0.311135],
    ]
)
_YIQ_TO_RGB = torch.linalg.inv(_RGB_TO_YIQ)
#: A picture's composition: the picture seen this many pixels across its longer side (its light and dark masses).
COMPOSITION_SIDE: Final = 24


def rgb_to_yiq(rgb: Tensor) -> Tensor:
    """rgb: (B, 3, H, W) -> yiq: (B, 3, H, W); Y in [0, 1]."""
    return torch.einsum("ij,bjhw->bihw", _RGB_TO_YIQ.to(rgb), rgb)


def yiq_to_rgb(yiq: Tensor) -> Tensor:
    """yiq: (B, 3, H, W) -> rgb: (B, 3, H, W), not clamped."""
    return torch.einsum("ij,bjhw->bihw", _YIQ_TO_RGB.to(yiq), yiq)


def luminance(rgb: Tensor) -> Tensor:
    """rgb: (B, 3, H, W) -> Y: (B, 1, H, W)."""
    return rgb_to_yiq(rgb)[:, :1]


def match_luminance(style_y: Tensor, content_y: Tensor) -> Tensor:
    """Shift and scale the style's luminance to the content's mean and std.

    Both (B, 1, H, W); sizes may differ. Returns the adjusted style luminance.
    """
    s_mean, s_std = style_y.mean(), style_y.std().clamp_min(1e-6)
    return (style_y - s_mean) / s_std * content_y.std() + content_y.mean()


def with_chroma(y: Tensor, chroma_source: Tensor) -> Tensor:
    """Recombine luminance y: (B, 1, H, W) with the I and Q of an RGB image of the same size."""
    iq = rgb_to_yiq(chroma_source)[:, 1:]
    return yiq_to_rgb(torch.cat([y, iq], dim=1))


def blended_statistics(styles: Sequence[Tensor], weights: Sequence[float]) -> tuple[Tensor, Tensor]:
    """The styles' blended RGB colour mean (3, 1) and covariance (3, 3), float64: blended by their means and
    second moments."""
    first = styles[0]
    eye = torch.eye(3, dtype=torch.float64, device=first.device)
    style_mean = torch.zeros(3, 1, dtype=torch.float64, device=first.device)
    second = torch.zeros_like(eye)
    for style, weight in zip(styles, weights, strict=True):
        colours = style[0].flatten(1).double()
        style_mean += weight * colours.mean(1, keepdim=True)
        second += weight * (colours @ colours.t()) / colours.shape[1]
    return style_mean, second - style_mean @ style_mean.t() + 1e-5 * eye


def statistics_distance(picture: Tensor, statistics: tuple[Tensor, Tensor]) -> Tensor:
    """How far ``picture``'s (1, 3, H, W) RGB mean and covariance are from ``statistics`` (``blended_statistics``):
    the squared distance of the means plus that of the covariances (Frobenius), differentiable, in its dtype."""
    mean, covariance = _mean_and_covariance(picture[0].flatten(1))
    target_mean, target_covariance = (value.to(picture.dtype) for value in statistics)
    return (mean - target_mean).square().sum() + (covariance - target_covariance).square().sum()


def _mean_and_covariance(pixels: Tensor) -> tuple[Tensor, Tensor]:
    """(3, N) colours' mean (3, 1) and covariance (3, 3), a little above 0 on the diagonal."""
    eye = torch.eye(3, dtype=pixels.dtype, device=pixels.device)
    return pixels.mean(1, keepdim=True), torch.cov(pixels) + 1e-5 * eye


def composed(detail: Tensor, composition: Tensor, side: int = COMPOSITION_SIDE) -> Tensor:
    """``detail``'s strokes over ``composition``'s masses: (1, C, H, W) each, the same size, in [0, 1].

    What tells the two apart when both are seen ``side`` px across (area-averaged, then brought back smoothly) is
    added to ``detail``: the result, seen that small, is ``composition``; seen close, it is ``detail``.
    """
    height, width = detail.shape[-2:]
    scale = side / max(height, width)
    small = (max(1, round(height * scale)), max(1, round(width * scale)))
    difference = F.interpolate(composition - detail, size=small, mode="area")
    return (detail + F.interpolate(difference, size=(height, width), mode="bilinear", align_corners=False)).clamp(0, 1)
