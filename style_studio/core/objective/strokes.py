"""Painting regions: brush strokes on the masks, and a region filled or cleared."""

from __future__ import annotations

import numpy as np


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
