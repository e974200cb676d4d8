"""Unfinished runs: offered at start, resumed with their own pictures and settings, or discarded."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core import Checkpoint, RegionError, StyleStudioError, is_queue_run
from .qt_images import InputImage
from .run_bar import ago

if TYPE_CHECKING:
    from .main_window import MainWindow

log = logging.getLogger(__name__)


class UnfinishedRuns:
    """Offers, at start, to go on with a run a crash, a kill or closing cut off; resumes or discards it."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window

    def offer(self) -> None:
        """Offer to go on with the newest unfinished run (after a crash, a kill or closing during a run)."""
        try:
            # The queue's own runs are the queue's to resume.
            unfinished = [c for c in self.window.checkpoints.unfinished() if not is_queue_run(c.run_id)]
        except OSError as exc:
            log.warning("cannot list unfinished runs: %s", exc)
            unfinished = []
        # Files this version could not read were set aside or left alone: say where they are.
        kept = "".join(
            f" {n[0].upper()}{n[1:]}." for n in [*self.window.queue.queue.notices, *self.window.checkpoints.notices]
        )
        if not unfinished:
            if kept:
                self.window.banner.show_message(kept.strip(), "info")
            return
        checkpoint = unfinished[0]
        more = f" ({len(unfinished) - 1} older ones too)" if len(unfinished) > 1 else ""
        self.window.banner.show_message(
            f"An unfinished run can be resumed: {checkpoint.describe()}, {ago(checkpoint.saved_at)}{more}.{kept}",
            "info",
            [("Resume", lambda: self.resume(checkpoint)), ("Discard", lambda: self.discard(unfinished))],
        )

    def resume(self, checkpoint: Checkpoint) -> None:
        """Load an unfinished run's pictures and settings and go on with it where it stood."""
        if self.window.controller.running:
            self.window.show_error("Stop the current run before resuming another.")
            return
        try:
            content, styles = checkpoint.inputs()
        except StyleStudioError as exc:
            self.window.show_error(str(exc))
            return
        names = checkpoint.names
        self.window.inputs.set_content(InputImage(content, names[0]))
        for row in list(self.window.inputs.style_rows):
            self.window.inputs.remove_style(row)
        for number, style in enumerate(styles, start=1):
            name = names[number] if number < len(names) else f"style {number}"
            self.window.inputs.add_style(InputImage(style, name))
        self.window.controls.set_settings(checkpoint.settings)
        self.window.inputs.show_blend(checkpoint.settings.style_blend)
        try:
            painted = checkpoint.painted()
        except RegionError as exc:
            self.window.show_error(f"The unfinished run's regions cannot be read: {exc}")
            return
        self.window.regions.replace(painted, "Regions of the unfinished run")
        self.window.start(resume=checkpoint)

    def discard(self, checkpoints: Sequence[Checkpoint]) -> None:
        for checkpoint in checkpoints:
            self.window.checkpoints.discard(checkpoint.run_id)
        self.window.statusBar().showMessage("Unfinished runs discarded", 4000)
