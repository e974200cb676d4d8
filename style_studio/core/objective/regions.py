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
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import ImageLoadError, StyleStudioError
from ..io.imageio import open_image

#: Default feather: the masks' blur, as a share of the picture's longest side.
DEFAULT_FEATHER: Final = 0.01
MAX_FEATHER: Final = 0.1
#: The largest strength a region may multiply its style weight by.
MAX_STRENGTH: Final = 10.0
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
        return Regions(self.regions, _at_most_full(masks), self.feather)

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
            elif not all(0 <= w < math.inf for w in region.blend):
                problems.append(f"region {region.name!r} has a style weight that is not a number >= 0")
            elif sum(region.blend) <= 0:
                problems.append(f"region {region.name!r} has no style: give one of its style weights a value above 0")
            if not 0 <= region.strength <= MAX_STRENGTH:  # NaN and infinity too: the loss would be NaN or inf
                problems.append(f"region {region.name!r}'s strength must be from 0 to {MAX_STRENGTH:g}")
        if not 0 <= self.feather <= MAX_FEATHER:
            problems.append(f"the feather must be from 0 to {MAX_FEATHER}, got {self.feather}")
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
        return cls(tuple(regions), _at_most_full(masks), feather)


@dataclass(frozen=True)
class RegionSpec:
    """What a colour in a mask file gets, from ``--region COLOUR=STYLE[:STRENGTH]`` or ``COLOUR=keep``."""

    colour: tuple[int, int, int]
    keep: bool = False
    style: int = 0
    strength: float = 1.0

    @classmethod
    def parse(cls, text: str, style_count: int) -> RegionSpec:
        """'red=2', '#00ff00=1:0.5' or 'white=keep' (styles count from 1)."""
        colour_text, sep, what = text.partition("=")
        if not sep or not what:
            raise RegionError(f"--region {text!r}: expected COLOUR=STYLE[:STRENGTH] or COLOUR=keep")
        colour = parse_colour(colour_text)
        if what.strip().lower() == "keep":
            return cls(colour, keep=True)
        style_text, _, strength_text = what.partition(":")
        try:
            style = int(style_text)
        except ValueError:
            raise RegionError(f"--region {text!r}: {style_text!r} is not a style number (1 to {style_count})") from None
        if not 1 <= style <= style_count:
            raise RegionError(f"--region {text!r}: there is no style {style}; give 1 to {style_count}")
        try:
            strength = float(strength_text) if strength_text else 1.0
        except ValueError:
            raise RegionError(f"--region {text!r}: {strength_text!r} is not a strength") from None
        if not 0 <= strength <= MAX_STRENGTH:
            raise RegionError(f"--region {text!r}: the strength must be from 0 to {MAX_STRENGTH:g}")
        return cls(colour, style=style - 1, strength=strength)

    def region(self, style_count: int) -> Region:
        name = f"{colour_hex(self.colour)} ({'keep' if self.keep else f'style {self.style + 1}'})"
        blend = tuple(1.0 if n == self.style else 0.0 for n in range(style_count))
        return Region(name, self.colour, self.keep, blend, self.strength)


def regions_from_mask(
    path: str | Path, specs: Sequence[RegionSpec], style_count: int, size: tuple[int, int] | None = None
) -> tuple[Regions, str | None]:
    """Regions from a mask file and what each of its colours gets.

    A greyscale file is one region (give it as ``white``): its grey levels
    are the coverage. A colour file is colour-coded: each spec's colour marks
    its region (within COLOUR_TOLERANCE); other colours (black, say) are unpainted.

    Args:
        size: the photo's (width, height): a mask of another size is scaled to it.

    Returns:
        The regions, and a notice for the user when the mask was scaled (else None).
    """
    if not specs:
        raise RegionError("a mask needs at least one --region COLOUR=STYLE or COLOUR=keep")
    colours = [s.colour for s in specs]
    duplicates = sorted({colour_hex(c) for c in colours if colours.count(c) > 1})
    if duplicates:
        raise RegionError(f"--region gives {', '.join(duplicates)} more than once")
    name = Path(path).name
    image = _open_mask(path)
    if image.mode in GREYSCALE_MODES:
        if len(specs) != 1 or specs[0].colour != (255, 255, 255):
            raise RegionError(
                f"the mask {name} is greyscale, which makes one region: give it as --region white=STYLE or white=keep"
            )
        planes = _coverage(image)[None].copy()
    else:
        rgb = np.asarray(image.convert("RGB")).astype(np.int16)
        planes_list = []
        for spec in specs:
            near = (np.abs(rgb - np.array(spec.colour, np.int16)) <= COLOUR_TOLERANCE).all(-1)
            planes_list.append(near.astype(np.uint8) * 255)
        planes = np.stack(planes_list)
    regions = Regions(tuple(s.region(style_count) for s in specs), _at_most_full(planes))
    empty = [colour_hex(s.colour) for s, plane in zip(specs, planes, strict=True) if not plane.any()]
    if empty:
        found = ", ".join(colour_hex(c) for c in _main_colours(image)) or "none"
        raise RegionError(f"no pixel of the mask {name} is {', '.join(empty)} (its main colours: {found})")
    notice = None
    if size is not None and regions.size != size:
        notice = (
            f"the mask {name} is {regions.size[0]}×{regions.size[1]}; it was scaled to the photo's {size[0]}×{size[1]}"
        )
        regions = regions.resized(*size)
    regions.check(style_count)
    return regions, notice


GREYSCALE_MODES: Final = ("1", "L", "LA", "I", "I;16", "F")


def _open_mask(path: str | Path) -> Image.Image:
    """A mask file, read whole (RegionError naming it when it cannot be, or is too large to read safely)."""
    name = Path(path).name
    try:
        with open_image(path, name) as opened:
            opened.load()
            return opened
    except FileNotFoundError:
        raise RegionError(f"the mask {name} does not exist") from None
    except ImageLoadError as exc:
        raise RegionError(f"the mask {exc}") from None
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise RegionError(f"the mask {name} cannot be read as an image ({exc})") from None


def _coverage(image: Image.Image) -> np.ndarray:
    """A greyscale mask's coverage, 0 to 255 (H, W) uint8: 16-bit and float levels are scaled, not clipped."""
    if image.mode in ("I", "I;16"):
        return np.rint(np.asarray(image, np.float64) * (255.0 / 65535.0)).clip(0, 255).astype(np.uint8)
    if image.mode == "F":  # floats are coverages from 0 to 1
        return np.rint(np.asarray(image, np.float64) * 255.0).clip(0, 255).astype(np.uint8)
    return np.asarray(image.convert("L"))


def _main_colours(image: Image.Image, count: int = 4) -> list[tuple[int, int, int]]:
    small = image.convert("RGB").resize((64, 64), Image.Resampling.NEAREST)
    colours: list[tuple[int, tuple[int, int, int]]] = small.getcolors(64 * 64) or []  # type: ignore[assignment]
    return [c for _, c in sorted(colours, reverse=True)[:count]]


def _at_most_full(masks: np.ndarray) -> np.ndarray:
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


def _png_base64(plane: np.ndarray) -> str:
    buffer = io.BytesIO()
    Image.fromarray(plane).save(buffer, format="PNG", optimize=True)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _png_plane(text: str, name: str) -> np.ndarray:
    try:
        with open_image(io.BytesIO(base64.b64decode(text, validate=True)), f"region {name!r}'s mask") as image:
            return _coverage(image).copy()
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


class Stroke:
    """One brush stroke on a set of masks, from press to release.

    Dabs along the stroke take the largest coverage any dab gave a pixel (a
    soft brush stays soft however often it passes), applied over the masks as
    they were when the stroke began: painting region k at coverage a moves a
    of every other region's coverage (and of the unpainted area) to k; the
    eraser takes a of every region's away.

    Args:
        masks: (R, H, W) uint8: painted in place.
        index: the region painted (ignored by the eraser).
        radius: the brush's radius in mask pixels.
        hardness: the share of the radius painted at full coverage (1: a hard edge).
        erase: take coverage away instead.
    """

    def __init__(self, masks: np.ndarray, index: int, radius: float, hardness: float, *, erase: bool = False) -> None:
        self.masks, self.index, self.erase = masks, index, erase
        self.radius = max(float(radius), 0.5)
        self.hardness = min(max(float(hardness), 0.0), 1.0)
        self.before = masks.copy()
        self.alpha: np.ndarray = np.zeros(masks.shape[1:], np.float32)
        self.bounds: tuple[int, int, int, int] | None = None  # top, bottom, left, right
        self._last: tuple[float, float] | None = None

    def to(self, x: float, y: float) -> None:
        """Paint up to (x, y) in mask pixels, with dabs a quarter of the radius apart."""
        if self._last is None:
            points = [(x, y)]
        else:
            x0, y0 = self._last
            count = max(1, int(np.hypot(x - x0, y - y0) / max(self.radius / 4, 0.5)))
            points = [(x0 + (x - x0) * t / count, y0 + (y - y0) * t / count) for t in range(1, count + 1)]
        self._last = (x, y)
        for px, py in points:
            self._dab(px, py)

    def _dab(self, x: float, y: float) -> None:
        height, width = int(self.alpha.shape[0]), int(self.alpha.shape[1])
        r = self.radius
        top, bottom = max(int(y - r), 0), min(int(np.ceil(y + r)) + 1, height)
        left, right = max(int(x - r), 0), min(int(np.ceil(x + r)) + 1, width)
        if top >= bottom or left >= right:
            return
        yy, xx = np.mgrid[top:bottom, left:right]
        distance = np.hypot(xx + 0.5 - x, yy + 0.5 - y) / r
        solid = self.hardness
        dab = np.clip((1 - distance) / max(1 - solid, 1e-6), 0, 1) if solid < 1 else (distance <= 1).astype(np.float32)
        area = (slice(top, bottom), slice(left, right))
        np.maximum(self.alpha[area], dab, out=self.alpha[area])
        self._apply(area)
        if self.bounds is None:
            self.bounds = (top, bottom, left, right)
        else:
            t, b, lft, rgt = self.bounds
            self.bounds = (min(t, top), max(b, bottom), min(lft, left), max(rgt, right))

    def _apply(self, area: tuple[slice, slice]) -> None:
        a = self.alpha[area]
        before = self.before[(slice(None), *area)].astype(np.float32)
        after = before * (1 - a)
        if not self.erase:
            after[self.index] += 255 * a
        self.masks[(slice(None), *area)] = np.clip(np.rint(after), 0, 255).astype(np.uint8)

    def patches(self) -> tuple[tuple[slice, slice], np.ndarray, np.ndarray] | None:
        """(area, masks before, masks after) of what the stroke changed, for undo; None if nothing."""
        if self.bounds is None:
            return None
        top, bottom, left, right = self.bounds
        area = (slice(top, bottom), slice(left, right))
        region = (slice(None), *area)
        return area, self.before[region].copy(), self.masks[region].copy()


def filled(masks: np.ndarray, index: int) -> np.ndarray:
    """``masks`` with region ``index`` taking all the unpainted coverage (the rest of the picture)."""
    out = masks.copy()
    free = 255 - masks.astype(np.int32).sum(0)
    out[index] = np.clip(masks[index].astype(np.int32) + np.maximum(free, 0), 0, 255).astype(np.uint8)
    return out


def cleared(masks: np.ndarray, index: int) -> np.ndarray:
    """``masks`` with region ``index`` unpainted."""
    out = masks.copy()
    out[index] = 0
    return out


def regions_from_picture(
    path: str | Path, style_count: int, size: tuple[int, int] | None = None
) -> tuple[Regions, str | None]:
    """Regions from a mask file, its colours found for the user: for the window's *Load mask*.

    Each colour covering at least 0.5 % of a colour-coded mask becomes a
    region (black stays unpainted), getting the styles in turn; a greyscale
    mask is one region. ``regions_from_mask`` then reads it as the command line does.
    """
    name = Path(path).name
    image = _open_mask(path)
    if image.mode in GREYSCALE_MODES:
        return regions_from_mask(path, [RegionSpec((255, 255, 255))], style_count, size)
    small = image.convert("RGB").resize((128, 128), Image.Resampling.NEAREST)
    counts: list[tuple[int, tuple[int, int, int]]] = small.getcolors(128 * 128) or []  # type: ignore[assignment]
    found: list[tuple[int, int, int]] = []
    for count, colour in sorted(counts, reverse=True):
        if count < 0.005 * 128 * 128 or max(colour) <= COLOUR_TOLERANCE:
            continue
        if all(max(abs(a - b) for a, b in zip(colour, other, strict=True)) > COLOUR_TOLERANCE for other in found):
            found.append(colour)
    if not found:
        raise RegionError(f"the mask {name} has no painted colour: it is black (unpainted) everywhere")
    specs = [RegionSpec(colour, style=n % max(style_count, 1)) for n, colour in enumerate(found[: len(PALETTE)])]
    return regions_from_mask(path, specs, style_count, size)
