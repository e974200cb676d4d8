"""Unfinished runs: offered at start, resumed with their own pictures and settings, or discarded."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..core import Checkpoint, RegionError, StyleStudioError, is_queue_run
from .pictures import InputImage
from .run_bar import ago

if TYPE_CHECKING:
    from ..core import CheckpointStore, RenderQueue
    from .feedback import Feedback
    from .regions_panel import RegionEditor
    from .runner import RunController
    from .state import WindowState
    from .widgets import MessageBanner

log = logging.getLogger(__name__)


class UnfinishedRuns:
    """Offers, at start, to go on with a run a crash, a kill or closing cut off; resumes or discards it.

    Args:
        checkpoints: where runs keep their state; ``queue``: the render queue (its runs are its own to resume).
        state, regions: what a resumed run's pictures, settings and regions go into.
        controller: the runs; ``start``: starts the user's run from a checkpoint.
        banner: where the offer is made; ``feedback`` tells the user the rest.
    """

    def __init__(
        self,
        *,
        checkpoints: CheckpointStore,
        queue: RenderQueue,
        state: WindowState,
        regions: RegionEditor,
        controller: RunController,
        start: Callable[[Checkpoint], None],
        banner: MessageBanner,
        feedback: Feedback,
    ) -> None:
        self.checkpoints, self.queue, self.state = checkpoints, queue, state
        self.regions, self.controller, self.start = regions, controller, start
        self.banner, self.feedback = banner, feedback

    def offer(self, notices: Sequence[str] = ()) -> None:
        """Offer to go on with the newest unfinished run (after a crash, a kill or closing during a run), and say
        what was set aside at start (``notices``, and the queue's and the checkpoints')."""
        try:
            # The queue's own runs are the queue's to resume.
            unfinished = [c for c in self.checkpoints.unfinished() if not is_queue_run(c.run_id)]
        except OSError as exc:
            log.warning("cannot list unfinished runs: %s", exc)
            unfinished = []
        # Files this version could not read were set aside or left alone: say where they are.
        said = [*notices, *self.queue.notices, *self.checkpoints.notices]
        kept = "".join(f" {n[0].upper()}{n[1:]}." for n in said)
        if not unfinished:
            if kept:
                self.banner.show_message(kept.strip(), "info")
            return
        checkpoint = unfinished[0]
        more = f" ({len(unfinished) - 1} older ones too)" if len(unfinished) > 1 else ""
        self.banner.show_message(
            f"An unfinished run can be resumed: {checkpoint.describe()}, {ago(checkpoint.saved_at)}{more}.{kept}",
            "info",
            [("Resume", lambda: self.resume(checkpoint)), ("Discard", lambda: self.discard(unfinished))],
        )

    def resume(self, checkpoint: Checkpoint) -> None:
        """Load an unfinished run's pictures and settings and go on with it where it stood."""
        if self.controller.running:
            self.feedback.error("Stop the current run before resuming another.")
            return
        notices: list[str] = []
        try:  # read whole now: one that cannot be read is set aside, and said
            whole = self.checkpoints.load(checkpoint.run_id, tell=notices.append)
        except StyleStudioError as exc:
            whole, notices = None, [str(exc)]
        if whole is None:
            self.feedback.error(f"The unfinished run cannot be resumed: {'; '.join(notices) or 'it is gone'}.")
            return
        checkpoint = whole
        content, styles = checkpoint.inputs()
        names = checkpoint.names
        self.state.set_photo(InputImage(content, names[0]))
        self.state.set_styles(tuple(
            InputImage(style, names[number] if number < len(names) else f"style {number}")
            for number, style in enumerate(styles, start=1)
        ))  # fmt: skip
        self.state.load(checkpoint.settings)
        try:
            painted = checkpoint.painted()
        except RegionError as exc:
            self.feedback.error(f"The unfinished run's regions cannot be read: {exc}")
            return
        self.regions.replace(painted, "Regions of the unfinished run")
        self.start(checkpoint)

    def discard(self, checkpoints: Sequence[Checkpoint]) -> None:
        for checkpoint in checkpoints:
            self.checkpoints.discard(checkpoint.run_id)
        self.feedback.status("Unfinished runs discarded", 4000)
