"""The user's runs: start one from the window's pictures and settings, show it, keep its result; announce the plan."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from PySide6.QtGui import QImage
from PySide6.QtWidgets import QLabel, QWidget

from ..core import (
    IMAGENET,
    UNTRAINED,
    Checkpoint,
    Finished,
    PictureResult,
    Pictures,
    PreviewFolder,
    Progress,
    RegionError,
    RunPlan,
    RunSpec,
    Settings,
    SettingsError,
    Stopped,
    describe,
    fit_size,
    missing_weights,
)
from .instant_preview import InstantPreview, tuned_settings
from .pictures import HistoryEntry
from .regions_panel import style_map_image
from .runner import QUEUE, USER, RunRequest
from .state import RunStatus
from .weights_dialog import WeightsDialog

if TYPE_CHECKING:
    from .feedback import Feedback
    from .history import HistoryStrip
    from .image_view import ImageView
    from .kept_history import KeptHistory
    from .loss_plot import LossPlot
    from .queue_panel import QueueController
    from .run_bar import RunBar
    from .run_plan import RunPlanner
    from .runner import RunController
    from .state import WindowState
    from .store import Store
    from .widgets import MessageBanner


#: What the run bar says while a run tunes the look to the painting (its records are start pictures', one a
#: preview of the look so far).
TUNING_TEXT = "Tuning the look to the painting…"


@dataclass(frozen=True)
class RunDisplay:
    """Where a user's run shows itself: the picture, the progress, the loss plot, the labels and messages.

    Attributes:
        comparing: whether the picture area shows a history entry to compare (previews then wait).
        weights_changed: the weights' label is to be shown again.
    """

    view: ImageView
    run_bar: RunBar
    loss_plot: LossPlot
    needs: QLabel
    device_label: QLabel
    banner: MessageBanner
    comparing: Callable[[], bool]
    weights_changed: Callable[[], None]


class UserRuns:
    """The user's runs: started from the window's inputs, shown as they go, kept in the history when done.

    Args:
        state: what a run is made of (the state's photo, styles, settings and regions); a finished run's
            result is shown in the state.
        controller: runs it; ``queue``: the render queue (the user's runs wait for it, and for a video).
        planner: plans runs and learns their speed, kept in ``store``.
        history, kept: where finished results go (kept until exported).
        display: where a run shows itself; ``feedback``: tells the user.
        use_weights_file, parent: takes a weights file the weights dialog found; the dialog's parent.
        look: the look before Start (``InstantPreview``): Start goes on from the look shown, and a tuning's
            picture (``tune``) becomes the look shown (else it is kept as any run's). None: no look is shown.
    """

    def __init__(
        self,
        *,
        state: WindowState,
        controller: RunController,
        queue: QueueController,
        planner: RunPlanner,
        store: Store,
        history: HistoryStrip,
        kept: KeptHistory,
        display: RunDisplay,
        feedback: Feedback,
        use_weights_file: Callable[[Path], None],
        parent: QWidget,
        look: InstantPreview | None = None,
    ) -> None:
        self.state = state
        self.look = look
        self.use_weights_file = use_weights_file
        self.controller, self.queue = controller, queue
        self.planner, self.store, self.history, self.kept = planner, store, history, kept
        self.display, self.feedback, self.parent = display, feedback, parent
        #: (choice, label) of the weights of the run under way (the label as the run reports it).
        self.running_weights: tuple[str, str] | None = None
        self._running_plan: RunPlan | None = None  # the plan of the run under way: its work measures its speed
        self._final_size: tuple[int, int] | None = None  # the size previews are shown at
        self._previews: PreviewFolder | None = None  # where the run under way keeps its previews
        self._then: Callable[[HistoryEntry], None] | None = None  # what to do with its picture once it stopped
        self._tuning = False  # the run under way is the Tune action's (``tune``)

    def announced_plan(self, settings: Settings | None = None) -> RunPlan | None:
        """The plan the window announces for a run of ``settings`` (default: the panel's) on the pictures shown."""
        content = self.state.photo
        if content is None:
            return None
        styles = [style.image.size for style in self.state.styles]
        return self.planner.plan(settings or self.state.settings, content.image.size, styles)

    def update_needs(self) -> None:
        """Before Start: the memory the run will need, tiled or not, and how long it will take."""
        label = self.display.needs
        plan = self.announced_plan()
        label.setText("" if plan is None else self.planner.describe(plan))
        label.setStyleSheet("color: #8a1c12;" if plan is not None and plan.refusal else "")

    def on_planned(self, plan: RunPlan) -> None:
        """The run that started planned this: later announcements plan for its device and precision."""
        self._running_plan = plan
        settings = self.controller.job_settings()
        if settings is not None:
            self.planner.learn(settings, plan)
            self.update_needs()

    def tune(self) -> None:
        """Tune the look to the painting (Run → Tune the look): a run of the tuned start alone with the current
        inputs and settings; its previews show the look as it learns, and once tuned it is the look before Start
        (``tuned_look``). A look kept whole is not tuned again; one stopped part of the way goes on."""
        self.start(tune=True)

    def start(self, *, resume: Checkpoint | None = None, tune: bool = False) -> None:
        """Start a run with the current inputs and settings (going on from ``resume``, when given; the tuned start
        alone with ``tune``)."""
        if self.queue.busy:
            self.feedback.error("The queue is rendering: pause it (Queue panel, or Esc) to run here.")
            return
        if self.controller.running and not self.controller.stopping:
            return
        if self.state.video_run is not RunStatus.IDLE:
            self.feedback.error("The video is rendering: stop it (Esc) to run here.")
            return
        content, styles = self.state.photo, self.state.styles
        if content is None or not styles:
            self.feedback.error("Add a content image and at least one style image first.")
            return
        try:
            # A resume runs with the checkpoint's own settings: the controls may round
            # or clamp them (a blend shown relative to its largest weight, a command
            # line's weight past a slider's end), and the run would then be refused.
            settings = (resume.settings if resume is not None else self.state.settings).validate()
            if tune:
                settings = tuned_settings(settings).validate()
            elif resume is None and self.look is not None:
                settings = self.look.start_settings(settings)
        except SettingsError as exc:
            self.feedback.error(str(exc))
            return
        ready = self.ensure_weights(settings)
        if ready is None:
            return
        settings = ready
        # The look learns the paintings blended, not where each goes: the regions shape the optimisation.
        regions = None if tune else self.state.regions_for_run()
        if regions is not None and resume is None:
            try:
                regions.check(len(styles))
            except RegionError as exc:
                self.feedback.error(f"The regions cannot be used: {exc}.")
                return
        self.display.banner.hide()
        pictures = Pictures(
            content.image, tuple(s.image for s in styles), (content.name, *(s.name for s in styles)), regions,
            self.state.input_files(),
        )  # fmt: skip
        previews = self.timelapse(content.path)
        if previews is False:
            return
        self._previews = previews
        job = RunRequest(RunSpec(pictures, settings, resume), previews=previews)
        self._final_size = fit_size(*content.image.size, settings.size)
        self.display.loss_plot.clear()
        self.display.run_bar.begin()
        self.running_weights = (settings.network_weights, describe(settings.network_weights))
        self._tuning = tune
        self.controller.start(job)
        self.display.weights_changed()

    def timelapse(self, photo: Path | None) -> PreviewFolder | Literal[False] | None:
        """Where the run keeps its previews: a new folder inside the chosen timelapse folder, named after the photo
        and the time; None when previews are not kept; False (the user is told) when the folder cannot be had."""
        chosen = self.store.timelapse_folder()
        if chosen is None:
            return None
        if not chosen.is_dir():
            self.feedback.error(
                f"The timelapse folder {chosen} is not there any more: choose another (Run → Keep previews for a "
                "timelapse), or turn it off."
            )
            return False
        stem = (photo.stem if photo is not None else "picture") + time.strftime("-%Y%m%d-%H%M%S")
        folder, number = chosen / stem, 1
        while folder.exists():
            number += 1
            folder = chosen / f"{stem}-{number}"
        previews = PreviewFolder(folder, self.state.input_files())
        problems = previews.problems()
        if problems:
            self.feedback.error(f"The previews cannot be kept: {problems[0]}")
            return False
        return previews

    def ensure_weights(self, settings: Settings) -> Settings | None:
        """Make sure the chosen weights exist; offer the ways to get them when they do not."""
        # The instant look alone needs none; the tuned look is tuned through them.
        if missing_weights(settings.network_weights) is None:
            return settings
        if settings.weights != IMAGENET:
            self.feedback.error(
                f"The weights file {settings.weights} is missing. Choose another file, the ImageNet "
                "weights, or untrained features under Computation → Weights."
            )
            return None
        dialog = WeightsDialog(self.parent, start_dir=str(Path.home()))
        if not dialog.exec() or dialog.choice is None:
            return None
        if dialog.choice not in (IMAGENET, UNTRAINED):
            self.use_weights_file(Path(dialog.choice))
        else:
            self.state.set("weights", dialog.choice)
        return dataclasses.replace(settings, weights=dialog.choice)

    def stop_and_then(self, then: Callable[[HistoryEntry], None]) -> bool:
        """Stop the user's run under way and hand its picture so far to ``then`` once it is in the history and shown
        (Export during a run writes what is being painted); False when no run of the user's is under way."""
        if not self.controller.running or self.controller.owner != USER:
            return False
        self._then = then
        self.stop()
        return True

    def stop(self) -> None:
        if self.controller.owner == QUEUE:
            self.queue.set_paused(True)  # Stop (Esc) during a queued job pauses the queue
            self.feedback.info("The queue is paused; the job under way will go again when it goes on")
            return
        if self.controller.running:
            self.controller.stop()
            self.display.run_bar.show_stopping()

    def on_progress(self, record: Progress) -> None:
        if self.controller.owner != USER:  # the queue's: its panel shows it
            return
        settings = self.controller.job_settings()
        if record.start and settings is not None and settings.tunes:
            self.display.run_bar.show_busy(TUNING_TEXT)
        else:
            self.display.run_bar.show_progress(record)
        if self.running_weights is not None and record.weights != self.running_weights[1]:
            self.running_weights = (self.running_weights[0], record.weights)
            self.display.weights_changed()
        self.display.device_label.setText(record.compute)
        if not record.done and not record.within_iteration:
            self.display.loss_plot.add(record.step, record.loss_curves())
        if record.style_map is not None and self.state.style_map is not None:
            self.display.view.set_overlay("style map", style_map_image(record.style_map))
        if record.event:
            self.feedback.info(record.event)

    def on_preview(self, image: QImage) -> None:
        if not self.display.comparing() and self.controller.owner == USER:
            self.display.view.set_image(image, self._final_size)

    def on_finished(self, owner: str, outcome: PictureResult) -> None:
        if owner != USER:  # the queue's: it writes its picture
            return
        tuning, self._tuning = self._tuning, False
        self.measure_speed(outcome)
        # A tuning that ended with its look: that is the look before Start now, not a result for the history.
        adopt = self.look.adopt if self.look is not None and tuning and isinstance(outcome.outcome, Finished) else None
        looked = adopt is not None and adopt(outcome)
        entry = self._keep(outcome) if outcome.image is not None and not looked else None
        if tuning and not looked and entry is None:  # stopped or failed: what was shown, not the look's preview
            self.state.show(self.state.shown)
        then, self._then = self._then, None
        if then is not None and entry is not None:
            then(entry)
        previews, self._previews = self._previews, None
        if outcome.error:
            self.feedback.error(outcome.error)
        elif previews is not None and previews.stopped is not None:
            self.feedback.error(previews.stopped[0].upper() + previews.stopped[1:])
        elif previews is not None and previews.path.is_dir():
            self.feedback.info(f"The run's previews are in {previews.path}")
        elif looked:
            self.feedback.info("The look is tuned to the painting and kept: the next photo in it is painted at once")
        if tuning and isinstance(outcome.outcome, Stopped):
            self.display.run_bar.show_text("Tuning stopped — Tune the look goes on from what it learnt")
        elif not looked:  # a look shown has its own words there (``InstantPreview.shown``)
            self.display.run_bar.show_outcome(outcome)
        self.running_weights = None
        self.display.weights_changed()

    def _keep(self, outcome: PictureResult) -> HistoryEntry:
        """A run's picture in the history (kept until exported), shown."""
        assert outcome.image is not None
        label = outcome.weights_label or (self.running_weights[1] if self.running_weights else "")
        entry = HistoryEntry(
            outcome.image,
            outcome.settings,
            label,
            outcome.outcome,
            deep=outcome.deep,
            regions=outcome.regions,
            key=outcome.key if outcome.finished else None,
            inputs=outcome.pictures.files,
        )
        if self.queue.closing:
            self.history.add(entry)  # cut off by closing: its checkpoint keeps it, to be resumed
        else:
            entry = self.kept.add(entry)
        self.state.show(entry)
        return entry

    def measure_speed(self, outcome: PictureResult) -> None:
        """Keep a finished run's speed per pixel, for the next runs' expected time."""
        last, plan = outcome.last, self._running_plan
        self._running_plan = None
        finished = isinstance(outcome.outcome, Finished)
        if not finished or last is None or last.elapsed < 1.0 or plan is None or plan.work <= 0:
            return
        self.store.save_speed(last.elapsed / plan.work, last.compute)
        self.update_needs()
