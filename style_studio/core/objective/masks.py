"""Regions from mask pictures: a colour-coded or greyscale file, and what each of its colours gets.

The command line reads a mask with ``--regions MASK --region COLOUR=STYLE``
(``RegionSpec``, ``regions_from_mask``); the window's *Load mask* finds the
colours itself (``regions_from_picture``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import ImageLoadError
from ..io.imageio import open_image
from .regions import (
    COLOUR_TOLERANCE,
    PALETTE,
    Region,
    RegionError,
    Regions,
    at_most_full,
    colour_hex,
    coverage,
    parse_colour,
    strength_problem,
)


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
        problem = strength_problem(strength)
        if problem is not None:
            raise RegionError(f"--region {text!r}: {problem}")
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
        planes = coverage(image)[None].copy()
    else:
        rgb = np.asarray(image.convert("RGB")).astype(np.int16)
        planes_list = []
        for spec in specs:
            near = (np.abs(rgb - np.array(spec.colour, np.int16)) <= COLOUR_TOLERANCE).all(-1)
            planes_list.append(near.astype(np.uint8) * 255)
        planes = np.stack(planes_list)
    regions = Regions(tuple(s.region(style_count) for s in specs), at_most_full(planes))
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


def _main_colours(image: Image.Image, count: int = 4) -> list[tuple[int, int, int]]:
    small = image.convert("RGB").resize((64, 64), Image.Resampling.NEAREST)
    colours: list[tuple[int, tuple[int, int, int]]] = small.getcolors(64 * 64) or []  # type: ignore[assignment]
    return [c for _, c in sorted(colours, reverse=True)[:count]]


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
