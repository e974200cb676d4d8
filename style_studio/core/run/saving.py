"""Saving a run as it goes: where it stands, at most once per interval, written so that a kill loses nothing."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from PIL import Image
from torch import Tensor

from ..io.imageio import image_hash
from ..network.weights import identity as weights_identity
from ..objective.regions import Regions
from ..settings import Settings
from . import checkpoints
from .checkpoints import Checkpoint, CheckpointStore, Position

log = logging.getLogger(__name__)


class RunSaver:
    """A run's checkpoints: its inputs' identity, the resume check, and saving where it stands.

    A save that fails (a full disk) is said once, at error level, and the run goes on.

    Args:
        store: where checkpoints go; None: the run is not saved.
        run_id: the run's checkpoint name.
        content, styles: the run's pictures; names: what the user calls them.
    """

    def __init__(
        self,
        store: CheckpointStore | None,
        run_id: str,
        content: Image.Image,
        styles: Sequence[Image.Image],
        names: Sequence[str],
    ) -> None:
        self.store, self.run_id = store, run_id
        self.content, self.styles, self.names = content, tuple(styles), tuple(names)
        self._hashes: tuple[str, tuple[str, ...]] | None = None
        self._last = time.perf_counter()
        self._interval = checkpoints.interval()
        self._failed = False

    def hashes(self) -> tuple[str, tuple[str, ...]]:
        """The content's and the styles' hashes, worked out once."""
        if self._hashes is None:
            self._hashes = (image_hash(self.content), tuple(image_hash(s) for s in self.styles))
        return self._hashes

    def check_resume(
        self,
        checkpoint: Checkpoint,
        settings: Settings,
        regions: Regions | None,
        schedule: Sequence[tuple[tuple[int, int], int]],
    ) -> None:
        """StyleStudioError saying why this run cannot go on from ``checkpoint``; nothing when it can."""
        content, styles = self.hashes()
        weights = weights_identity(settings.network_weights)
        checkpoint.check_resumable(settings, content, styles, regions, weights, schedule)

    def started(self) -> None:
        """The run starts: the interval counts from now."""
        self._last = time.perf_counter()
        self._interval = checkpoints.interval()
        self._failed = False

    @property
    def due(self) -> bool:
        return time.perf_counter() - self._last >= self._interval

    def save(
        self,
        settings: Settings,
        position: Position,
        image: Tensor,
        lowest: Tensor,
        best: float,
        regions: Regions | None,
        step_scale: float | None,
    ) -> None:
        """Save where the run stands (``image`` and the ``lowest``-loss one so far); a failure is logged, not raised."""
        self._last = time.perf_counter()
        if self.store is None:
            return
        content, styles = self.hashes()
        checkpoint = Checkpoint(
            run_id=self.run_id,
            settings=settings,
            content_hash=content,
            style_hashes=styles,
            names=self.names,
            position=position,
            state={"image": image.detach().float().cpu(), "lowest": lowest.float().cpu()},
            best=best,
            regions=regions.to_json() if regions else None,
            step_scale=step_scale,
            weights=weights_identity(settings.network_weights),
        )
        try:
            self.store.save(checkpoint, (self.content, self.styles))
        except OSError as exc:
            # Said once a run (a full disk fails every minute); the run itself goes on.
            report = log.debug if self._failed else log.error
            report(
                "could not save a checkpoint in %s (%s); the run goes on, but cannot be resumed from here",
                self.store.root,
                exc,
            )
            self._failed = True
