"""Runs as the tests make them: through ``run_picture``, the run every path takes below the Python door.

Tests of the engine itself build it (``core/run/test_engine.py``, ``test_checkpoints.py``); the rest run pictures
the way the command line, the window and ``stylize`` do, and read the records and the result they get.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PIL import Image

from style_studio.core import PictureResult, Pictures, Progress, Regions, Settings, run_picture


def run(
    content: Image.Image,
    styles: Sequence[Image.Image],
    settings: Settings,
    weights: Any,
    *,
    regions: Regions | None = None,
    names: tuple[str, ...] = (),
    hear: Callable[[Progress], None] | None = None,
    **options: Any,
) -> tuple[list[Progress], PictureResult]:
    """Every record of the run (the start picture's first) and its result; ``names``: the photo's and the styles'
    (kept in checkpoints); ``hear`` also hears each record as it comes; ``options`` go to ``run_picture`` (cancel,
    previews, live, checkpoints, run_id, resume, ...)."""
    records: list[Progress] = []

    def report(record: Progress) -> None:
        records.append(record)
        if hear is not None:
            hear(record)

    result = run_picture(Pictures(content, tuple(styles), names, regions), settings, weights, report=report, **options)
    return records, result


def iterations(records: Sequence[Progress]) -> list[Progress]:
    """The records of iterations: the start picture's, which has no losses, left out."""
    return [record for record in records if not record.start]
