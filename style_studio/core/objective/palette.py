"""The painting's colours as a whole distribution, carried onto a picture by sliced optimal transport.

A painting's palette is more than a mean and a covariance: a few strong colours
(Starry Night's yellows in its blues) are lost in any Gaussian's average, and
a linear map between two Gaussians carries part of the photo out of the RGB
cube, where clamping takes the colour back (docs/performance.md, "Where the
colour was lost"). Sliced optimal transport (Pitié et al. 2007; Rabin et al.
2011) moves every pixel so that the picture's colours, seen along each of a
few directions, are distributed as the painting's: along a direction the
transport keeps the order of the pixels, so light stays light and a smooth
gradient stays smooth. Repeated over rotated directions, the whole
three-dimensional distribution follows. It is done in Oklab (Ottosson 2020),
where a step moves colours as the eye sees them, and every colour it ends on
lies among the painting's, inside the cube.

Several styles blend as a mixture (each painting's pixels weighted by its
share); a region (a soft mask) is transported to its own blend, its pixels
weighted by the mask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import torch
import torch.nn.functional as F
from torch import Tensor

from ..settings import Settings
from .guided import WHOLE_PICTURE, StyleGroup
from .inputs import ScaleInputs
from .terms import PictureTerm

#: Rotations of the three directions: the distribution is matched to within a hundredth of the photo's distance
#: (colour closed, as benchmarks/quality.py measures it) after about 10 on the sample pairs.
ROTATIONS: Final = 16
#: The most pixels of a painting a distribution keeps (evenly strided): its quantiles, not its every pixel, matter.
MOST_SAMPLES: Final = 1 << 16

_SRGB_TO_LMS = torch.tensor(
    [
        [0.4122214708, 0.5363325363, 0.0514459929],
        [0.2119034982, 0.6806995451, 0.1073969566],
        [0.0883024619, 0.2817188376, 0.6299787005],
    ],
    dtype=torch.float64,
)
_LMS_TO_OKLAB = torch.tensor(
    [
        [0.2104542553, 0.7936177850, -0.0040720468],
        [1.9779984951, -2.4285922050, 0.4505937099],
        [0.0259040371, 0.7827717662, -0.8086757660],
    ],
    dtype=torch.float64,
)


def to_oklab(rgb: Tensor) -> Tensor:
    """(3, N) sRGB in [0, 1] -> (3, N) Oklab (L in [0, 1]), in ``rgb``'s dtype."""
    linear = torch.where(rgb <= 0.04045, rgb / 12.92, ((rgb.clamp_min(0) + 0.055) / 1.055) ** 2.4)
    lms = _SRGB_TO_LMS.to(rgb) @ linear
    return _LMS_TO_OKLAB.to(rgb) @ lms.clamp_min(0) ** (1 / 3)


def from_oklab(lab: Tensor) -> Tensor:
    """(3, N) Oklab -> (3, N) sRGB, clamped to [0, 1]."""
    lms = torch.linalg.solve(_LMS_TO_OKLAB.to(lab), lab) ** 3
    linear = torch.linalg.solve(_SRGB_TO_LMS.to(lab), lms).clamp(0, 1)
    return torch.where(linear <= 0.0031308, linear * 12.92, 1.055 * linear ** (1 / 2.4) - 0.055).clamp(0, 1)


@dataclass(frozen=True)
class ColourDistribution:
    """Colours and how much each counts: a painting's, or several blended.

    Attributes:
        colours: (3, M) RGB in [0, 1], float64.
        weights: (M,) float64, adding up to 1.
    """

    colours: Tensor
    weights: Tensor

    @classmethod
    def of(cls, styles: Sequence[Tensor], blend: Sequence[float]) -> ColourDistribution:
        """The styles' (1, 3, h, w) RGB colours, each painting weighted by its share of ``blend`` (some above 0)."""
        largest = max(blend)
        total = sum(w / largest for w in blend)
        colours, weights = [], []
        for style, weight in zip(styles, blend, strict=True):
            if weight <= 0:
                continue
            share = weight / largest
            pixels = style[0].flatten(1).double()
            pixels = pixels[:, :: max(1, -(-pixels.shape[1] // MOST_SAMPLES))]
            colours.append(pixels)
            weights.append(torch.full((pixels.shape[1],), share / total / pixels.shape[1], dtype=torch.float64,
                                      device=pixels.device))  # fmt: skip
        return cls(torch.cat(colours, 1), torch.cat(weights))

    def quantiles(self, directions: Tensor) -> tuple[Tensor, Tensor]:
        """The colours seen along each of ``directions`` (3, K): (K, M) sorted values and (K, M) the share of the
        distribution below each (at its middle), float64: the distribution's quantile function along each."""
        along = directions.t().to(self.colours) @ self.colours
        values, order = torch.sort(along, dim=1)
        ordered = self.weights[order]
        return values, torch.cumsum(ordered, 1) - ordered / 2

    def spread(self, directions: Tensor) -> Tensor:
        """The colours' variance along each of ``directions`` (3, K), averaged: a float64 scalar."""
        along = directions.t().to(self.colours) @ self.colours
        mean = along @ self.weights
        return ((along - mean[:, None]).square() @ self.weights).mean()


def transported(picture: Tensor, target: ColourDistribution, mask: Tensor | None = None) -> Tensor:
    """``picture`` (1, 3, H, W) RGB in [0, 1] with its colours moved to ``target``'s distribution, in its dtype.

    ``mask`` (1, 1, H, W) in [0, 1]: how much each pixel counts in the picture's distribution (a region's soft
    mask); every pixel is moved, by the map the counted ones define. Each direction's map is fitted on at most
    ``MOST_SAMPLES`` of the pixels (evenly strided) and applied to all of them, so that a print-size picture
    costs a pass over its pixels per direction, not a sort of them.
    """
    colours = to_oklab(picture[0].flatten(1).double())
    stride = max(1, -(-colours.shape[1] // MOST_SAMPLES))
    counted = None if mask is None else mask.reshape(-1).double().clamp_min(0)[::stride]
    aims = ColourDistribution(to_oklab(target.colours), target.weights)
    generator = torch.Generator().manual_seed(0)
    for _ in range(ROTATIONS):
        rotation = torch.linalg.qr(torch.randn(3, 3, generator=generator, dtype=torch.float64))[0].to(colours.device)
        along = rotation.t() @ colours
        knots, moved_knots = _knots(along[:, ::stride], counted, *aims.quantiles(rotation))
        moved = _interpolated_rows(along.contiguous(), knots, moved_knots)
        colours = colours + rotation @ (moved - along)
    return from_oklab(colours).reshape(picture.shape).to(picture.dtype)


def _knots(values: Tensor, weights: Tensor | None, aims: Tensor, below: Tensor) -> tuple[Tensor, Tensor]:
    """The one-dimensional transport along each direction, as knots: ``values`` (K, n) sorted, and the aimed-at
    distribution's values (its quantile function: ``aims``, ``below``, (K, M)) at each one's quantile."""
    ordered, order = torch.sort(values, dim=1)
    if weights is None:
        ranks = (torch.arange(values.shape[1], dtype=torch.float64, device=values.device) + 0.5) / values.shape[1]
        ranks = ranks.expand_as(ordered).contiguous()
    else:
        sorted_weights = weights[order]
        ranks = (torch.cumsum(sorted_weights, 1) - sorted_weights / 2) / sorted_weights.sum(1, keepdim=True).clamp_min(
            1e-12
        )
    return ordered, _interpolated_rows(ranks, below, aims)


def recoloured(
    picture: Tensor, styles: Sequence[Tensor], blend: Sequence[float], groups: Sequence[StyleGroup] = WHOLE_PICTURE
) -> Tensor:
    """``picture`` (1, 3, H, W) in the styles' colours (``transported``): each style group's pixels in its own
    blend's (the run's ``blend`` where it has none), the groups' soft masks adding up; a pixel no group covers
    (a region that keeps the photo) keeps its colour. A group's strength below 1 keeps that share of the
    picture's own colours (0: all of them)."""
    kept = picture.clone()
    for group in groups:
        strength = min(group.strength, 1.0)
        if strength > 0:
            moved = transported(picture, ColourDistribution.of(styles, _blend(group, blend)), group.mask)
            kept += (strength if group.mask is None else group.mask * strength) * (moved - picture)
    return kept.clamp(0, 1)


def _blend(group: StyleGroup, blend: Sequence[float]) -> Sequence[float]:
    return group.blend if group.blend is not None else blend


class ColourTerm(PictureTerm):
    """The picture's colours held to the painting's whole distribution (``--colour-weight``), each style group's
    to its own blend's.

    The sliced Wasserstein-2 distance in RGB along ``DIRECTIONS`` fixed directions (fixed, so that L-BFGS sees one
    function): along each, the picture's sorted colours against the painting's at the same quantiles. The
    content term pulls the photo's tones back and the style terms match features, not colours; this term is
    what keeps the palette the start carried. It is measured on the picture at most ``TERM_SIDE`` px across
    (area-averaged: its colours, at any size, for a fixed cost) and divided by the painting's own colour spread
    (at least ``SMALLEST_SPREAD``), so that it is about 1 for an unrelated picture; a region's share is scaled by
    its strength, as its style terms are.
    """

    name = "colour"

    def __init__(self, styles: Sequence[Tensor], groups: Sequence[StyleGroup], settings: Settings) -> None:
        self.styles = tuple(styles)
        self.directions = _directions().to(styles[0].device)
        self.targets: list[tuple[Tensor, Tensor]] = []
        self.spread: list[float] = []
        self._aims: dict[tuple[int, int], Tensor] = {}
        self._blend: list[float] | None = None
        self.regroup(groups, settings)

    def regroup(self, groups: Sequence[StyleGroup], settings: Settings) -> None:
        self.groups = tuple(groups)
        self._blend = None
        self.reweigh(settings)

    def reweigh(self, settings: Settings) -> None:
        """Take the new weight, and the new blend's colours when the blend moved."""
        self.weight = settings.colour_weight
        blend = settings.blend_weights(len(self.styles))
        if blend != self._blend:
            self._blend = blend
            distributions = [ColourDistribution.of(self.styles, _blend(g, blend)) for g in self.groups]
            self.targets = [d.quantiles(self.directions) for d in distributions]
            self.spread = [float(d.spread(self.directions).clamp_min(SMALLEST_SPREAD)) for d in distributions]
            self._aims = {}

    def factor(self) -> float:
        return self.weight

    def __call__(self, image: Tensor) -> Tensor:
        if self.weight == 0:
            return image.new_zeros((), dtype=torch.float32)
        with torch.autocast(device_type=image.device.type, enabled=False):
            small = _at_most(image.float(), TERM_SIDE)
            height, width = small.shape[-2:]
            along = self.directions.t().float() @ small[0].flatten(1)  # (K, n)
            terms = []
            for index, (group, (values, below)) in enumerate(zip(self.groups, self.targets, strict=True)):
                counted = group.at(height, width).values
                if counted is None:  # every pixel counts alike: the quantiles aimed at are fixed for the size
                    key = (index, along.shape[1])
                    if key not in self._aims:
                        self._aims[key] = _evenly(along.shape[1], values, below)
                    distance = (torch.sort(along, dim=1)[0] - self._aims[key]).square().mean()
                else:
                    distance = _sliced_distance(along, counted, values, below)
                terms.append(distance * (group.strength * group.share / self.spread[index]))
            return torch.stack(terms).sum() * self.weight

    @classmethod
    def of(cls, inputs: ScaleInputs, settings: Settings) -> ColourTerm | None:
        """None where the picture keeps the photo's colours (``preserve_colors``: it is luminance alone)."""
        return None if settings.preserve_colors else cls(inputs.styles, inputs.regions.groups, settings)


#: The least colour spread the colour term is divided by (a standard deviation of 0.1 along a direction): a flat
#: painting's would be about 0, and its colour would then outweigh the photo and the strokes a million times over.
SMALLEST_SPREAD: Final = 0.01
#: Directions the colour term sees the colours along (the three channels and the grey axis among them, in effect).
DIRECTIONS: Final = 16
#: The colour term measures the picture at most this many pixels across.
TERM_SIDE: Final = 512


def _directions() -> Tensor:
    """(3, DIRECTIONS) fixed unit directions in RGB, spread over the sphere (seeded)."""
    generator = torch.Generator().manual_seed(0)
    directions = torch.randn(3, DIRECTIONS, generator=generator, dtype=torch.float64)
    unit: Tensor = directions / directions.norm(dim=0, keepdim=True)
    return unit


def _at_most(image: Tensor, side: int) -> Tensor:
    height, width = image.shape[-2:]
    if max(height, width) <= side:
        return image
    scale = side / max(height, width)
    return F.interpolate(image, size=(max(1, round(height * scale)), max(1, round(width * scale))), mode="area")


def _sliced_distance(along: Tensor, counted: Tensor, values: Tensor, below: Tensor) -> Tensor:
    """The mean over directions of the mask-weighted squared distance between the picture's colours along each
    (``along``, (K, n)) and the painting's at the same quantiles (``values``, ``below``: its quantile function)."""
    ordered, order = torch.sort(along, dim=1)
    mask = counted.reshape(-1).float().clamp_min(0)
    weights = (mask / mask.sum().clamp_min(1e-12))[order]
    ranks = (torch.cumsum(weights, 1) - weights / 2).detach()
    aims = _interpolated_rows(ranks.double(), below, values).to(ordered.dtype)
    return (weights * (ordered - aims).square()).sum(1).mean()


def _evenly(count: int, values: Tensor, below: Tensor) -> Tensor:
    """The painting's colours (quantile function ``values``, ``below``) at ``count`` evenly spaced quantiles:
    (K, count) float32, what the sorted colours of a picture of ``count`` pixels, all counted alike, aim at."""
    ranks = (torch.arange(count, dtype=torch.float64, device=values.device) + 0.5) / count
    return _interpolated_rows(ranks.expand(len(values), -1).contiguous(), below, values).float()


def _interpolated_rows(x: Tensor, xs: Tensor, ys: Tensor) -> Tensor:
    """``numpy.interp`` in torch, row by row: the piecewise-linear function through (xs, ys) at x, xs ascending,
    held at the ends; x (K, n), xs and ys (K, M)."""
    right = torch.searchsorted(xs, x).clamp(1, xs.shape[1] - 1)
    left = right - 1
    x_left, x_right = xs.gather(1, left), xs.gather(1, right)
    t = ((x - x_left) / (x_right - x_left).clamp_min(1e-300)).clamp(0, 1)
    y_left, y_right = ys.gather(1, left), ys.gather(1, right)
    return y_left + t * (y_right - y_left)
