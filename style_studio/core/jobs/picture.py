"""A picture's run: the one place the engine is built (``PictureRun``), for a job's picture, the window's, the queue's,
a frame, and the benchmarks that step runs side by side.

``_run_picture`` (the door's ``picture``) takes what to make (``RunSpec``: pictures already read, the
settings, what it goes on from) and how to hear and steer it (``RunHooks``),
runs the engine to its end and returns a ``PictureResult``: the best picture so far with the
settings and regions it was made with (after any live change), its job key
and the document to embed. A run that is stopped or fails part-way still
returns what it made (``outcome``: finished, stopped or failed); callers that need all or
nothing ask ``PictureResult.finished_or_raise``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from ..errors import Cancelled
from ..objective.regions import Regions
from ..progress import CANCELLED, Failed, Finished, Outcome, Progress
from ..run.spec import Pictures as Pictures
from ..run.spec import Previews as Previews
from ..run.spec import RunHooks as RunHooks
from ..run.spec import RunSpec as RunSpec
from ..settings import Settings
from .job import job_key, picture_metadata

if TYPE_CHECKING:
    from ..network.device import Compute
    from ..network.weights import NetworkWeights
    from ..run.engine import StyleTransfer
    from ..run.plan import RunPlan


@dataclass(frozen=True, eq=False)
class PictureResult:
    """What a picture's run made, also when it was stopped or failed part-way.

    Attributes:
        image: the lowest-loss picture at the requested size; None when the run made none.
        deep: ``image`` at 16 bits per channel, (H, W, 3) uint16, when asked for (print files).
        settings: the settings it ended with (live changes included).
        regions: the regions it ended with (painting during the run included), fitted to the photo.
        outcome: how it ended: ``Finished``, ``Stopped`` (its cancel token), or ``Failed`` with the error (its
            ``exception`` the one caught, to raise again).
        last: the last record.
        run_id: the run's checkpoint name.
        weights_label: the weights it ran with, as the user is told.
        seconds: how long it ran, setting up included.
        known_key: the job key the caller worked out for the pictures and settings it gave, when the run ended
            with those (no live change): ``key`` is then not worked out again.
    """

    pictures: Pictures
    image: Image.Image | None
    deep: np.ndarray | None
    settings: Settings
    regions: Regions | None
    outcome: Outcome
    last: Progress | None
    run_id: str
    weights_label: str
    seconds: float
    known_key: str | None = None

    @property
    def finished(self) -> bool:
        return isinstance(self.outcome, Finished) and self.image is not None

    @property
    def error(self) -> str | None:
        """The failure as the user is told it; None when it did not fail."""
        return self.outcome.error if isinstance(self.outcome, Failed) else None

    @property
    def compute(self) -> str:
        """Where it ran ("cpu, fp32", ...)."""
        return self.last.compute if self.last is not None else ""

    @functools.cached_property
    def key(self) -> str:
        """The job key of the picture made: its settings, weights, pictures and regions as they ended."""
        if self.known_key is not None:
            return self.known_key
        return job_key(self.settings, self.pictures.content, self.pictures.styles, self.regions)

    def document(self, app_version: str) -> str:
        """The document to embed in the picture's file (``picture_metadata``), with its job key."""
        return picture_metadata(
            self.settings,
            weights_label=self.weights_label,
            app_version=app_version,
            content=self.pictures.content_name,
            styles=self.pictures.style_names,
            regions=self.regions,
            key=self.key,
        )

    def finished_or_raise(self) -> Image.Image:
        """The picture of a run that finished; else the failure, or Cancelled for a stopped run."""
        if isinstance(self.outcome, Failed):
            raise self.outcome.raised()
        if not self.finished or self.image is None:
            raise Cancelled()
        return self.image


def load_engine() -> None:
    """Import the engine, and torch with it, now rather than at the first run (a window does it in the background
    while it opens, so that its first Start does not wait for them)."""
    from ..run.engine import StyleTransfer  # noqa: F401 - imported for its side effect


class PictureRun:
    """A picture's run taken one record at a time, the one place the engine is built: ``_run_picture`` runs one to its
    end; a benchmark steps two side by side. Each ``next`` is a record, heard by ``hooks.report`` too.

    Raises (on construction):
        StyleStudioError: settings that do not fit the pictures, a refused resume, out of memory while setting up.
        Cancelled: ``hooks.cancel`` was set before the run was set up.
    """

    def __init__(
        self, spec: RunSpec, weights: NetworkWeights, hooks: RunHooks = RunHooks(), *, compute: Compute | None = None
    ) -> None:
        """``compute``: where to run instead of the settings' device and precision (a benchmark's emulation)."""
        from ..run.engine import StyleTransfer

        self.began = time.perf_counter()
        if hooks.cancel is not None:
            hooks.cancel.raise_if_cancelled()
        self.spec, self.weights, self.hooks = spec, weights, hooks
        self._transfer = StyleTransfer(spec, weights, hooks, compute)
        self.run_id = self._transfer.run_id
        self.last: Progress | None = None
        self._records = self._transfer.run()
        if hooks.started is not None:
            hooks.started(self._transfer.plan)

    @property
    def plan(self) -> RunPlan:
        """Its scales, tiles, memory and work (it grows when a live change is given time)."""
        return self._transfer.plan

    @property
    def compute(self) -> Compute:
        """Where it runs: the device, the precision and the memory format."""
        return self._transfer.compute

    @property
    def image(self) -> Image.Image | None:
        """The lowest-loss picture so far, at the requested size."""
        return self._transfer.result

    def evaluate(self, picture: Image.Image) -> dict[str, float]:
        """The loss terms of ``picture`` as this run defines them (a result judged by another run's objective)."""
        return self._transfer.evaluate(picture)

    def __iter__(self) -> Iterator[Progress]:
        return self

    def __next__(self) -> Progress:
        record = next(self._records)
        self.last = record
        if self.hooks.report is not None:
            self.hooks.report(record)
        return record

    def close(self) -> None:
        """Stop it where it stands (its hooks are taken off the network)."""
        self._records.close()

    def result(self, outcome: Outcome) -> PictureResult:
        """What it made, ended as ``outcome`` says."""
        transfer, spec = self._transfer, self.spec
        unchanged = transfer.settings == spec.settings and transfer.regions is spec.pictures.regions
        return PictureResult(
            spec.pictures, transfer.result, _deep(transfer) if spec.deep else None, transfer.settings,
            transfer.regions, outcome, self.last, self.run_id, self.weights.label,
            time.perf_counter() - self.began, spec.key if unchanged else None,
        )  # fmt: skip


def _run_picture(spec: RunSpec, weights: NetworkWeights, hooks: RunHooks = RunHooks()) -> PictureResult:
    """Run the engine on ``spec`` with ``weights`` and return what it made; ``hooks`` hear and steer it.

    Raises:
        StyleStudioError: settings that do not fit the pictures, a refused resume, out of memory while setting up.
        Cancelled: stopped before the run was set up.
    A failure once the run is under way is returned (``PictureResult.outcome``: ``Failed``) with the picture made
    so far.
    """
    run = PictureRun(spec, weights, hooks)
    try:
        for _ in run:
            pass
    except Cancelled:
        return run.result(CANCELLED)
    except Exception as exc:  # kept with the picture so far: the caller says it, or raises it
        return run.result(Failed.of(exc))
    ended = run.last.outcome if run.last is not None else None
    return run.result(ended or CANCELLED)


def _deep(transfer: StyleTransfer) -> np.ndarray | None:
    """The result at 16 bits per channel: the run's own values, at a quarter of float32's memory."""
    values = transfer.result_array()
    if values is None:
        return None
    deep: np.ndarray = (values * 65535.0 + 0.5).astype(np.uint16)
    return deep
