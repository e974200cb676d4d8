"""What ``video.py`` measures besides flicker: the trail behind a moving object, and the drift of a clip's look.

Trail: a pixel the object uncovers at frame k is compared, at frame k + 2,
with the pixels the object never covers, by how far each is from the photo
(mean absolute difference in RGB) and how much of the style distance each
closed (sliced Wasserstein of the VGG features at relu1_1 and relu2_1 over
the pixel set, against the painting's, 0 the photo's, 1 the painting's).
Reported as uncovered / never covered: 1 means no trail (goal at least 0.9).

The style closed depends on the set's size as well as on how styled it is:
all the never-covered pixels (a third of the picture, sky, table and cup
together) spread over more of the painting's features than any strip a few
pixels wide can, so a strip closes less even where nothing trails (a frame
styled on its own, which has no history, scores about 0.82). The style
closed is therefore also reported against never-covered sets of the
uncovered set's own shape and size (``matched_sets``: the same pattern of
pixels, moved, or turned a quarter, to where the object never goes).

Drift: over the clip, the spread (standard deviation over frames) of each
frame's style distance to the painting (``quality.Features``) and of its
mean colour (the norm of the per-channel standard deviations), coherent
against frame by frame (goal at most 1.5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

#: The layers a pixel set is compared at: fine enough for a strip a few pixels wide.
SET_LAYERS = ("relu1_1", "relu2_1")


@dataclass(frozen=True)
class Box:
    """Where the object is in one frame: its left and top edges and its side, in pixels."""

    left: int
    top: int
    side: int

    def covers(self, shape: tuple[int, int]) -> np.ndarray:
        covered = np.zeros(shape, bool)
        covered[self.top : self.top + self.side, self.left : self.left + self.side] = True
        return covered


def uncovered(boxes: list[Box], shape: tuple[int, int], after: int = 2) -> list[tuple[int, np.ndarray]]:
    """(frame, pixels) for each frame ``after`` frames past one that uncovers pixels, which stay uncovered."""
    covered = [box.covers(shape) for box in boxes]
    events = []
    for k in range(1, len(boxes) - after):
        revealed = covered[k - 1] & ~np.logical_or.reduce(covered[k : k + after + 1])
        if revealed.sum() >= 50:
            events.append((k + after, revealed))
    return events


def never_covered(boxes: list[Box], shape: tuple[int, int]) -> np.ndarray:
    return ~np.logical_or.reduce([box.covers(shape) for box in boxes])


def matched_sets(pixels: np.ndarray, allowed: np.ndarray, count: int = 10) -> list[np.ndarray]:
    """Up to ``count`` copies of the pattern ``pixels``, moved (or turned a quarter) to lie wholly in ``allowed``.

    Spread evenly over the places it fits; empty when it fits nowhere.
    """
    rows, cols = np.nonzero(pixels)
    pattern = pixels[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
    height, width = allowed.shape
    fits = []
    for shape in (pattern, pattern.T):
        tall, wide = shape.shape
        for top in range(height - tall + 1):
            for left in range(width - wide + 1):
                if not (shape & ~allowed[top : top + tall, left : left + wide]).any():
                    fits.append((shape, top, left))
    chosen = [fits[round(i)] for i in np.linspace(0, len(fits) - 1, min(count, len(fits)))] if fits else []
    sets = []
    for shape, top, left in chosen:
        placed = np.zeros_like(allowed)
        placed[top : top + shape.shape[0], left : left + shape.shape[1]] = shape
        sets.append(placed)
    return sets


class SetFeatures:
    """VGG feature maps of a picture, and the distance between the features of two pixel sets."""

    def __init__(self, features) -> None:
        self.features = features  # quality.Features: its network and capture

    def maps(self, picture: np.ndarray) -> dict[str, np.ndarray]:
        import torch

        from style_studio.core.io.tensors import pil_to_tensor

        with self.features.capture(self.features.net, content_layers=SET_LAYERS) as got, torch.no_grad():
            self.features.net(pil_to_tensor(Image.fromarray(picture)))
            return {k: got.activations[k][0].permute(1, 2, 0).numpy() for k in SET_LAYERS}

    @staticmethod
    def pick(maps: dict[str, np.ndarray], pixels: np.ndarray | None) -> dict[str, np.ndarray]:
        """The features at ``pixels`` (a mask at picture size, brought to each layer's size); None: all."""
        picked = {}
        for name, values in maps.items():
            if pixels is None:
                picked[name] = values.reshape(-1, values.shape[-1])
                continue
            height, width = values.shape[:2]
            small = Image.fromarray(pixels.astype(np.uint8) * 255).resize((width, height), Image.Resampling.BOX)
            chosen = np.asarray(small) >= 128
            picked[name] = values[chosen] if chosen.any() else values.reshape(-1, values.shape[-1])
        return picked

    @staticmethod
    def distance(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
        from quality import _quantiles

        rng = np.random.default_rng(0)
        total = 0.0
        for name in a:
            x, y = a[name], b[name]
            directions = rng.standard_normal((x.shape[1], 64))
            directions /= np.linalg.norm(directions, axis=0)
            px, py = (_quantiles(v @ directions) for v in (x, y))
            scale = np.sqrt((y**2).sum(1).mean() / x.shape[1]) + 1e-12
            total += float(np.sqrt(((px - py) ** 2).mean())) / scale
        return total / len(a)

    def closed(self, styled_maps, photo_maps, painting: dict[str, np.ndarray], pixels: np.ndarray) -> float:
        """The share of the photo's style distance that ``pixels`` closed in the styled picture."""
        after = self.distance(self.pick(styled_maps, pixels), painting)
        return 1 - after / self.distance(self.pick(photo_maps, pixels), painting)


@dataclass(frozen=True)
class Trail:
    """How styled the uncovered pixels are two frames on, against never-covered pixels; 1: no trail."""

    photo_distance: float  # mean distance from the photo, uncovered / never covered
    closed: float  # style closed, uncovered / all never-covered pixels
    closed_matched: float  # style closed, uncovered / never-covered sets of the same shape and size


def trail(
    inputs: list[np.ndarray], outputs: list[np.ndarray], boxes: list[Box], painting: np.ndarray, sets: SetFeatures
) -> Trail:
    """The trail measures, averaged over the frames two past one that uncovers pixels."""
    shape = inputs[0].shape[:2]
    never = never_covered(boxes, shape)
    styled = sets.pick(sets.maps(painting), None)
    distances, closed, matched = [], [], []
    for frame, revealed in uncovered(boxes, shape):
        out, photo = outputs[frame], inputs[frame]
        moved = np.abs(out.astype(float) - photo).mean(-1)
        distances.append(moved[revealed].mean() / moved[never].mean())
        out_maps, in_maps = sets.maps(out), sets.maps(photo)
        uncovered_share, never_share = (sets.closed(out_maps, in_maps, styled, p) for p in (revealed, never))
        controls = matched_sets(revealed, never) or [never]
        matched_share = np.mean([sets.closed(out_maps, in_maps, styled, pixels) for pixels in controls])
        closed.append(uncovered_share / never_share)
        matched.append(uncovered_share / matched_share)
    return Trail(float(np.mean(distances)), float(np.mean(closed)), float(np.mean(matched)))


def spread(outputs: list[np.ndarray], painting: Image.Image, features) -> tuple[float, float, list[float]]:
    """(spread of the style distance, spread of the mean colour, each frame's mean brightness)."""
    target = features.of(painting)
    distances = [features.distance(features.of(Image.fromarray(o)), target) for o in outputs]
    means = np.array([o.reshape(-1, 3).mean(0) for o in outputs])
    brightness = [float(m @ np.array([0.299, 0.587, 0.114])) for m in means]
    return float(np.std(distances)), float(np.linalg.norm(means.std(0))), brightness
