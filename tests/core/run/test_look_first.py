"""A run from the look (``--init instant`` or ``tuned``): the first preview is the look the window showed, and no
preview of an earlier scale is blurrier than it (the look's strokes over the scale's masses)."""

from __future__ import annotations

import dataclasses

import numpy as np
from PIL import Image

from style_studio.core import Previews
from style_studio.core.settings import DEFAULTS, preset
from tests.conftest import SAMPLES
from tests.runs import run

#: Two scales, 96 then 192 px, a few iterations each, previews of every iteration.
FROM_THE_LOOK = dataclasses.replace(
    DEFAULTS, size=192, first_scale=96, iterations=4, init="instant", weights="untrained"
)


def sharpness(picture: np.ndarray) -> float:
    """The mean difference between neighbouring pixels' luminance: what a blur takes away."""
    luminance = picture.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    return float(np.abs(np.diff(luminance, axis=1)).mean() + np.abs(np.diff(luminance, axis=0)).mean())


def test_a_run_from_the_look_shows_the_look_first_and_no_earlier_scale_as_a_blur(tiny):
    photo = Image.open(SAMPLES / "content" / "chelsea.png").convert("RGB")
    painting = Image.open(SAMPLES / "style" / "starry_night.jpg").convert("RGB")
    _, alone = run(photo, [painting], dataclasses.replace(preset("instant"), size=192), tiny)
    records, result = run(photo, [painting], FROM_THE_LOOK, tiny, previews=Previews(0.0, 192))
    assert result.finished
    previews = [r for r in records if r.preview is not None]
    first = previews[0]
    assert first.start and (first.preview.shape[1], first.preview.shape[0]) == alone.image.size
    # The first preview is the look as the window showed it before Start, at the run's size.
    assert np.abs(first.preview.astype(int) - np.asarray(alone.image, dtype=int)).mean() < 1.0
    look_sharpness = sharpness(first.preview)
    early = [r for r in previews if r.scale == 1 and not r.start]
    assert early, "the first scale sent previews"
    assert all(p.preview.shape == first.preview.shape for p in early)
    assert min(sharpness(p.preview) for p in early) > 0.7 * look_sharpness
