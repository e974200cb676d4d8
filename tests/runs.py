"""Runs as the tests make them: through ``run_picture``, the run every path takes below the Python door.

Tests of the engine itself build it (``engine``: ``core/run/test_engine.py``, ``test_checkpoints.py``); the rest run
pictures the way the command line, the window and ``stylize`` do, and read the records and the result they get.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from PIL import Image

from style_studio.core import PictureResult, Pictures, Previews, Progress, Regions, RunHooks, RunSpec, Settings, door

if TYPE_CHECKING:
    from style_studio.core.network.device import Compute
    from style_studio.core.run.engine import StyleTransfer

#: The options that say what a run makes; the rest say how it is heard and steered.
_SPEC = {f.name for f in dataclasses.fields(RunSpec)}


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
    """Every record of the run (the start picture's first) and its result.

    ``names``: the photo's and the styles' (kept in checkpoints); ``hear`` also hears each record as it comes;
    ``options`` are the ``RunSpec``'s (resume, run_id, frame, ...) and the ``RunHooks``' (cancel, previews, live,
    checkpoints, started).
    """
    records: list[Progress] = []

    def report(record: Progress) -> None:
        records.append(record)
        if hear is not None:
            hear(record)

    spec = RunSpec(Pictures(content, tuple(styles), names, regions), settings,
                   **{k: v for k, v in options.items() if k in _SPEC})  # fmt: skip
    hooks = RunHooks(report=report, **{k: v for k, v in options.items() if k not in _SPEC})
    result = door.picture(spec, weights, hooks)
    return records, result


def engine(
    content: Image.Image,
    styles: Sequence[Image.Image],
    settings: Settings,
    weights: Any,
    *,
    regions: Regions | None = None,
    names: tuple[str, ...] = (),
    compute: Compute | None = None,
    preview_interval: float = 0.15,
    **options: Any,
) -> StyleTransfer:
    """The engine, built as a picture's run builds it: from a spec and hooks, ``options`` as ``run``'s; a preview at
    most every ``preview_interval`` seconds."""
    from style_studio.core.run.engine import StyleTransfer

    spec = RunSpec(Pictures(content, tuple(styles), names, regions), settings,
                   **{k: v for k, v in options.items() if k in _SPEC})  # fmt: skip
    hooks = RunHooks(previews=Previews(preview_interval), **{k: v for k, v in options.items() if k not in _SPEC})
    return StyleTransfer(spec, weights, hooks, compute)


def iterations(records: Sequence[Progress]) -> list[Progress]:
    """The records of iterations: the start picture's, which has no losses, left out."""
    return [record for record in records if not record.start]
