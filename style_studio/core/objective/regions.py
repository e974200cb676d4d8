"""Regions: where each style goes, and what stays a photo.

A region is a painted mask with what it gets: a blend of the loaded styles
at a strength, or "keep the photo". Masks are soft coverages in [0, 1], one
per region, that add up to at most 1 at every pixel; what is left over is
the unpainted area, which gets the run's global style blend, as a picture
without regions does.

The loss uses guided Gram matrices (Gatys et al. 2017, "Controlling
Perceptual Factors in Neural Style Transfer"): each region's mask, brought to
a layer's resolution, weights the features before their Gram matrix, which is
matched to that region's style. Two departures from the paper:

- each region's Gram matrix is divided by its own mask's energy (C·Σm²)
  instead of the picture's size, so that a small region is compared on its
  own statistics and not drowned by a large one; its term is then weighted by
  its share of the painted area, so that every pixel is pulled as hard towards
  its region's style as it would be with one style over the whole picture (an
  all-ones mask gives exactly the unguided loss);
- the masks are feathered (blurred by ``feather`` of the picture's longest
  side) at each scale, so that no seam shows where two regions meet.

"Keep the photo" needs no loss: a hook on the optimised image's gradient
scales it by 1 - the feathered keep mask, so the pixels there do not move
(``engine``). This module is the data, its checks and its files; the masks
become tensors in ``ScaleRegions.prepare``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..about import About, bound_text
from ..errors import ImageLoadError, StyleStudioError
from ..io.imageio import open_image
from ..settings import MAX_WEIGHT

#: Default feather: the masks' blur, as a share of the picture's longest side.
DEFAULT_FEATHER: Final = 0.01
MAX_FEATHER: Final = 0.1
#: The largest strength a region may multiply its style weight by.
MAX_STRENGTH: Final = 10.0

#: A region's strength, described once: its check here, the command line's ``--region`` and the window's control
#: take its range from it.
STRENGTH: Final = About(
    "how strongly the style applies in the region (1: as elsewhere)", low=0, high=MAX_STRENGTH, step=0.1,
    label="Strength", tip="How strongly the style applies in this region (1: as elsewhere)",
)  # fmt: skip
#: The regions' feather, described once: its check here and the window's control (in steps of 0.001).
FEATHER: Final = About(
    "the edge softness between regions, as a share of the picture's longest side", low=0, high=MAX_FEATHER,
    step=0.001, label="Blend edges",
    tip="Edge softness between regions, as a share of the picture (no seam where they meet)",
)  # fmt: skip


def strength_problem(strength: object) -> str | None:
    """Why ``strength`` cannot be a region's (NaN and infinity too: the loss would be NaN or inf); None: it can."""
    if STRENGTH.check("strength", strength, float) is None:
        return None
    return f"the strength must be from {bound_text(STRENGTH.low or 0)} to {bound_text(STRENGTH.high or 0)}"


#: A region's colour in a colour-coded mask matches pixels this close to it (per channel):
#: anti-aliased edges and JPEG-like noise still count.
COLOUR_TOLERANCE: Final = 24

#: Colours given to new regions, in order.
PALETTE: Final = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#bfef45")

NAMED_COLOURS: Final = {
    "red": "#ff0000",
    "green": "#00ff00",
    "blue": "#0000ff",
    "white": "#ffffff",
    "yellow": "#ffff00",
    "cyan": "#00ffff",
    "magenta": "#ff00ff",
}

_HEX = re.compile(r"^#?([0-9a-fA-F]{6})$")


class RegionError(StyleStudioError):
    """A region, a mask or a region spec that cannot be used; the message names it."""


def parse_colour(text: str) -> tuple[int, int, int]:
    """'#ff8800', 'ff8800' or a name like 'red' -> (255, 136, 0)."""
    value = NAMED_COLOURS.get(text.strip().lower(), text.strip())
    match = _HEX.match(value)
    if match is None:
        names = ", ".join(NAMED_COLOURS)
        raise RegionError(f"{text!r} is not a colour: give #RRGGBB or one of {names}")
    digits = match.group(1)
    return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)


def colour_hex(colour: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*colour)


@dataclass(frozen=True)
class Region:
    """What one painted region gets.

    Attributes:
        name: for the user ("Sky").
        colour: its colour in the window and in colour-coded mask files.
        keep: the photo stays as it is there (``blend`` and ``strength`` unused).
        blend: a weight per style image (e.g. (0, 1): the second style only).
        strength: multiplies the style weight in this region.
    """

    name: str
    colour: tuple[int, int, int]
    keep: bool = False
    blend: tuple[float, ...] = (1.0,)
    strength: float = 1.0

    def describe(self, style_names: Sequence[str] = ()) -> str:
        """'keep the photo', 'style 2', 'style 1 60 % + style 2 40 %', with the strength when not 1."""
        if self.keep:
            return "keep the photo"
        total = sum(self.blend)
        used = [(n, w / total) for n, w in enumerate(self.blend) if w > 0] if total > 0 else []
        names = [style_names[n] if n < len(style_names) else f"style {n + 1}" for n, _ in used]
        what = (
            names[0]
            if len(used) == 1
            else " + ".join(f"{name} {share:.0%}" for name, (_, share) in zip(names, used, strict=True))
        )
        return what if self.strength == 1 else f"{what} at {self.strength:g}×"


@dataclass(frozen=True, eq=False)
class Regions:
    """The painted regions of a picture.

    Attributes:
        regions: what each region gets.
        masks: (R, H, W) uint8 coverage (255 = fully that region), one plane
            per region, adding up to at most 255 at each pixel; any size
            (scaled to each scale's, so a mask painted on the photo fits).
        feather: the masks' blur at each scale, as a share of the picture's longest side.
    """

    regions: tuple[Region, ...]
    masks: np.ndarray
    feather: float = DEFAULT_FEATHER
    _digest: list[str] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.masks.ndim != 3 or self.masks.shape[0] != len(self.regions) or self.masks.dtype != np.uint8:
            raise RegionError(
                f"expected {len(self.regions)} uint8 mask planes, got {self.masks.shape} {self.masks.dtype}"
            )

    @classmethod
    def empty(cls, width: int, height: int) -> Regions:
        return cls((), np.zeros((0, height, width), np.uint8))

    @property
    def size(self) -> tuple[int, int]:
        """The masks' (width, height)."""
        return self.masks.shape[2], self.masks.shape[1]

    def __bool__(self) -> bool:
        return bool(self.regions)

    def __len__(self) -> int:
        return len(self.regions)

    def digest(self) -> str:
        """A hash of everything that decides the picture: regions, masks and feather."""
        if not self._digest:
            h = hashlib.sha256(repr((self.regions, self.feather, self.masks.shape)).encode())
            h.update(np.ascontiguousarray(self.masks).tobytes())
            self._digest.append(h.hexdigest()[:16])
        return self._digest[0]

    def copy(self) -> Regions:
        """With masks of its own (a run keeps these while the window paints on)."""
        return Regions(self.regions, self.masks.copy(), self.feather)

    def painted(self) -> Regions:
        """The regions painted somewhere (a region added but not painted yet is left out until it is)."""
        kept = [n for n, share in enumerate(self.coverage()) if share > 0]
        if len(kept) == len(self.regions):
            return self
        return Regions(tuple(self.regions[n] for n in kept), self.masks[kept], self.feather)

    def with_region(self, index: int, region: Region) -> Regions:
        regions = list(self.regions)
        regions[index] = region
        return Regions(tuple(regions), self.masks, self.feather)

    def with_masks(self, masks: np.ndarray) -> Regions:
        return Regions(self.regions, masks, self.feather)

    def added(self, region: Region) -> Regions:
        """These regions and a new, unpainted one."""
        plane = np.zeros((1, *self.masks.shape[1:]), np.uint8)
        return Regions((*self.regions, region), np.concatenate([self.masks, plane]), self.feather)

    def removed(self, index: int) -> Regions:
        keep = [n for n in range(len(self.regions)) if n != index]
        return Regions(tuple(self.regions[n] for n in keep), self.masks[keep], self.feather)

    def resized(self, width: int, height: int) -> Regions:
        """The masks at (width, height) (bilinear), e.g. a mask file fitted to the photo."""
        if self.size == (width, height):
            return self
        planes = [
            np.asarray(Image.fromarray(plane).resize((width, height), Image.Resampling.BILINEAR))
            for plane in self.masks
        ]
        masks = np.stack(planes) if planes else np.zeros((0, height, width), np.uint8)
        return Regions(self.regions, at_most_full(masks), self.feather)

    def coverage(self) -> np.ndarray:
        """(R,) the share of the picture each region covers."""
        shares: np.ndarray = self.masks.reshape(len(self.regions), -1).mean(1) / 255.0
        return shares

    def unpainted_share(self) -> float:
        """The share of the picture no region covers (where the global style goes)."""
        total = self.masks.astype(np.uint16).sum(0) if len(self.regions) else np.zeros(self.masks.shape[1:])
        return float(1 - total.mean() / 255.0)

    def check(self, style_count: int) -> None:
        """Raise RegionError listing every problem with these regions for ``style_count`` style images."""
        problems = []
        coverage = self.coverage()
        for region, share in zip(self.regions, coverage, strict=True):
            if share == 0:
                problems.append(f"region {region.name!r} is empty: paint it, or remove it")
            if region.keep:
                continue
            if len(region.blend) != style_count:
                problems.append(
                    f"region {region.name!r} has {len(region.blend)} style weights for {style_count} style images"
                )
            elif not all(0 <= w <= MAX_WEIGHT for w in region.blend):
                problems.append(
                    f"region {region.name!r} has a style weight that is not a number from 0 to {bound_text(MAX_WEIGHT)}"
                )
            elif sum(region.blend) <= 0:
                problems.append(f"region {region.name!r} has no style: give one of its style weights a value above 0")
            problem = strength_problem(region.strength)
            if problem is not None:
                problems.append(f"region {region.name!r}'s {problem.removeprefix('the ')}")
        if FEATHER.check("feather", self.feather, float) is not None:
            problems.append(
                f"the feather must be from {bound_text(FEATHER.low or 0)} to {FEATHER.high}, got {self.feather}"
            )
        if self.regions and all(r.keep for r in self.regions) and self.unpainted_share() < 1e-3:
            problems.append("every region keeps the photo: there is nothing left to stylise")
        if problems:
            raise RegionError("; ".join(problems))

    def for_style_count(self, style_count: int) -> Regions:
        """These regions, each blend fitted to ``style_count`` styles (a removed style's weight goes; a new one: 0)."""
        regions = []
        for region in self.regions:
            blend = tuple(region.blend[:style_count]) + (0.0,) * max(0, style_count - len(region.blend))
            if not region.keep and style_count and sum(blend) <= 0:
                blend = (1.0,) + (0.0,) * (style_count - 1)
            regions.append(Region(region.name, region.colour, region.keep, blend, region.strength))
        return Regions(tuple(regions), self.masks, self.feather)

    # -- files and documents ----------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """A JSON-able record (for presets and exported metadata); masks as greyscale PNGs in base64."""
        return {
            "feather": self.feather,
            "width": self.size[0],
            "height": self.size[1],
            "regions": [
                {
                    "name": r.name,
                    "colour": colour_hex(r.colour),
                    "keep": r.keep,
                    "blend": list(r.blend),
                    "strength": r.strength,
                    "mask": _png_base64(plane),
                }
                for r, plane in zip(self.regions, self.masks, strict=True)
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Regions:
        """Regions from ``to_json``'s record; RegionError naming what is wrong."""
        try:
            width, height = int(data["width"]), int(data["height"])
            feather = float(data.get("feather", DEFAULT_FEATHER))
            regions, planes = [], []
            for number, item in enumerate(data["regions"], start=1):
                name = str(item.get("name") or f"Region {number}")
                regions.append(
                    Region(
                        name,
                        parse_colour(str(item["colour"])),
                        bool(item.get("keep", False)),
                        tuple(float(w) for w in item.get("blend", (1.0,))),
                        float(item.get("strength", 1.0)),
                    )
                )
                plane = _png_plane(str(item["mask"]), name)
                if plane.shape != (height, width):
                    raise RegionError(f"region {name!r}'s mask is not {width}×{height}")
                planes.append(plane)
        except RegionError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise RegionError(f"the regions record is damaged ({exc.__class__.__name__}: {exc})") from None
        masks = np.stack(planes) if planes else np.zeros((0, height, width), np.uint8)
        return cls(tuple(regions), at_most_full(masks), feather)


def at_most_full(masks: np.ndarray) -> np.ndarray:
    """Scale each pixel's coverages down where they add up to more than 255."""
    if masks.shape[0] < 2:
        return masks
    total = masks.astype(np.uint32).sum(0)
    over = total > 255
    if not over.any():
        return masks
    out = masks.astype(np.float32)
    out[:, over] *= 255.0 / total[over]
    return np.floor(out).astype(np.uint8)


def coverage(image: Image.Image) -> np.ndarray:
    """A greyscale mask's coverage, 0 to 255 (H, W) uint8: 16-bit and float levels are scaled, not clipped."""
    if image.mode in ("I", "I;16"):
        return np.rint(np.asarray(image, np.float64) * (255.0 / 65535.0)).clip(0, 255).astype(np.uint8)
    if image.mode == "F":  # floats are coverages from 0 to 1
        return np.rint(np.asarray(image, np.float64) * 255.0).clip(0, 255).astype(np.uint8)
    return np.asarray(image.convert("L"))


def _png_base64(plane: np.ndarray) -> str:
    buffer = io.BytesIO()
    Image.fromarray(plane).save(buffer, format="PNG", optimize=True)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _png_plane(text: str, name: str) -> np.ndarray:
    try:
        with open_image(io.BytesIO(base64.b64decode(text, validate=True)), f"region {name!r}'s mask") as image:
            return coverage(image).copy()
    except ImageLoadError as exc:
        raise RegionError(str(exc)) from None
    except (ValueError, OSError, UnidentifiedImageError):
        raise RegionError(f"region {name!r}'s mask cannot be read") from None


def from_document(text: str | bytes, source: str | None = None) -> Regions | None:
    """The regions in a settings document (a preset, or an exported picture's metadata); None if it has none.

    The document itself is read by ``settings.loads``; regions are kept in it
    under "regions", next to "settings".
    """
    import json

    try:
        document = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return None
    record = document.get("regions") if isinstance(document, dict) else None
    if not record:
        return None
    try:
        return Regions.from_json(record)
    except RegionError as exc:
        where = f"{source}: " if source else ""
        raise RegionError(f"{where}{exc}") from None
