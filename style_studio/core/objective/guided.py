"""Regions as tensors at one scale: the masks of the style groups' statistics and the keep mask.

``regions`` holds what the user painted; here it becomes, for a picture of
one scale's size, a ``StyleGroup`` per region that gets a style (and one for
the unpainted area, which gets the global blend), each with its feathered
mask, and the keep mask the image's gradient hook multiplies by.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from .regions import Regions

#: A group whose mask covers less than this share of the picture is left out (nothing to match).
MIN_SHARE = 1e-4


@dataclass(frozen=True)
class LayerMask:
    """A group's mask at one layer's resolution.

    Attributes:
        values: (1, 1, h, w) in [0, 1], or None for the whole map (all ones).
        energy: Σ m² over the map: what the guided Gram matrix is divided by (with C).
        rows, cols: the bounding box of the mask's non-zero positions.
    """

    values: Tensor | None
    energy: float
    rows: slice = field(default_factory=lambda: slice(None))
    cols: slice = field(default_factory=lambda: slice(None))


@dataclass(eq=False)
class StyleGroup:
    """The positions matched to one style target.

    Attributes:
        mask: (1, 1, H, W) feathered coverage at the picture's size; None: the whole picture.
        blend: a weight per style image; None: the run's global blend (``settings.style_blend``).
        strength: multiplies the style weight.
        share: this group's share of the stylised area (the groups' shares add up to 1).
        name: for messages ("unpainted" for the global group).
    """

    mask: Tensor | None
    blend: tuple[float, ...] | None = None
    strength: float = 1.0
    share: float = 1.0
    name: str = "unpainted"
    _layer_masks: dict[tuple[int, int], LayerMask] = field(default_factory=dict, repr=False)

    def at(self, height: int, width: int) -> LayerMask:
        """The mask at a layer of (height, width) positions (area-averaged), cached."""
        key = (height, width)
        if key not in self._layer_masks:
            if self.mask is None:
                self._layer_masks[key] = LayerMask(None, float(height * width))
            else:
                values = F.interpolate(self.mask, size=key, mode="area")
                rows, cols = _bounds(values)
                self._layer_masks[key] = LayerMask(values, float(values.double().square().sum()), rows, cols)
        return self._layer_masks[key]


WHOLE_PICTURE = (StyleGroup(None),)


@dataclass(frozen=True, eq=False)
class ScaleRegions:
    """The regions at one scale, on the compute device.

    Attributes:
        groups: the style groups (never empty).
        keep: (1, 1, H, W): how much each pixel keeps the photo (1: fully), or None.
        guided: whether the groups use masks (False: one group over the whole picture).
    """

    groups: tuple[StyleGroup, ...]
    keep: Tensor | None

    @property
    def guided(self) -> bool:
        return any(g.mask is not None for g in self.groups)

    @classmethod
    def prepare(cls, regions: Regions | None, size: tuple[int, int], device: torch.device) -> ScaleRegions:
        """The regions' feathered masks at a picture of ``size`` (width, height)."""
        if not regions:
            return cls(WHOLE_PICTURE, None)
        width, height = size
        masks = torch.from_numpy(regions.masks).to(device).float().div_(255).unsqueeze(1)  # (R, 1, h, w)
        if masks.shape[-2:] != (height, width):
            masks = F.interpolate(masks, size=(height, width), mode="bilinear", antialias=True, align_corners=False)
        masks = feathered(masks, regions.feather * max(width, height)).clamp_(0, 1)
        total = masks.sum(0, keepdim=True)
        masks = masks / total.clamp_min(1.0)  # at most 1 in all, after the blur as before it
        unpainted = (1 - masks.sum(0, keepdim=True)).clamp_(0, 1)
        groups: list[StyleGroup] = []
        keep = None
        for region, mask in zip(regions.regions, masks, strict=True):
            mask = mask.unsqueeze(0)
            if region.keep:
                keep = mask if keep is None else keep + mask
            elif float(mask.mean()) >= MIN_SHARE:
                groups.append(StyleGroup(mask, region.blend, region.strength, name=region.name))
        if float(unpainted.mean()) >= MIN_SHARE:
            groups.append(StyleGroup(unpainted))
        if not groups:
            groups.append(StyleGroup(unpainted))  # everything kept; ``Regions.check`` refuses that first
        areas = [float(g.mask.double().sum()) if g.mask is not None else 1.0 for g in groups]
        for group, area in zip(groups, areas, strict=True):
            group.share = area / sum(areas)
        return cls(tuple(groups), keep.clamp_(0, 1) if keep is not None else None)

    def with_group(self, group: StyleGroup) -> ScaleRegions:
        """These regions and one more group on top of them (its share is its own, not taken from theirs)."""
        return ScaleRegions((*self.groups, group), self.keep)

    def kept_photo(self, image: Tensor, photo: Tensor) -> Tensor:
        """``image`` with the photo put back where the regions keep it."""
        if self.keep is None:
            return image
        return image * (1 - self.keep) + photo * self.keep


def feathered(masks: Tensor, sigma: float) -> Tensor:
    """(N, 1, H, W) masks blurred by a Gaussian of ``sigma`` pixels, mirrored at the edges."""
    if sigma < 0.3:
        return masks
    radius = min(math.ceil(3 * sigma), min(masks.shape[-2:]) - 1)
    if radius < 1:
        return masks
    x = torch.arange(-radius, radius + 1, device=masks.device, dtype=torch.float32)
    kernel = torch.exp(-0.5 * (x / sigma) ** 2)
    kernel = (kernel / kernel.sum()).to(masks.dtype)
    padded = F.pad(masks, (radius, radius, 0, 0), mode="reflect")
    out = F.conv2d(padded, kernel.view(1, 1, 1, -1))
    padded = F.pad(out, (0, 0, radius, radius), mode="reflect")
    return F.conv2d(padded, kernel.view(1, 1, -1, 1))


def _bounds(values: Tensor) -> tuple[slice, slice]:
    """The rows and columns where a (1, 1, h, w) mask is above 0."""
    rows = torch.nonzero(values[0, 0].amax(1) > 0)
    cols = torch.nonzero(values[0, 0].amax(0) > 0)
    if rows.numel() == 0:
        return slice(0, 0), slice(0, 0)
    return slice(int(rows[0]), int(rows[-1]) + 1), slice(int(cols[0]), int(cols[-1]) + 1)
