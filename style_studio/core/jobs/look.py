"""A look tuned to a painting for many pictures at once: a batch's photos in one painting, a clip's frames.

A single picture tunes the look on itself when none is kept (``run.engine``). A batch of photos in one painting
and a clip tune it once, on several of their pictures (``tuning.MOST_PHOTOS``, spread over them), before any is
painted: the look learns more of what it will paint, and then paints every picture at once, handed to each run
(``RunSpec.look``; a worker elsewhere gets it with its job). It is kept in the cache as a single picture's is
(``tuned_looks``), so that the next batch or clip in the painting finds it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image

from ..io.video import ClipFrame, read_frames
from ..progress import TuningProgress
from ..settings import Settings

if TYPE_CHECKING:
    from ..network.instant import TunedLook
    from ..network.weights import NetworkWeights
    from ..run.cancel import CancelToken
    from ..run.tuning import TuningStep

log = logging.getLogger(__name__)


def _tune_look(
    photos: Sequence[Image.Image] | Callable[[], Sequence[Image.Image]],
    styles: Sequence[Image.Image],
    settings: Settings,
    weights: NetworkWeights,
    *,
    cancel: CancelToken | None = None,
    progress: Callable[[TuningProgress], None] | None = None,
    say: Callable[[str], None] | None = None,
    kind: str = "photo",
) -> TunedLook:
    """The look tuned to ``styles`` under ``settings`` (the kept one, or tuned now on at most
    ``tuning.MOST_PHOTOS`` of ``photos``, spread over them), ``progress`` hearing each step; the first says what
    is tuned.

    Args:
        photos: the pictures to learn from, or a function that reads them (a clip's frames: read only when the
            look is not kept).
        say: hears what the user should know besides (a kept look set aside, a cache that cannot be written);
            without it, the log does.
        kind: what a photo is called in the first step's event ("frame" for a clip).

    Raises:
        StyleStudioError: settings that do not fit the styles, the instant look's network missing.
        Cancelled: ``cancel`` was set; the steps done are kept, and the next tuning goes on from them.
    """
    from ..network.device import resolve
    from ..run.compute import device_flags, network_for
    from ..run.tuned_looks import obtain_look
    from ..run.tuning import spread

    settings = settings.validate()
    settings.blend_weights(len(styles))  # raises on a count mismatch
    compute = resolve(settings.device, settings.precision)
    learned: list[int] = []

    def pictures() -> list[Image.Image]:
        given = photos() if callable(photos) else photos
        chosen = [given[index].convert("RGB") for index in spread(len(given))]
        learned.append(len(chosen))
        return chosen

    told: list[str] = []
    paintings = [style.convert("RGB") for style in styles]
    steps = obtain_look(network_for(weights, compute), pictures, paintings, settings, compute, weights.label,
                        cancel=cancel, tell=told.append)  # fmt: skip
    with device_flags(compute, settings.deterministic):
        look = _heard(steps, lambda: learned[0] if learned else 0, told, kind, progress)
    for notice in told:
        (say or log.warning)(notice)
    return look


def _heard(
    steps: Generator[TuningStep, None, TunedLook],
    learned: Callable[[], int],
    told: list[str],
    kind: str,
    progress: Callable[[TuningProgress], None] | None,
) -> TunedLook:
    """Run the tuning ``steps`` to their end, each told to ``progress`` as a ``TuningProgress`` with what ``told``
    gathered since the last one; the first also says what is tuned, on how many (``learned``) of ``kind``."""
    began, first = time.perf_counter(), True
    while True:
        try:
            step = next(steps)
        except StopIteration as end:
            look: TunedLook = end.value
            return look
        count, events = learned(), told[:]
        told.clear()
        if first:
            named = f"{count} {kind}{'' if count == 1 else 's'}"
            events.insert(0, f"tuning the look to the painting on {named} ({step.steps} steps; kept for the next "
                          "pictures in this painting)")  # fmt: skip
            first = False
        if progress is not None:
            elapsed = time.perf_counter() - began
            progress(TuningProgress(step.step, step.steps, step.loss, count, elapsed, "; ".join(events) or None))


def clip_frames(
    clip: Path, start: float, duration: float | None, frames: int, size: tuple[int, int]
) -> list[Image.Image]:
    """At most ``tuning.MOST_PHOTOS`` frames spread over the part of ``clip`` from ``start`` for ``duration`` seconds
    (about ``frames`` frames, as its headers say), at ``size`` (width, height): read one at a time, up to the last
    one chosen. A clip that ends before its headers say gives its last frame in place of those it lacks.

    Raises:
        VideoError: the clip cannot be read.
    """
    from ..run.tuning import spread

    wanted = spread(max(1, frames))
    chosen: list[Image.Image] = []
    last: ClipFrame | None = None
    with contextlib.closing(read_frames(clip, start, duration)) as reading:
        for last in reading:
            if last.index in wanted:
                chosen.append(last.image().resize(size, Image.Resampling.LANCZOS))
            if last.index >= wanted[-1]:
                break
    if last is not None and last.index not in wanted:
        chosen.append(last.image().resize(size, Image.Resampling.LANCZOS))
    return chosen
